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
PY=$(realpath -s "$VENV")/bin/python
B="$ROOT/build/package"
SECONDS=0
mkdir -p "$B"
# PACKAGE_FROM=REV (e.g. HEAD) builds from a clean `git archive REV` instead of the working tree
# (what a release should do; and in a tree others are editing, a consistent snapshot)
if [ -n "${PACKAGE_FROM:-}" ]; then
  SRC="$B/src"
  rm -rf "$SRC"
  mkdir -p "$SRC"
  git -C "$ROOT" archive "$PACKAGE_FROM" | tar -x -C "$SRC"
  echo "== building from $PACKAGE_FROM ($(git -C "$ROOT" rev-parse --short "$PACKAGE_FROM")) exported to $SRC"
else
  SRC="$ROOT"
fi
cd "$SRC"
# gpulab itself, not editable, from this source: its metadata is what the bundle's `info` reads
"$PY" -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall "$SRC" \
  > "$B/pip-gpulab.log" 2>&1 || { cat "$B/pip-gpulab.log"; exit 1; }
VERSION=$("$PY" -c 'import importlib.metadata as m; print(m.version("gpulab"))')
WANT=$("$PY" -c 'import sys, tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')
[ "$VERSION" = "$WANT" ] || { echo "build venv has gpulab $VERSION, pyproject.toml says $WANT"; exit 1; }
SUFFIX=$([ "$EXTRA" = none ] && echo "" || echo "-$EXTRA")
NAME="gpulab-$VERSION-linux-x86_64$SUFFIX"
STAGE="$B/$NAME"

echo "== PyInstaller ($("$PY" -m PyInstaller --version)) -> $B/dist/gpulab"
rm -rf "$B/dist" "$STAGE"
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

echo "== leave out what gpulab never loads"
# pymeshlab ships every MeshLab plugin with its libraries. gpulab reads meshes and decimates them;
# these serve ray-traced ambient occlusion (Embree, 44 MB), E57 scans (Xerces + a second ICU, 35 MB)
# and U3D export, and libIDTF.a is a static archive nobody loads at run time.
PML="$STAGE/gpulab/_internal/pymeshlab/lib"
if [ -d "$PML" ]; then
  for f in plugins/libfilter_embree.so 'libembree4.so*' plugins/libio_e57.so 'libE57Format.so*' \
           'libxerces-c*.so*' 'libicudata.so.70*' 'libicuuc.so.70*' 'libicui18n.so.70*' \
           plugins/libio_u3d.so 'libIFXCore.so*' 'libIFXExporting.so*' 'libIFXScheduling.so*' 'libIDTF.a'; do
    for g in "$PML"/$f; do [ -e "$g" ] || [ -L "$g" ] && rm -f "$g" && echo "   - pymeshlab/lib/${g#"$PML"/}"; done
  done
fi
# nothing left may need what went: every ELF file's libraries must still be found
"$PY" - "$STAGE/gpulab/_internal/pymeshlab/lib" <<'PYEOF'
import pathlib, subprocess, sys
lib = pathlib.Path(sys.argv[1])
if lib.is_dir():
    have = {p.name for p in lib.rglob("*")}
    gone = ("libembree4", "libE57Format", "libxerces-c", "libicudata.so.70", "libicuuc.so.70", "libIFX")
    bad = []
    for p in lib.rglob("*.so*"):
        out = subprocess.run(["readelf", "-d", str(p)], capture_output=True, text=True).stdout
        bad += [f"{p.name} needs {n}" for n in gone if f"[{n}" in out and not any(h.startswith(n) for h in have)]
    if bad:
        sys.exit("pruned libraries still needed: " + "; ".join(bad))
PYEOF

# many wheels keep their symbol tables and debug sections (VTK's libvtkCommonCore.so: 98 MB,
# 61 MB stripped; libpython 23 -> 6 MB). The dynamic symbols stay, so loading is unchanged;
# strip_libs.py dlopens every library before and after and puts back any that no longer loads
# (auditwheel's patchelf-edited OpenBLAS does not survive a strip)
echo "== strip symbol tables and debug sections"
before=$(du -sm "$STAGE/gpulab/_internal" | cut -f1)
"$PY" packaging/strip_libs.py "$STAGE/gpulab/_internal"
echo "   _internal: $before -> $(du -sm "$STAGE/gpulab/_internal" | cut -f1) MB"

echo "== replace duplicate files in the bundle by symbolic links"
"$PY" packaging/dedupe.py "$STAGE/gpulab"

echo "== archive"
mkdir -p "$ROOT/dist"
OUT="$ROOT/dist/$NAME.tar.gz"
rm -f "$OUT"
tar -C "$B" -cf - "$NAME" | gzip "-${GZIP_LEVEL:-9}" > "$OUT.part"
mv "$OUT.part" "$OUT"
du -sh "$STAGE" | sed 's/^/   folder  /'
echo "   archive $(du -h "$OUT" | cut -f1) ($(stat -c %s "$OUT") bytes)"
echo "== largest in the bundle (MB on disk)"
(cd "$STAGE/gpulab/_internal" && du -s --block-size=1M -- * | sort -rn | head -15)
echo "== done in ${SECONDS} s: $OUT"
