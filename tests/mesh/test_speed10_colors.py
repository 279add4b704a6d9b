"""Issue 22 (session 10): ``colors.certainty`` from the compiled two highest memberships
(``boundary._top_two``) instead of ``np.partition`` on a float64 copy: the same values bit for bit,
so the same face colours."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_kernels.mesh import boundary, colors


def _old_certainty(P):
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2 or P.shape[1] <= 1:
        return np.ones(P.shape[0])
    top2 = -np.partition(-P, 1, axis=1)[:, :2]
    s = top2[:, 0] + top2[:, 1]
    return np.clip((top2[:, 0] - top2[:, 1]) / np.where(s > 0, s, 1.0), 0.0, 1.0)


def _memberships(dtype, F=3000, K=7, seed=5):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(K, 0.3), size=F).astype(dtype)
    P[::7, 1] = P[::7, 0]                          # a repeated maximum or a tie below it
    P[::11] = 0.0                                  # all zero (s = 0)
    P[5::13, :] = P[5::13, [0]]                    # every value equal
    P[3::17, 2] = 1.0
    P[3::17, 4] = 1.0                              # two ones
    P[2::19, :] = 0.0
    P[2::19, 6] = 1.0                              # one part only
    return P


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("compiled", [True, False])
def test_the_certainty_is_the_old_one_bit_for_bit(monkeypatch, dtype, compiled):
    if not compiled:
        monkeypatch.setattr(boundary, "COMPILED", False)
    elif boundary.compiled() is None:
        pytest.skip("numba is not available here")
    P = _memberships(dtype)
    got = colors.certainty(P)
    want = _old_certainty(P)
    assert got.dtype == want.dtype == np.float64
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
    assert 0.0 < got.mean() < 1.0 and (got == 0).any() and (got == 1).any()


def test_other_shapes_and_dtypes_as_before():
    assert np.array_equal(colors.certainty(np.ones((4, 1), np.float32)), np.ones(4))
    ints = np.array([[3, 1, 0], [2, 2, 1], [0, 0, 0]])
    assert np.array_equal(colors.certainty(ints), _old_certainty(ints))
    P = _memberships(np.float32, F=500, K=7, seed=9)
    lab = P.argmax(axis=1)
    pal = colors.palette(7)
    t = 1.0 - 0.6 * (1.0 - _old_certainty(P))[:, None]
    old = np.clip(np.rint(255.0 + (pal.astype(np.float64)[lab] - 255.0) * t), 0, 255).astype(np.uint8)
    assert np.array_equal(colors.blend_face_colors(P, lab, pal, shading=0.6), old)
