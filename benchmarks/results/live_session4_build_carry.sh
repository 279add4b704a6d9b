#!/bin/bash
# Build .carry-live/ (ignored by git: /.carry-live/ in .git/info/exclude): a slim offscreen
# PySide6 6.11 (abi3 .so files, so the venv's 3.11 wheels run on the device's Python 3.12) with
# pyqtgraph, the non-glibc system libraries Qt needs (the device's own copies are used where it
# has them: see setup.sh), one font, and the full-size inputs of benchmarks/live.py that live in
# ../shared (the 17k-face PSB mesh 101.off and templeSparseRing). Run from the repo root, on
# x86-64 Debian 12 (glibc 2.36, older than the device's 2.39).
#   bash benchmarks/results/live_session4_build_carry.sh
# then on the device:  source .carry-live/setup.sh && python3 benchmarks/live.py --device cuda \
#   --data .carry-live/data --mvs-views 0 --json $OUT/live_gpu.json
set -euo pipefail
S=.venv/lib/python3.11/site-packages
ST=$(mktemp -d)
mkdir -p $ST/site/PySide6/Qt/lib $ST/site/PySide6/Qt/plugins/platforms $ST/site/PySide6/Qt/plugins/imageformats \
         $ST/lib $ST/fonts
cp $S/PySide6/{__init__.py,_config.py,_git_pyside_version.py,libpyside6.abi3.so.6.11} $ST/site/PySide6/
cp -r $S/PySide6/support $ST/site/PySide6/
# QtOpenGL(+Widgets): pyqtgraph imports QtOpenGL at import time
for m in QtCore QtGui QtWidgets QtOpenGL QtOpenGLWidgets QtSvg; do cp $S/PySide6/$m.abi3.so $ST/site/PySide6/; done
for l in Core Gui Widgets OpenGL OpenGLWidgets Svg DBus; do cp $S/PySide6/Qt/lib/libQt6$l.so.6 $ST/site/PySide6/Qt/lib/; done
cp $S/PySide6/Qt/lib/libicu*.so.73 $ST/site/PySide6/Qt/lib/
cp $S/PySide6/Qt/plugins/platforms/libqoffscreen.so $ST/site/PySide6/Qt/plugins/platforms/
cp $S/PySide6/Qt/plugins/imageformats/{libqsvg,libqjpeg,libqgif,libqico}.so $ST/site/PySide6/Qt/plugins/imageformats/
cp -r $S/shiboken6 $S/pyqtgraph $ST/site/
rm -rf $ST/site/shiboken6/include $ST/site/pyqtgraph/examples $ST/site/pyqtgraph/tests
find $ST -name __pycache__ -prune -exec rm -rf {} +
find $ST -name "*.pyi" -delete
# every library outside glibc/libstdc++/libgcc that the Qt libraries and plugins need (ldd closure)
for l in libEGL.so.1 libGL.so.1 libGLX.so.0 libGLdispatch.so.0 libX11.so.6 libXau.so.6 libXdmcp.so.6 \
         libbrotlicommon.so.1 libbrotlidec.so.1 libbsd.so.0 libdbus-1.so.3 libexpat.so.1 libfontconfig.so.1 \
         libfreetype.so.6 libgcrypt.so.20 libglib-2.0.so.0 libgpg-error.so.0 libgthread-2.0.so.0 liblz4.so.1 \
         liblzma.so.5 libpcre2-8.so.0 libpng16.so.16 libsystemd.so.0 libxcb.so.1 libxkbcommon.so.0 libzstd.so.1 \
         libmd.so.0 libcap.so.2; do
  cp -L /lib/x86_64-linux-gnu/$l $ST/lib/
done
cp /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf /usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf $ST/fonts/
cat > $ST/fonts.conf <<'XML'
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <dir prefix="relative">fonts</dir>
  <cachedir>/tmp/qtcarry-fc-cache</cachedir>
  <config></config>
</fontconfig>
XML
mkdir -p .carry-live/data/psb/off .carry-live/data/middlebury-mvs
tar -cJf .carry-live/qt.tar.xz -C $ST .
cp benchmarks/results/live_session4_setup.sh .carry-live/setup.sh
cp ../shared/data/psb/off/101.off .carry-live/data/psb/off/
cp -r ../shared/data/middlebury-mvs/templeSparseRing .carry-live/data/middlebury-mvs/
rm -rf $ST
du -sh .carry-live/*
