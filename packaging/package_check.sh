#!/usr/bin/env bash
# make package-check: unpack the bundle archive into a temporary folder and run it as a user
# would, under Xvfb.
#
#   packaging/package_check.sh ARCHIVE REFERENCE_GPULAB
#
# REFERENCE_GPULAB is an installed package's `gpulab` built from the same source as the bundle
# (make package-check passes the build venv's): its demo is compared with the frozen one. Checks the version, `info` (library metadata), `demo`, `mesh-seg` through the
# multi-process shortest paths (freeze_support), echo on MetaImage volumes (SimpleITK), the window
# (time to the first window, a screenshot), Help > About (what it says about the install and the
# compute device: "with CuPy ..."/"CPU only", and for a CUDA bundle on a machine without a GPU,
# "CPU (NumPy)" and why) and install.sh / --uninstall into a scratch HOME. Prints the archive size.
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
  grep -qi "$lib: [0-9]" "$WORK/info.txt" || fail "info does not see $lib's version"
done
case "$NAME" in
  *-cuda1[0-9])
    CUDA_BUNDLE=1
    grep -q "cupy: [0-9]" "$WORK/info.txt" || fail "a CUDA bundle whose info does not see CuPy"
    if GPU=$(nvidia-smi -L 2>/dev/null | head -n1) && [ -n "$GPU" ]; then
      echo "   this machine has a GPU ($GPU): the bundle should use it"
    else
      # no driver here: the bundle must say so and run on NumPy
      grep -q "CUDA: " "$WORK/info.txt" || fail "no GPU here, and info gives no reason for the NumPy path"
      echo "   no GPU on this machine: $(grep -m1 "CUDA: " "$WORK/info.txt" | sed 's/^ *//')"
    fi ;;
  *) CUDA_BUNDLE=0
     if grep -q "cupy: [0-9]" "$WORK/info.txt"; then fail "a CPU-only bundle that carries CuPy"; fi ;;
esac

if [ "$CUDA_BUNDLE" = 1 ]; then
  step "inside the frozen app: CuPy imports, the CUDA libraries come from the bundle, its NVRTC compiles gpulab's kernels"
  # PyInstaller's multiprocessing hook runs a `-c` line that starts with this import (with the
  # interpreter flags multiprocessing passes): the one way to run a script inside the frozen app
  "$G" -B -S -I -c "from multiprocessing.forkserver import main; import runpy, sys; sys.argv = ['probe']; \
runpy.run_path('$ROOT/packaging/cuda_bundle_probe.py', run_name='__main__')" > "$WORK/cuda-probe.log" 2>&1 \
    || { cat "$WORK/cuda-probe.log"; fail "CuPy / CUDA libraries / NVRTC inside the frozen app"; }
  sed 's/^/   /' "$WORK/cuda-probe.log"
fi

step "gpulab mesh-seg on the bundled creature, shortest paths in worker processes (--apsp cpu-mt)"
S="$APP/_internal/app/resources/samples"
"$G" --device cpu mesh-seg "$S/creature.ply" --apsp cpu-mt -o "$WORK/run/creature-parts.ply" --quiet \
  > "$WORK/mesh.log" 2>&1 || { cat "$WORK/mesh.log"; fail "mesh-seg"; }
[ -s "$WORK/run/creature-parts.ply" ] || fail "mesh-seg wrote nothing"
grep -E "part|device" "$WORK/mesh.log" | head -3

step "gpulab echo on two MetaImage volumes (SimpleITK, the [medical] extra, is in the bundle)"
"$(dirname "$REF_G")/python" - "$WORK/run" <<'PYEOF'
import sys, numpy as np, SimpleITK as sitk
z, y, x = np.mgrid[:24, :24, :24]
for name, cx in (("fixed", 12), ("moving", 13)):
    a = np.exp(-((x - cx) ** 2 + (y - 12) ** 2 + (z - 12) ** 2) / 30.0).astype(np.float32)
    sitk.WriteImage(sitk.GetImageFromArray(a), f"{sys.argv[1]}/{name}.mha")
PYEOF
E=(--device cpu echo "$WORK/run/fixed.mha" "$WORK/run/moving.mha" --levels 1 --iters 5 --quiet)
"$G" "${E[@]}" -o "$WORK/run/echo-frozen.npy" > "$WORK/echo.log" 2>&1 || { cat "$WORK/echo.log"; fail "frozen echo on .mha"; }
"$REF_G" "${E[@]}" -o "$WORK/run/echo-ref.npy" > "$WORK/echo-ref.log" 2>&1 || { cat "$WORK/echo-ref.log"; fail "installed echo on .mha"; }
"$(dirname "$REF_G")/python" -c "import numpy as np, sys; a, b = np.load(sys.argv[1]), np.load(sys.argv[2]); \
sys.exit(0 if a.shape == b.shape and np.allclose(a, b, atol=1e-4) else 'frozen and installed echo differ')" \
  "$WORK/run/echo-frozen.npy" "$WORK/run/echo-ref.npy" || fail "echo on .mha differs"
grep -m1 "frames of" "$WORK/echo.log" | sed 's/^/   /'

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

step "Help > About in the frozen window (keyboard, under Xvfb): what it says about the install"
# a scratch HOME: the window's saved settings and matplotlib's cache are not the user's
HOME="$WORK/about-home" XDG_CONFIG_HOME="$WORK/about-home/.config" XDG_CACHE_HOME="$WORK/about-home/.cache" \
  "$ROOT/packaging/about_check.sh" "$G" "$WORK/about" || fail "the About box"
A="$WORK/about/about.txt"
grep -q "^Installed as: stand-alone bundle, " "$A" || fail "the frozen About box does not say 'stand-alone bundle'"
if [ "$CUDA_BUNDLE" = 1 ]; then
  grep -q "^Installed as: stand-alone bundle, with CuPy [0-9]" "$A" || fail "a CUDA bundle's About box does not name CuPy"
  if [ -n "${GPU:-}" ]; then
    grep -q "^Compute device: CPU" "$A" && fail "a GPU is here ($GPU) but the About box says CPU"
  else
    grep -q "^Compute device: CPU (NumPy)" "$A" || fail "no GPU here, but the About box does not say CPU (NumPy)"
    grep -q "^CUDA: ." "$A" || fail "the About box gives no reason for the NumPy path"
  fi
else
  grep -q "^Installed as: stand-alone bundle, CPU only (no CuPy)" "$A" || fail "a CPU bundle's About box"
fi
grep -E "^(Compute device|CUDA|Installed as):" "$A" | sed 's/^/   /'

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
