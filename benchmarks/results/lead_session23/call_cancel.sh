#!/bin/bash
# lead, session 23, calls 6 and 7 (call 7 after the review commit b2a17d4: the same script; kind nvidia-h100-x1, carry [".carry-lead23"]): the GPU test of cancel_prefetches and
# session 22's prefetch tests (pytest -m gpu -k prefetch), then how often a prefetch cancelled at once on the GPU is
# stopped before it ends (10 tries on the fish fixture; the test accepts either branch, this says which one ran).
set -o pipefail
export PYTHONUNBUFFERED=1
O=/tmp/lead; mkdir -p $O
exec > >(tee $O/log.txt) 2>&1
source benchmarks/device_env.sh
device_header $O/device.txt
simplifiers $PWD/.carry-lead23
T_TESTS=200 gpu_tests $O/gpu_tests.txt tests/mesh -k prefetch
python3 - <<'PY'
from gpu_kernels.jobs import Cancelled
from gpu_kernels.mesh import segment as s
from tests.mesh._quality_fixtures import fish_arrays
out = []
for i in range(10):
    p = s.prepare_mesh(*fish_arrays(), device="cuda")
    job = s.prefetch_k_starts(p, s.clusterings_prepared(p, k="auto", device="cuda"), device="cuda")
    n = s.cancel_prefetches()
    job.join(30)
    try:
        out.append(("finished", job.result(), n))
    except Cancelled:
        out.append(("cancelled", 0, n))
print("prefetch cancelled at once, 10 tries:", out)
PY
tar -czf $OUT/lead.tgz -C /tmp lead
