"""Fill numba's disk cache once before the test workers start (``tests/conftest.py``; session 19).

In a fresh clone (CI) numba's cache is empty: the first test of each tool that reaches a compiled loop compiles it
(the flow kernels ~45 s of CPU, the mesh cut and merge loops ~30 s, the imseg learned merge ~30 s on the shared 2-core
box), often in both pytest-xdist workers and in the CLI subprocesses of the tests at the same time, since numba only
writes its cache once a compile has ended. ``python tests/numba_warm.py PART ...`` runs each tool's default pipeline
once on a small input, as a user's first run would, so that every later process loads the compiled code from the cache
(``__pycache__`` beside the sources). It asserts nothing: the tests check the results; a failure here only means that
the tests compile instead (and report the error themselves).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "resources" / "samples"


def mesh() -> None:
    import numpy as np

    from app.io import _text_numba
    from app.io.mesh_io import read_mesh
    from gpu_kernels.mesh import boundary, learned, segment, warm

    _text_numba.warm_up()
    warm.warm_up()
    m = read_mesh(SAMPLES / "creature.ply")
    v, f = m[0], m[1]
    segment.segment_mesh(v, f, k=3, max_faces=800, device="cpu")
    segment.segment_mesh(v, f, k="auto", max_faces=800, device="cpu")
    for dtype in (np.float32, np.float64):   # the memberships' top two, both float types
        boundary._top_two(np.random.default_rng(0).random((6, 3)).astype(dtype))
    model = learned.shipped_model()   # the trees' compiled prediction
    model.predict(np.zeros((2, int(model.feature.max()) + 1)))


def flow() -> None:
    import numpy as np

    from gpu_kernels.flow import _numba, optical_flow

    _numba.warmup()
    y, x = np.mgrid[0:96, 0:128].astype(np.float32)
    a = (np.sin(x * 0.31) * np.cos(y * 0.23) * 0.4 + 0.5).astype(np.float32)
    b = np.roll(a, (1, 2), (0, 1))
    optical_flow(a, b, device="cpu")
    optical_flow(a, b, method="refine", device="cpu")


def imseg() -> None:
    import numpy as np

    from app.io.image_io import read_image
    from gpu_kernels.imseg import contours as C
    from gpu_kernels.imseg import learned as LM

    img = np.asarray(read_image(SAMPLES / "imseg" / "coffee.jpg"))[:120, :180]
    C.segment_contours(img, merge="learned", device="cpu", features=False)
    C.segment_contours(img, merge="learned", device="cpu")
    col = C.stage_colour(img, device="cpu")   # the features and trees of every first pair (as the tests call them)
    sp = C.stage_superpixels(col, n_superpixels=60, device="cpu")
    g = C.region_graph_np(sp["comps"], sp["R"], col["gq"], col["q"], boundary=True)
    g.update(LM.graph_extras_np(sp["comps"], sp["R"], col["gq"], col["q"], g))
    LM.predict_np(LM.edge_features_np(g, 1 / 150))


PARTS = {"mesh": mesh, "flow": flow, "imseg": imseg}

if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    for name in sys.argv[1:]:
        t0 = time.perf_counter()
        try:
            PARTS[name]()
            print(f"numba warm-up {name}: {time.perf_counter() - t0:.1f} s")
        except Exception as e:  # noqa: BLE001 - a warm-up only: the tests compile instead and report errors
            print(f"numba warm-up {name} failed after {time.perf_counter() - t0:.1f} s: {type(e).__name__}: {e}")
