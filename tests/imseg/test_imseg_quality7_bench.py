"""benchmarks/imseg_session7_quality.py (issue 21, session 7: stop rules and learned merge
costs) scores candidates the way the product would: its merge loop with the default candidate
is production's ``merge_np`` (same labels, same scores as ``segment_contours`` under
``metrics.evaluate``), and each hook changes what it claims to change."""

from __future__ import annotations

import math

import numpy as np
import pytest
from imseg_bench import load_benchmark
from test_imseg_session3_bench import _scene  # the synthetic scene with two "human" segmentations

from gpu_kernels.imseg import contours as C
from gpu_kernels.imseg.contours import segment_contours
from gpu_kernels.imseg.metrics import evaluate


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("imseg_session7_quality")


@pytest.fixture(scope="module")
def scene(bench):
    img, gts = _scene()
    return img, gts, bench.prepare(("s", img, gts, None))


def _into(bench, d, cand):
    n = d["h"] * d["w"]
    rule = cand if cand["kind"] != "thr" else {"kind": "thr", "c": cand["c"]}
    return bench.merge(d["graph"], bench.cost_thr(cand), 1 / math.sqrt(n), C.min_region_area(d["S"]),
                       cand.get("size_k", C.SIZE_K), rule)


def test_default_candidate_is_the_library_default_and_scores_like_the_product(bench, scene):
    img, gts, d = scene
    assert bench.DEFAULT == {"kind": "thr", "c": C.DEFAULT_COARSENESS}
    cov, pri, voi, count = bench.run(d, bench.DEFAULT)
    seg = segment_contours(img, device="cpu", features=False)
    ref = evaluate(seg.labels, gts)
    assert count == seg.n_regions
    np.testing.assert_allclose([cov, pri, voi], [ref["covering"], ref["pri"], ref["voi"]], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("c", [2.4, 3.0, 3.3])
def test_merge_loop_gives_merge_np_labels(bench, scene, c):
    _, _, d = scene
    n = d["h"] * d["w"]
    ref, _, _ = C.merge_np(d["graph"], 0, C.coarseness_threshold(c), 1 / math.sqrt(n),
                           min_area=C.min_region_area(d["S"]))
    got = _into(bench, d, {"kind": "thr", "c": c})
    np.testing.assert_array_equal(C._resolve(got)[0], C._resolve(ref)[0])


def test_jump_rule_is_the_threshold_rule_when_its_window_closes(bench, scene):
    _, _, d = scene
    base = C._resolve(_into(bench, d, {"kind": "thr", "c": 2.4}))
    closed = C._resolve(_into(bench, d, {"kind": "jump", "lo": 2.4, "hi": 2.4, "J": 1.05}))
    opened = C._resolve(_into(bench, d, {"kind": "jump", "lo": 2.4, "hi": 4.0, "J": 100.0}))
    np.testing.assert_array_equal(closed[0], base[0])
    assert opened[1] < base[1]  # a window that lets every later merge through merges further


def test_region_variance_and_its_factor(bench):
    area = np.array([4, 4], np.int64)
    # region 0: q = 16 * (1, 0, 0) on every pixel (variance 0); region 1: L = 16 * (0, 2, 0, 2)
    rsum = np.array([[64, 0, 0], [64, 0, 0]], np.int64)
    rsq = np.array([4 * 256, 2 * (32 ** 2)], np.int64)
    v = bench.region_var(area, rsum, rsq, np.array([0, 1]), v0=1.0)
    np.testing.assert_allclose(v, [1.0, 2.0])  # (E[q^2] - E[q]^2) / 256 + v0: 0 + 1 and 1 + 1
    st = {"area": area, "rsum": rsum, "rsq": rsq}
    a, b, el, eg = np.array([0]), np.array([1]), np.array([2]), np.array([32])
    plain = bench.cost_thr({"kind": "thr", "c": 3.3})(st, a, b, el, eg, 0.5, 8.0, 0.0)
    with_v = bench.cost_thr({"kind": "thr", "c": 3.3, "av": 9})(st, a, b, el, eg, 0.5, 8.0, 0.0)
    # the regions' colour means are equal, so the plain cost is 0 and stays 0; move one
    rsum2 = np.array([[64, 0, 0], [64, 32, 0]], np.int64)
    st2 = dict(st, rsum=rsum2)
    p2 = bench.cost_thr({"kind": "thr", "c": 3.3})(st2, a, b, el, eg, 0.5, 8.0, 0.0)
    v2 = bench.cost_thr({"kind": "thr", "c": 3.3, "av": 9})(st2, a, b, el, eg, 0.5, 8.0, 0.0)
    r = (bench.region_var(area, rsum2, rsq, a) - bench.region_var(area, rsum2, rsq, b)) / (
        bench.region_var(area, rsum2, rsq, a) + bench.region_var(area, rsum2, rsq, b))
    assert plain[0] == with_v[0] == 0.0
    assert p2[0] > 0
    np.testing.assert_allclose(v2[0], np.float32(p2[0] * (1 + 9 * r[0] ** 2)), rtol=1e-6)


def test_cv_table_rules(bench):
    """The post-hoc cross-validation: a candidate better on every image is picked by both rules
    and beats the default held out; one that is better on covering only never qualifies."""
    rng = np.random.default_rng(0)
    base = np.c_[rng.uniform(0.4, 0.7, 60), rng.uniform(0.7, 0.9, 60), rng.uniform(1.5, 2.0, 60), np.full(60, 25.0)]
    better = base + [0.01, 0.005, -0.05, 0.0]
    cov_only = base + [0.05, -0.01, 0.0, 0.0]
    dk = bench.name(bench.DEFAULT)
    table = bench.cv_table({dk: base, "better": better, "cov_only": cov_only}, seeds=[0, 1])
    for line in table:
        assert line["cov_beats_default"] and line["margin_beats_default"]
        np.testing.assert_allclose(line["cov"], better.mean(0).round(4), atol=1e-4)
    table = bench.cv_table({dk: base, "cov_only": cov_only}, seeds=[0])
    assert not table[0]["cov_beats_default"] and table[0]["cov"] == base.mean(0).round(4).tolist()
