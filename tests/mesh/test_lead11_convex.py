"""A convex mesh (no concave edge at all) segments with the compiled merge loop as with the NumPy one.

Session 11's compiled settle (``_numba_cut.merge_contrast``) divided 0 by 0 on such a mesh (the contrast's
offset c0 is 0 when no edge is concave) and raised ZeroDivisionError where the NumPy loop gives NaN: the
default ``gpulab mesh-seg`` of a sphere ended in "internal error" (reviewer, session 11)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpu_kernels.mesh import boundary, defaults
from gpu_kernels.mesh.segment import segment_mesh

ROOT = Path(__file__).resolve().parents[2]


def icosphere(n: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """A subdivided icosahedron on the unit sphere: every edge convex."""
    t = (1 + 5 ** 0.5) / 2
    v = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t), (0, 1, -t),
         (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    f = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2), (10, 7, 6),
         (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10),
         (8, 6, 7), (9, 8, 1)]
    vs = [np.array(x, float) / np.linalg.norm(x) for x in v]
    for _ in range(n):
        mids: dict = {}
        nf = []

        def mid(a, b, mids=mids):
            key = (min(a, b), max(a, b))
            if key not in mids:
                m = vs[a] + vs[b]
                vs.append(m / np.linalg.norm(m))
                mids[key] = len(vs) - 1
            return mids[key]
        for a, b, c in f:
            ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
            nf += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        f = nf
    return np.array(vs), np.array(f, dtype=np.int64)


@pytest.mark.parametrize("k", ["auto", 3])
def test_a_convex_mesh_segments_alike_with_the_compiled_and_the_numpy_merge(monkeypatch, k):
    v, f = icosphere(3)
    monkeypatch.setattr(defaults, "DEFAULT_K_MERGE", "hand")   # the hand-made loop is the one compiled
    got = {}
    for compiled in (True, False):
        monkeypatch.setattr(boundary, "COMPILED_MERGE", compiled)
        got[compiled] = np.asarray(segment_mesh(v, f, k=k, device="cpu").labels)
    assert len(got[True]) == len(f)
    np.testing.assert_array_equal(got[True], got[False])
    if k == 3:
        assert len(np.unique(got[True])) == 3


def test_the_cli_segments_a_sphere(tmp_path):
    v, f = icosphere(3)
    src = tmp_path / "sphere.off"
    head = f"OFF\n{len(v)} {len(f)} 0\n"
    src.write_text(head + "".join(f"{a:.17g} {b:.17g} {c:.17g}\n" for a, b, c in v)
                   + "".join(f"3 {a} {b} {c}\n" for a, b, c in f))
    out = tmp_path / "parts.ply"
    r = subprocess.run([sys.executable, "-m", "app", "mesh-seg", str(src), "-o", str(out), "--device", "cpu"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert out.exists() and "Traceback" not in r.stderr
