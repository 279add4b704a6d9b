# SOURCED (bash) by a device call's script, from the repo root (session 23): the parts every lead call repeated
# (sessions 19-22's call scripts each carry their own copy; they are records of calls already run and stay as run).
#
#     source benchmarks/device_env.sh
#     device_header FILE          # the device, the date, the cores, the packages and the tree's content hash
#     simplifiers CARRY           # fast_simplification, pymeshlab (the device's own shared libraries preferred) and
#                                 # pytest-xdist from a carry built like mesh_live8_session19_carry.sh's
#     gpu_tests LOG [PATHS...]    # pytest -m gpu on the device's copy of the tree (-n 4), its summary printed
#
# The tree's content hash (`tree_hash`: SHA-1 of the sorted SHA-1 lines of the tracked Python files of gpu_kernels/
# and app/) identifies the code that ran: the device copy's `git log` may print a stale HEAD (sessions 21-22). The
# same command on the development machine gives the hash of a commit (`git stash`-free: run it on a clean checkout).

tree_hash() {
  find gpu_kernels app -name '*.py' -not -path '*/__pycache__/*' | LC_ALL=C sort | xargs sha1sum | sha1sum | cut -c1-12
}

device_header() {  # FILE
  { nvidia-smi --query-gpu=name,pstate,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader 2>/dev/null
    date -u; echo "cores $(nproc --all)"
    python3 -c "import numpy, scipy, numba; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__)"
    python3 -c "import cupy; print('cupy', cupy.__version__)" 2>/dev/null || echo "cupy: none"
    echo "tree (gpu_kernels + app) $(tree_hash)"; } 2>&1 | tee "$1"
}

simplifiers() {  # CARRY
  local c=$1 x n
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-fs \
    "$c"/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
  mkdir -p /tmp/pml && tar -xJf "$c/pml.tar.xz" -C /tmp/pml
  for x in /tmp/pml/lib/*.so*; do n=$(basename "$x"); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f "$x"; fi; done
  if [ "$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("Py_ENABLE_SHARED"))')" = "1" ]; then
    rm -f /tmp/pml/lib/libpython3*.so*
  fi
  if [ -f "$c/xdist.tar.xz" ]; then mkdir -p /tmp/xd && tar -xJf "$c/xdist.tar.xz" -C /tmp/xd; fi
  export PYTHONPATH="/tmp/site-fs:/tmp/pml/site:/tmp/xd${PYTHONPATH:+:$PYTHONPATH}"
  export LD_LIBRARY_PATH="/tmp/pml/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  python3 -c "import pymeshlab, fast_simplification, xdist; print('simplifiers and xdist import')" 2>&1 | tail -1
}

gpu_tests() {  # LOG [PATHS...]
  local log=$1; shift
  timeout "${T_TESTS:-300}" python3 -m pytest -m gpu "${@:-tests}" -n 4 -q -p no:cacheprovider -o addopts="" -W ignore \
    -rfEs > "$log" 2>&1
  echo "pytest -m gpu rc=$?"; grep -E "passed|failed|^FAILED|^ERROR|^E  " "$log" | cut -c1-300 | head -20
}
