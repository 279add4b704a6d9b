#!/bin/bash
# mesh-live7, session 18: build .carry-ml7 (ignored: .carry* in .git/info/exclude) for
# benchmarks/results/mesh_live7_session18_call1.sh, from the repo root:
#   bash benchmarks/results/mesh_live7_session18_carry.sh OLD_REV NEW_REV      (call 5: 67ab891 $(git rev-parse HEAD))
# WITH_TESTS=1 (call 1): the archives also hold the mesh tests and all of benchmarks/*.py, and pytest-xdist comes
# along; without it (calls 4-5) the archives hold what live.py and mesh_e2e_session10.py need, and 281.off.xz
# - qt.tar.xz + setup.sh: benchmarks/results/live_session4_build_carry.sh's slim PySide6 cut down to what the mesh
#   tab alone imports (no pyqtgraph, QtOpenGL, QtSvg, image plugins; ICU's locale data replaced by ICU's empty stub
#   data, as mesh_round_carry.sh does for pymeshlab; the system libraries the device has, per session 4-17 logs,
#   left out; binaries stripped): 14.2 MiB;
# - pml.tar.xz and the fast_simplification cp312 wheel: benchmarks/mesh_round_carry.sh's (copied from .carry-mq10);
# - old.tar.xz / new.tar.xz: git archive of the two revisions (app, gpu_kernels, benchmarks/live.py, the mesh tests);
# - data/psb/off/101.off.
set -euo pipefail
OLD=$1 NEW=$2
C=.carry-ml7
mkdir -p $C/data/psb/off
[ -f $C/qt.tar.xz ] || { echo "build qt.tar.xz first (see the header)"; exit 1; }
cp benchmarks/results/live_session4_setup.sh $C/setup.sh
cp ../shared/data/psb/off/101.off $C/data/psb/off/
cp .carry-mq10/pml.tar.xz .carry-mq10/fast_simplification-*.whl $C/
P="app gpu_kernels benchmarks/live.py benchmarks/mesh_e2e_session10.py pyproject.toml"
[ -n "${WITH_TESTS:-}" ] && P="app gpu_kernels :(glob)benchmarks/*.py tests/conftest.py tests/mesh
   tests/framework/fuzz_summary.py tests/framework/fuzz_report.py tests/cuda_emu tests/gui_helpers.py tests/_gui_helpers.py
   pyproject.toml"
xz -9 -c ../shared/data/psb/off/281.off > $C/data/281.off.xz
git archive $OLD $P | xz -9e > $C/old.tar.xz
git archive $NEW $P | xz -9e > $C/new.tar.xz
echo "old $(git rev-parse $OLD)" > $C/old.rev
echo "new $(git rev-parse $NEW)" > $C/new.rev
rm -f $C/xdist.tar.xz
if [ -n "${WITH_TESTS:-}" ]; then
  S=.venv/lib/python3.11/site-packages; X=$(mktemp -d)   # pytest-xdist + execnet (pure Python) for -n 4
  cp -r $S/xdist $S/execnet $S/pytest_xdist-*.dist-info $S/execnet-*.dist-info $X/
  find $X -name __pycache__ -prune -exec rm -rf {} +; tar -cJf $C/xdist.tar.xz -C $X .; rm -rf $X
fi
du -sh $C/*; du -sh $C
