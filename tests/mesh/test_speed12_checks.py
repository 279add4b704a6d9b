"""Issue 22 (session 12): ``clean_mesh``'s quick checks decide as the full ones (session 13: no switch; the
references are the full span check, kept here since session 14 inlined it into ``_check_span``, and ``np.unique``):
``_check_span`` passes a mesh whose coordinates are all within a quarter of the limit without the median (and
raises as before otherwise, a mesh far out at 1e308 included), and ``_first_of_unique_rows`` gives every row,
as a set, where no face repeats."""

from __future__ import annotations

import numpy as np
import pytest
from test_speed8_simplify import _sphere  # (tests/mesh is on sys.path under pytest)

from gpu_kernels.mesh import dualgraph as dg


def _check_span_full(v: np.ndarray, f: np.ndarray) -> None:
    """The span check by the median of the used vertices, always (session 13's ``dualgraph._check_span_full``)."""
    used = v[dg._used_vertices(v, f)]
    centre = np.median(used, axis=0)
    with np.errstate(over="ignore", invalid="ignore"):
        dev = np.abs(used - centre).max(axis=1)
    far = int(np.argmax(dev))
    if not np.isfinite(dev[far]) or dev[far] > dg.MAX_COORDINATE_SPAN / 2:
        idx = int(dg._used_vertices(v, f)[far])
        xyz = ", ".join(f"{c:.3g}" for c in v[idx])
        raise dg.MeshInputError(
            f"vertex {idx:,} lies at ({xyz}), too far out to compute with (coordinates must stay within "
            f"{dg.MAX_COORDINATE_SPAN / 2:.0e} of the mesh's centre): fix or remove it, or rescale the mesh")


def _decision(monkeypatch, v, f, quick):
    check = dg._check_span if quick else _check_span_full
    try:
        check(np.asarray(v, np.float64), np.asarray(f, np.int64))
        return "ok"
    except dg.MeshInputError as exc:
        return str(exc)


@pytest.mark.parametrize("scale", [1e-300, 1.0, 1e100, 2e149, 3e149, 1e150, 1e200, 1e308])
@pytest.mark.parametrize("far", [False, True])
def test_the_span_check_decides_as_before(monkeypatch, scale, far):
    v, f = _sphere(8)
    v = v * scale
    if far:
        v[3] = [scale * 1e3 if scale < 1e305 else 1.7e308, 0.0, 0.0]
    assert _decision(monkeypatch, v, f, True) == _decision(monkeypatch, v, f, False)


def test_a_mesh_at_1e308_is_still_refused(monkeypatch):
    v, f = _sphere(8)
    v = 1.6e308 + v * 1e300   # a small mesh far out: its median overflows
    assert _decision(monkeypatch, v, f, True) != "ok"
    assert _decision(monkeypatch, v, f, True) == _decision(monkeypatch, v, f, False)


def test_the_quick_span_check_skips_the_median(monkeypatch):
    calls = []
    monkeypatch.setattr(dg, "_used_vertices", lambda v, f: calls.append(1) or np.arange(len(v)))
    v, f = _sphere(8)
    assert _decision(monkeypatch, v, f, True) == "ok" and calls == []
    assert _decision(monkeypatch, v, f, False) == "ok" and calls == [1]


@pytest.mark.parametrize("repeat", [False, True])
def test_the_first_rows_are_the_same_set(monkeypatch, repeat):
    rng = np.random.default_rng(3)
    key = np.sort(rng.integers(0, 500, size=(2000, 3)), axis=1)
    key = key[np.unique(key, axis=0, return_index=True)[1]]
    if repeat:
        key = np.vstack([key, key[rng.integers(0, len(key), 7)]])[rng.permutation(len(key) + 7)]
    quick = dg._first_of_unique_rows(key, 500)
    n = 501
    full = np.unique((key[:, 0] * n + key[:, 1]) * n + key[:, 2], return_index=True)[1]   # (the full one)
    assert np.array_equal(np.sort(quick), np.sort(full))
    assert (len(full) < len(key)) == repeat
