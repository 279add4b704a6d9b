"""Issue 22 (session 8): the compiled minimum cut solves each component (joined only through
the source and the sink) alone, and gives exactly the source side of the whole problem:
SciPy's, and the one-problem Dinic's (``_numba_cut._dinic_side``)."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_kernels.mesh import boundary

nc = pytest.importorskip("gpu_kernels.mesh._numba_cut", reason="numba is not installed (pip install gpulab[fast])")


def _strip(rng, m, off):
    """A grid strip of ``m`` nodes numbered from ``off``; sources on its left end, sinks on
    its right end (either may be missing), integer capacities with many ties."""
    w = max(2, int(np.sqrt(m)))
    idx = np.arange(m)
    right = idx[((idx % w) < w - 1) & (idx + 1 < m)]
    ei = np.concatenate([right, idx[:-w]])
    ej = np.concatenate([right + 1, idx[w:]])
    cap = rng.integers(1, 6, size=ei.size) * rng.choice([1, 10, 100], size=ei.size)
    kind = rng.integers(0, 4)             # 0: both ends, 1: no sink, 2: no source, 3: both
    src = np.where((idx % w) < max(1, w // 4), rng.integers(0, 30, size=m), 0) if kind != 2 else np.zeros(m, int)
    snk = np.where((idx % w) >= w - max(1, w // 4), rng.integers(0, 30, size=m), 0) if kind != 1 else np.zeros(m, int)
    if kind == 3:                         # some nodes tied to both terminals
        both = rng.random(m) < 0.1
        src[both] += 7
        snk[both] += 5
    return ei + off, ej + off, cap, src, snk


def _problem(rng):
    parts, off = [], 0
    for _ in range(int(rng.integers(1, 25))):
        m = int(rng.integers(1, 120))
        parts.append(_strip(rng, m, off))
        off += m
    perm = rng.permutation(off)          # components interleaved in node order, as in the cut
    ei = perm[np.concatenate([p[0] for p in parts])]
    ej = perm[np.concatenate([p[1] for p in parts])]
    cap = np.concatenate([p[2] for p in parts])
    src = np.zeros(off, dtype=np.int64)
    snk = np.zeros(off, dtype=np.int64)
    src[perm] = np.concatenate([p[3] for p in parts])
    snk[perm] = np.concatenate([p[4] for p in parts])
    o = rng.permutation(ei.size)         # arcs in any order
    return off, ei[o].astype(np.int64), ej[o].astype(np.int64), cap[o].astype(np.int64), src, snk


@pytest.mark.parametrize("seed", range(16))
def test_per_component_cut_is_the_whole_problems_cut(seed, monkeypatch):
    rng = np.random.default_rng(100 + seed)
    prob = _problem(rng)
    got = nc.min_cut_source_side(*prob)
    whole = nc._dinic_side(*prob)
    np.testing.assert_array_equal(got, whole)
    monkeypatch.setattr(boundary, "COMPILED", False)
    np.testing.assert_array_equal(got, boundary._min_cut_source_side(*prob))


def test_components_without_a_source_arc_have_nothing_on_the_source_side():
    # two components: {0, 1} tied to the source and the sink (arc 0-1 is the cut), {2, 3} to
    # the sink only; then the sink's arc is the cut, and 1 is on the source side
    ei, ej = np.array([0, 2]), np.array([1, 3])
    side = nc.min_cut_source_side(4, ei, ej, np.array([5, 5]), np.array([9, 0, 0, 0]), np.array([0, 7, 0, 3]))
    assert side.tolist() == [True, False, False, False]
    side = nc.min_cut_source_side(4, ei, ej, np.array([5, 5]), np.array([9, 0, 0, 0]), np.array([0, 2, 0, 3]))
    assert side.tolist() == [True, True, False, False]
    assert not nc.min_cut_source_side(0, ei[:0], ej[:0], ei[:0], ei[:0], ei[:0]).size
