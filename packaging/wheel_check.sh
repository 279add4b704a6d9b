#!/usr/bin/env bash
# make wheel-check: build the wheel and the sdist, check them, install the wheel into a fresh
# venv outside the source tree and run gpulab from there as a user would.
#
#   packaging/wheel_check.sh PYTHON [DEPS]
#
# PYTHON: the dev venv's interpreter (it has build, twine and check-wheel-contents).
# DEPS:   reuse (default) - the fresh venv gets the wheel with --no-deps, and the dev venv's
#                           site-packages as a .pth entry after its own: gpulab itself comes from
#                           the wheel, its dependencies from the dev venv (no download; what CI runs);
#         full            - pip installs the wheel with gpulab[medical,batch] and every
#                           dependency from the index (what a new user gets; ~2 min warm cache).
# WHEEL_CHECK_DIR: where to work (default: a new folder under /tmp). Kept for inspection.
# WHEEL_CHECK_COMPARE=1: also run the demo from the checkout and compare the two (make wheel-check
#   sets it); WHEEL_CHECK_REFERENCE=DIR compares with an existing demo folder instead.
set -euo pipefail

PY=${1:?usage: wheel_check.sh PYTHON [reuse|full]}
DEPS=${2:-reuse}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=$(cd "$ROOT" && realpath -s "$PY")
WORK=${WHEEL_CHECK_DIR:-$(mktemp -d /tmp/gpulab-wheel-check.XXXXXX)}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
case "$WORK/" in "$ROOT"/*) echo "wheel-check: WHEEL_CHECK_DIR must be outside the source tree"; exit 2;; esac
SECONDS=0
step() { printf '\n== %s (at %d s)\n' "$*" "$SECONDS"; }
fail() { [ -z "${REF_PID:-}" ] || kill "$REF_PID" 2>/dev/null || true; echo "wheel-check: FAILED: $*" >&2; exit 1; }

VERSION=$("$PY" -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' "$ROOT/pyproject.toml")

step "build sdist and wheel (the wheel is built from the sdist) into $WORK/dist"
rm -rf "$WORK/dist"
(cd "$ROOT" && "$PY" -m build --outdir "$WORK/dist" . > "$WORK/build.log" 2>&1) || { tail -30 "$WORK/build.log"; fail "python -m build"; }
WHEEL=$(ls "$WORK"/dist/gpulab-"$VERSION"-py3-none-any.whl)
SDIST=$(ls "$WORK"/dist/gpulab-"$VERSION".tar.gz)
ls -l "$WHEEL" "$SDIST"

step "twine check --strict"
"$PY" -m twine check --strict "$WHEEL" "$SDIST"

step "check-wheel-contents"
# W005 (common top-level name 'app') and W009 (two top-level packages) are known and accepted:
# the repository layout stays; packaging/README.md says what is done about the installed names.
"$PY" -m check_wheel_contents --ignore W005,W009 "$WHEEL"

step "what the wheel and the sdist carry"
"$PY" - "$WHEEL" "$SDIST" "$ROOT" <<'EOF'
import pathlib, sys, tarfile, zipfile
whl, sdist, root = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
names = set(zipfile.ZipFile(whl).namelist())
need = ["app/resources/icons/gpulab.svg", "gpu_kernels/cuda/selftest.cu", "app/cli.py", "app/__main__.py"]
need += [f"app/resources/{p.relative_to(root / 'resources').as_posix()}"
         for p in sorted((root / "resources" / "samples").rglob("*"))
         if p.is_file() and p.suffix != ".py" and "__pycache__" not in p.parts]
need += [f"gpu_kernels/cuda/{p.name}" for p in sorted((root / "gpu_kernels" / "cuda").iterdir())
         if p.suffix in (".cu", ".cuh")]
missing = [n for n in need if n not in names]
if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
    missing.append("*.dist-info/licenses/LICENSE")
bad = [n for n in names if "screenshot-" in n or "/tests/" in n or n.startswith("tests/") or "__pycache__" in n]
top = sorted({n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")})
print(f"wheel: {len(names)} files, top-level: {', '.join(top)}")
sd = {n.split("/", 1)[1] for n in tarfile.open(sdist).getnames() if "/" in n}
sd_need = ["LICENSE", "README.md", "Makefile", "setup.py", "resources/icons/gpulab.svg", "tests/conftest.py",
           "packaging/gpulab.spec", "packaging/linux/org.gpulab.gpulab.desktop", "packaging/linux/org.gpulab.gpulab.metainfo.xml"]
sd_missing = [n for n in sd_need if n not in sd]
print(f"sdist: {len(sd)} files")
if missing or bad or sd_missing or top != ["app", "gpu_kernels"]:
    sys.exit(f"wheel lacks {missing}, carries {bad}, sdist lacks {sd_missing}, top-level {top}")
EOF

step "fresh venv outside the tree: $WORK/venv (deps: $DEPS)"
BASE=$("$PY" -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))')
rm -rf "$WORK/venv"
"$BASE" -m venv "$WORK/venv"
VPY="$WORK/venv/bin/python"
PIPI=("$VPY" -m pip install --quiet --disable-pip-version-check --progress-bar off)
if [ "$DEPS" = full ]; then
  "${PIPI[@]}" "$WHEEL[medical,batch]" > "$WORK/pip.log" 2>&1 || { tail -30 "$WORK/pip.log"; fail "pip install"; }
else
  # the wheel first, with nothing else on the path (pip never sees the dev venv's gpulab)
  "${PIPI[@]}" --no-deps "$WHEEL" > "$WORK/pip.log" 2>&1 || { tail -30 "$WORK/pip.log"; fail "pip install"; }
  DEV_SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  VSITE=$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  # a plain path line, appended after the venv's own site-packages: the dev venv's .pth files
  # (its editable gpulab finder among them) are not run, so 'app' is the wheel's
  echo "$DEV_SITE" > "$VSITE/zz_gpulab_dev_deps.pth"
fi
"$VPY" -m pip check || fail "pip check: the wheel's requirements are not met"

mkdir -p "$WORK/run"
cd "$WORK/run"   # far from the source tree: nothing may come from the checkout
G="$WORK/venv/bin/gpulab"
export QT_QPA_PLATFORM=offscreen MPLBACKEND=Agg GPULAB_DEVICE=cpu

step "where gpulab comes from"
"$VPY" - "$ROOT" "$WORK/venv" <<'EOF'
import importlib.metadata as md, pathlib, sys
root, venv = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2]).resolve()
import app, gpu_kernels
from app.tools.base import resources_dir
from gpu_kernels.backend import cuda_source_names
for what, p in (("app", app.__file__), ("gpu_kernels", gpu_kernels.__file__), ("resources", resources_dir()),
                ("metadata", md.distribution("gpulab")._path)):
    p = pathlib.Path(p).resolve()
    print(f"  {what:12s} {p}")
    if not p.is_relative_to(venv) or p.is_relative_to(root):
        sys.exit(f"{what} is not the installed copy: {p}")
assert len(cuda_source_names()) > 0, "no .cu sources found"
print(f"  {len(cuda_source_names())} CUDA sources, version {app.__version__}")
EOF

step "gpulab --version"
out=$("$G" --version)
echo "$out"
[ "$out" = "gpulab $VERSION" ] || fail "--version says '$out', pyproject.toml says $VERSION"

step "gpulab info"
"$G" info | tee "$WORK/info.txt"
grep -q "scipy: [0-9]" "$WORK/info.txt" || fail "info does not see scipy's version"

REF=${WHEEL_CHECK_REFERENCE:-}
REF_PID=""
if [ -z "$REF" ] && [ "${WHEEL_CHECK_COMPARE:-0}" = 1 ]; then
  # the checkout's demo (warm numba cache: ~45 s) runs beside the installed one, which spends most of its
  # ~130 s compiling numba's kernels from an empty cache on one core; both still run in full, in their own
  # folders, and are compared below
  step "gpulab demo from the checkout (python -m app in $ROOT), for comparison, in the background"
  REF="$WORK/checkout-demo"
  (cd "$ROOT" && exec "$PY" -m app demo --out "$REF" --quiet > "$WORK/checkout-demo.log" 2>&1) &
  REF_PID=$!
fi

step "gpulab demo --out $WORK/run/demo"
"$G" demo --out "$WORK/run/demo" --quiet > "$WORK/demo.log" 2>&1 || { cat "$WORK/demo.log"; fail "gpulab demo"; }
tail -1 "$WORK/demo.log"

step "one command per tool on the installed samples"
S=$("$VPY" -c 'from app.tools.base import resources_dir; print(resources_dir() / "samples")')
O="$WORK/run/tools"
mkdir -p "$O"
set -x
"$G" mesh-seg "$S/dumbbell.ply" --k 3 -o "$O/dumbbell-parts.ply" --quiet
"$G" flow "$S/flow/frame1.png" "$S/flow/frame2.png" --method lk -o "$O/flow.flo" --color "$O/flow.png" --quiet
"$G" echo "$S/echo/lv_synthetic.npz" --frames 0 1 --levels 2 -o "$O/echo.npy" --quiet
"$G" mvs "$S/mvs/synth_par.txt" --views 0 --neighbors 3 --min-views 2 --max-iter 2 -o "$O/mvs" --quiet
"$G" imseg "$S/imseg/coffee.jpg" -o "$O/coffee-labels.png" --quiet
set +x
for f in dumbbell-parts.ply flow.flo flow.png echo.npy coffee-labels.png; do
  [ -s "$O/$f" ] || fail "$f was not written"
done
ls "$O/mvs" | grep -q depth || fail "mvs wrote no depth map"

if [ -n "$REF_PID" ]; then
  step "the checkout's demo, started beside the installed one: waiting for it"
  rc=0; wait "$REF_PID" || rc=$?
  REF_PID=""
  [ "$rc" = 0 ] || { cat "$WORK/checkout-demo.log"; fail "gpulab demo from the checkout"; }
fi
if [ -n "$REF" ]; then
  step "compare the installed demo with the checkout's"
  "$VPY" "$ROOT/packaging/compare_outputs.py" "$REF" "$WORK/run/demo" || fail "the installed demo differs from the checkout's"
fi

step "wheel-check passed (wheel $(du -k "$WHEEL" | cut -f1) KB, sdist $(du -k "$SDIST" | cut -f1) KB; work folder $WORK)"
