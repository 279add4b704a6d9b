#!/usr/bin/env bash
# make package-check: unpack the bundle archive into a temporary folder and run it as a user
# would, under Xvfb.
#
#   packaging/package_check.sh ARCHIVE REFERENCE_GPULAB
#
# REFERENCE_GPULAB is an installed package's `gpulab` built from the same source as the bundle
# (make package-check passes the build venv's): its demo is compared with the frozen one. Checks the version, `info` (library metadata), `demo`, `mesh-seg` through the
# multi-process shortest paths (freeze_support), the window (time to the first window, a
# screenshot) and install.sh / --uninstall into a scratch HOME. Prints the archive size.
# PACKAGE_CHECK_DIR: where to work (default: a new folder under /tmp; kept for inspection).
set -euo pipefail

ARCHIVE=$(realpath "${1:?usage: package_check.sh ARCHIVE REFERENCE_GPULAB}")
REF_G=$(realpath -s "${2:?usage: package_check.sh ARCHIVE REFERENCE_GPULAB}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${PACKAGE_CHECK_DIR:-$(mktemp -d /tmp/gpulab-package-check.XXXXXX)}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
SECONDS=0
step() { printf '\n== %s (at %d s)\n' "$*" "$SECONDS"; }
fail() { echo "package-check: FAILED: $*" >&2; exit 1; }
VERSION=$(sed -n 's/^version *= *"\(.*\)"/\1/p' "$ROOT/pyproject.toml" | head -n1)
NAME=$(basename "$ARCHIVE" .tar.gz)
XVFB=(xvfb-run -a -s "-screen 0 1400x900x24")
command -v xvfb-run >/dev/null || fail "xvfb-run is missing (make xvfb-deps)"

step "unpack $(basename "$ARCHIVE") ($(du -h "$ARCHIVE" | cut -f1)) into $WORK"
rm -rf "${WORK:?}/$NAME"
T0=$(date +%s.%N)
tar -C "$WORK" -xzf "$ARCHIVE"
echo "   unpacked in $(python3 -c "import time; print(f'{time.time() - $T0:.1f}')") s, $(du -sh "$WORK/$NAME" | cut -f1) on disk"
APP="$WORK/$NAME/gpulab"
G="$APP/gpulab"
[ -x "$G" ] && [ -x "$WORK/$NAME/install.sh" ] || fail "the archive lacks gpulab/gpulab or install.sh"
mkdir -p "$WORK/run"
cd "$WORK/run"
export GPULAB_DEVICE=${GPULAB_DEVICE:-auto}

step "gpulab --version (first start of the frozen app)"
T0=$(date +%s.%N)
out=$("$G" --version)
echo "   $out ($(python3 -c "import time; print(f'{time.time() - $T0:.2f}')") s)"
[ "$out" = "gpulab $VERSION" ] || fail "--version says '$out', pyproject.toml says $VERSION"

step "gpulab info (library versions come from the bundled metadata)"
"$G" info | tee "$WORK/info.txt"
for lib in numpy scipy vtk pyvista pymeshlab scikit-image; do
  grep -q "$lib: [0-9]" "$WORK/info.txt" || fail "info does not see $lib's version"
done

step "gpulab mesh-seg on the bundled creature, shortest paths in worker processes (--apsp cpu-mt)"
S="$APP/_internal/app/resources/samples"
"$G" --device cpu mesh-seg "$S/creature.ply" --apsp cpu-mt -o "$WORK/run/creature-parts.ply" --quiet \
  > "$WORK/mesh.log" 2>&1 || { cat "$WORK/mesh.log"; fail "mesh-seg"; }
[ -s "$WORK/run/creature-parts.ply" ] || fail "mesh-seg wrote nothing"
grep -E "part|device" "$WORK/mesh.log" | head -3

step "gpulab demo --out DIR, frozen and from the installed package ($REF_G), compared"
T0=$(date +%s.%N)
# under Xvfb, with -v: the mesh pictures go through VTK's OpenGL, and a fallback would be logged
"${XVFB[@]}" "$G" -v --device cpu demo --out "$WORK/run/demo" --quiet > "$WORK/demo.log" 2>&1 \
  || { cat "$WORK/demo.log"; fail "frozen demo"; }
echo "   frozen demo: $(grep "^gpulab demo:" "$WORK/demo.log" | tail -1) ($(python3 -c "import time; print(f'{time.time() - $T0:.0f}')") s)"
"$REF_G" --device cpu demo --out "$WORK/ref-demo" --quiet > "$WORK/ref-demo.log" 2>&1 \
  || { cat "$WORK/ref-demo.log"; fail "the installed package's demo"; }
"$(dirname "$REF_G")/python" "$ROOT/packaging/compare_outputs.py" "$WORK/ref-demo" "$WORK/run/demo" \
  || fail "the frozen demo differs from the installed package's"

step "the window under Xvfb: time to the first window"
for i in 1 2; do
  T0=$(date +%s.%N)
  "${XVFB[@]}" env QT_QPA_PLATFORM=xcb "$G" --screenshot "$WORK/first-window-$i.png" --screenshot-delay 0 \
    > "$WORK/window-$i.log" 2>&1 || { cat "$WORK/window-$i.log"; fail "the window did not open"; }
  echo "   run $i: start, first window shown and grabbed, quit: $(python3 -c "import time; print(f'{time.time() - $T0:.1f}')") s (Xvfb start included)"
done
"${XVFB[@]}" env QT_QPA_PLATFORM=xcb "$G" --samples --tab mesh-seg --run --screenshot "$WORK/window-samples.png" \
  --screenshot-delay 3000 > "$WORK/window-samples.log" 2>&1 || { cat "$WORK/window-samples.log"; fail "the window with the samples"; }
[ -s "$WORK/window-samples.png" ] || fail "no screenshot"
# a module the freezing missed shows as a warning, not a crash (the 3-D views fall back to a
# picture; the demo's mesh pictures to a rasteriser): any such line fails the check
if grep -H -E "No module named|unavailable|Traceback|ImportError|rendering failed" "$WORK"/mesh.log "$WORK"/demo.log "$WORK"/window-*.log; then
  fail "the frozen app misses a module (above)"
fi

step "install.sh into a scratch HOME, then --uninstall"
H="$WORK/home"
rm -rf "$H"
mkdir -p "$H"
HOME="$H" XDG_DATA_HOME="$H/.local/share" "$WORK/$NAME/install.sh" > "$WORK/install.log" || { cat "$WORK/install.log"; fail "install.sh"; }
cat "$WORK/install.log"
D="$H/.local/share/applications/org.gpulab.gpulab.desktop"
[ -f "$D" ] || fail "no menu entry"
for n in 16 32 48 64 128 256 512; do
  [ -f "$H/.local/share/icons/hicolor/${n}x${n}/apps/org.gpulab.gpulab.png" ] || fail "no ${n}px icon"
done
[ -f "$H/.local/share/icons/hicolor/scalable/apps/org.gpulab.gpulab.svg" ] || fail "no scalable icon"
[ -f "$H/.local/share/metainfo/org.gpulab.gpulab.metainfo.xml" ] || fail "no AppStream file"
if command -v desktop-file-validate >/dev/null; then desktop-file-validate "$D" || fail "installed .desktop invalid"; fi
if command -v appstreamcli >/dev/null; then
  appstreamcli validate --no-net "$H/.local/share/metainfo/org.gpulab.gpulab.metainfo.xml" || fail "AppStream invalid"
fi
EXEC=$(sed -n 's/^Exec=//p' "$D")
echo "   Exec=$EXEC"
# start it the way a menu does: the Exec line of the installed entry, with no arguments
CMD=$(echo "$EXEC" | sed 's/ %F$//; s/^"\(.*\)"$/\1/')
"$CMD" --version | grep -qx "gpulab $VERSION" || fail "the installed entry's Exec does not run gpulab"
"$H/.local/bin/gpulab" --version | grep -qx "gpulab $VERSION" || fail "~/.local/bin/gpulab does not run"
HOME="$H" "$WORK/$NAME/install.sh" --uninstall || fail "install.sh --uninstall"
left=$(find "$H/.local" -type f | grep -v -E "/mime/[^/]+$|mimeinfo.cache|icon-theme.cache" || true)
[ -z "$left" ] || fail "--uninstall left: $left"

step "package-check passed: $(basename "$ARCHIVE") $(du -h "$ARCHIVE" | cut -f1) ($(stat -c %s "$ARCHIVE") bytes), unpacked $(du -sh "$WORK/$NAME" | cut -f1); screenshots in $WORK"
