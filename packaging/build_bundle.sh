#!/usr/bin/env bash
# make package: the stand-alone gpulab folder (PyInstaller) and its archive.
#
#   packaging/build_bundle.sh BUILD_VENV CUDA_EXTRA
#
# BUILD_VENV has gpulab (not editable), its dependencies and pyinstaller installed (the
# Makefile makes it). CUDA_EXTRA is none, cuda12 or cuda13: only the archive's name follows
# it; CuPy goes in when the venv has it. Writes dist/gpulab-VERSION-linux-x86_64[-cudaNN].tar.gz
# and prints the sizes and what is largest.
set -euo pipefail

VENV=${1:?usage: build_bundle.sh BUILD_VENV CUDA_EXTRA}
EXTRA=${2:-none}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PY="$VENV/bin/python"
VERSION=$("$PY" -c 'import importlib.metadata as m; print(m.version("gpulab"))')
WANT=$("$PY" -c 'import sys, tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')
[ "$VERSION" = "$WANT" ] || { echo "build venv has gpulab $VERSION, pyproject.toml says $WANT"; exit 1; }
SUFFIX=$([ "$EXTRA" = none ] && echo "" || echo "-$EXTRA")
NAME="gpulab-$VERSION-linux-x86_64$SUFFIX"
B="$ROOT/build/package"
STAGE="$B/$NAME"
SECONDS=0

echo "== PyInstaller ($("$PY" -m PyInstaller --version)) -> $B/dist/gpulab"
rm -rf "$B/dist" "$STAGE"
mkdir -p "$B"
"$PY" -m PyInstaller packaging/gpulab.spec --noconfirm --log-level WARN \
  --distpath "$B/dist" --workpath "$B/work" > "$B/pyinstaller.log" 2>&1 \
  || { tail -40 "$B/pyinstaller.log"; echo "PyInstaller failed (log: $B/pyinstaller.log)"; exit 1; }
echo "   built in ${SECONDS} s"

echo "== stage $STAGE"
mkdir -p "$STAGE/share/applications" "$STAGE/share/metainfo" "$STAGE/share/mime/packages" "$STAGE/share/icons"
mv "$B/dist/gpulab" "$STAGE/gpulab"
cp packaging/linux/org.gpulab.gpulab.desktop "$STAGE/share/applications/"
cp packaging/linux/org.gpulab.gpulab.metainfo.xml "$STAGE/share/metainfo/"
cp packaging/linux/org.gpulab.gpulab-mime.xml "$STAGE/share/mime/packages/org.gpulab.gpulab.xml"
cp -R resources/icons/hicolor "$STAGE/share/icons/"
mkdir -p "$STAGE/share/icons/hicolor/scalable/apps"
cp resources/icons/gpulab.svg "$STAGE/share/icons/hicolor/scalable/apps/org.gpulab.gpulab.svg"
cp packaging/linux/install.sh "$STAGE/install.sh"
chmod +x "$STAGE/install.sh"
cp LICENSE "$STAGE/"
echo "$VERSION" > "$STAGE/VERSION"
cat > "$STAGE/README.txt" <<EOF
gpulab $VERSION, stand-alone for Linux x86_64$( [ "$EXTRA" = none ] && echo " (CPU only: NumPy)" || echo " with CuPy for ${EXTRA/cuda/CUDA } (the GPU is used when the NVIDIA driver supports it, NumPy otherwise)").

  ./install.sh              install for this user: menu entry, icons, file types, ~/.local/bin/gpulab
  ./install.sh --uninstall  remove it again
  ./gpulab/gpulab           or run it in place without installing (gpulab --help for the commands)

gpulab demo --out DIR runs every tool on the bundled samples. MIT licence (LICENSE); the
libraries in gpulab/_internal keep their own licences.
EOF

echo "== replace duplicate files in the bundle by symbolic links"
"$PY" packaging/dedupe.py "$STAGE/gpulab"

echo "== archive"
mkdir -p dist
rm -f "dist/$NAME.tar.gz"
tar -C "$B" -cf - "$NAME" | gzip -6 > "dist/$NAME.tar.gz"
du -sh "$STAGE" | sed 's/^/   folder  /'
du -h "dist/$NAME.tar.gz" | sed 's/^/   archive /'
echo "== largest in the bundle (MB on disk)"
(cd "$STAGE/gpulab/_internal" && du -s --block-size=1M -- * | sort -rn | head -15)
echo "== done in ${SECONDS} s: dist/$NAME.tar.gz"
