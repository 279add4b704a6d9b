# reviewer s16 (optional GPU check, <= 60 s, no carry): ct_merge's shipped modes 3/4 + skip + capped small table
# at 1080p in the COUNT mode (the hybrid's contour part runs it; so far only the coarseness mode was compared at
# 1080p on the H100, on coffee only) and the hybrid at 1080p: GPU defaults vs the GPU with the switches off vs the
# CPU path, four skimage images upscaled to 1920x1080. Writes $OUT/reviewer/check.txt; "ALL EQUAL" at the end.
mkdir -p "$OUT/reviewer"
timeout 100 python - <<'PY' 2>&1 | grep -v "syncdetect\|warnings.warn" | tee "$OUT/reviewer/check.txt"
import multiprocessing as mp, time
import cv2, numpy as np
from skimage import data
from gpu_kernels.imseg.contours import segment_contours
t0 = time.time()
IM = [cv2.resize(f(), (1920, 1080), interpolation=cv2.INTER_CUBIC) for f in (data.coffee, data.astronaut, data.chelsea, data.rocket)]
KW = [dict(merge="hybrid"), dict(merge="hybrid", n_segments=20), dict(merge="contour", n_segments=20), dict(merge="contour", n_segments=200)]
JOBS = [(i, j) for i in range(len(IM)) for j in range(len(KW))]
def cpu(job):
    i, j = job
    return segment_contours(IM[i], device="cpu", features=False, **KW[j]).labels
segment_contours(IM[0][:60, :80], merge="hybrid", device="cpu")
with mp.get_context("fork").Pool(16) as pool:
    ref = pool.map(cpu, JOBS, chunksize=1)
print(f"CPU refs {time.time() - t0:.1f} s", flush=True)
from gpu_kernels.imseg import contours as C
bad = 0
for sw in (("best", 11, True), (None, 0, False)):
    C.HOT_SMEM, C.HOT_SMALL_LOG, C.SKIP_RENAME = sw
    for (i, j), r in zip(JOBS, ref):
        s = segment_contours(IM[i], device="cuda", **KW[j])
        same = bool(np.array_equal(s.labels, r))
        bad += not same
        print(sw, i, KW[j], "R-mode", s.info.get("merge_in_shared_memory"), "segments", s.n_regions, "same" if same else "DIFFER", flush=True)
print("ALL EQUAL" if bad == 0 else f"{bad} DIFFER", f"{time.time() - t0:.1f} s")
PY
