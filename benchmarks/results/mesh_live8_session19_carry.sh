#!/bin/bash
# mesh-live8, session 19: build .carry-ml8 (ignored: .carry* in .git/info/exclude) for
# benchmarks/results/mesh_live8_session19_call1.sh, from the repo root:
#   bash benchmarks/results/mesh_live8_session19_carry.sh OLD_REV NEW_REV [CARRY_DIR, default .carry-ml8]
# (the lead's final call of session 19 used it with .carry-lead19)
# No Qt (the k edit is timed through the stage cache, without the tab). It holds:
# - old.tar.xz / new.tar.xz: git archive of the two revisions (app, gpu_kernels, benchmarks/*.py, the mesh tests, the
#   CUDA emulator, conftest);
# - pml.tar.xz and the fast_simplification cp312 wheel (session 18's .carry-ml7, from mesh_round_carry.sh): the
#   default path's simplifiers, as the SHA-1s 2130b3899191 / 60c9acbd633f were recorded with;
# - pytest-xdist + execnet (pure Python) for -n 4; data/psb/off/101.off and data/281.off.xz.
set -euo pipefail
OLD=$1 NEW=$2
C=${3:-.carry-ml8}
mkdir -p $C/data/psb/off
cp ../shared/data/psb/off/101.off $C/data/psb/off/
cp .carry-ml7/pml.tar.xz .carry-ml7/fast_simplification-*.whl $C/
P="app gpu_kernels :(glob)benchmarks/*.py tests/conftest.py tests/mesh tests/framework/fuzz_summary.py
   tests/framework/fuzz_report.py tests/cuda_emu tests/gui_helpers.py tests/_gui_helpers.py pyproject.toml"
xz -9 -c ../shared/data/psb/off/281.off > $C/data/281.off.xz
git archive $OLD $P | xz -9e > $C/old.tar.xz
git archive $NEW $P | xz -9e > $C/new.tar.xz
echo "old $(git rev-parse $OLD)" > $C/old.rev
echo "new $(git rev-parse $NEW)" > $C/new.rev
S=.venv/lib/python3.11/site-packages; X=$(mktemp -d)
cp -r $S/xdist $S/execnet $S/pytest_xdist-*.dist-info $S/execnet-*.dist-info $X/
find $X -name __pycache__ -prune -exec rm -rf {} +; tar -cJf $C/xdist.tar.xz -C $X .; rm -rf $X
du -sh $C/*; du -sh $C
