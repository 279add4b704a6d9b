"""The learned merge (issue 21, session 12: session 11's accepted model as the contours method's
``merge="learned"``; gpu_kernels/imseg/learned.py): the shipped model is the accepted one; the CPU
path computes the reference script's features and labels (benchmarks/imseg_session10_gala.py, no
scikit-learn needed); its kept values equal recomputed ones; the CUDA kernels (through the emulator)
give the CPU labels; shaded regions are segmented into regions; n_segments is exact; coarseness
orders the learned merge too; bad input gets one clear line; the tool's coarseness edit re-runs only
the merge."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from cuda_emu import available as emu_available
from cuda_emu import emu_backend
from imseg_bench import load_benchmark
from test_imseg_contours import shaded_regions
from test_imseg_session3_bench import _scene

from gpu_kernels.imseg import contours as C
from gpu_kernels.imseg import learned as LM
from gpu_kernels.imseg._util import ImsegInputError
from gpu_kernels.imseg.contours import segment_contours
from gpu_kernels.imseg.metrics import evaluate

ROOT = Path(__file__).resolve().parents[2]
needs_emu = pytest.mark.skipif(bool(emu_available()), reason="no C++ compiler for the kernel emulator")


def _graph(img, n_superpixels: int = C.DEFAULT_N_SUPERPIXELS):
    col = C.stage_colour(img, device="cpu")
    sp = C.stage_superpixels(col, n_superpixels=n_superpixels, device="cpu")
    g = C.region_graph_np(sp["comps"], sp["R"], col["gq"], col["q"], boundary=True)
    g.update(LM.graph_extras_np(sp["comps"], sp["R"], col["gq"], col["q"], g))
    return col, sp, g


def test_the_shipped_model_is_session_11s_accepted_one():
    d = json.loads((ROOT / "benchmarks" / "results" / "imseg_q_session11_model_e2w_all200.json").read_text())
    m = LM.model()
    for k in ("feat", "thr", "left", "right", "val"):
        np.testing.assert_array_equal(m[k], np.array(d["model"][k]), err_msg=k)
    np.testing.assert_array_equal(m["leaf"], np.array(d["model"]["leaf"], bool))
    assert m["base"] == d["model"]["base"] and m["tau"] == d["tau"] == LM.default_tau() == 0.39
    assert LM.tau_from_coarseness(C.DEFAULT_COARSENESS) == pytest.approx(0.39, abs=1e-12)


def test_own_log_is_within_an_ulp_or_two_of_numpys():
    x = np.concatenate([np.geomspace(1e-12, 1e12, 5001), np.linspace(0.5, 2.0, 3001), [1.0, 2.0, 0.25]])
    got = np.array([LM.flog(float(v)) for v in x])
    want = np.log(x)
    assert got[-3] == 0.0 and got[-2] == want[-2]
    np.testing.assert_allclose(got, want, rtol=4e-16, atol=2e-16)


@pytest.fixture(scope="module")
def ref():
    return load_benchmark("imseg_session10_gala")


@pytest.fixture(scope="module")
def scene(ref):
    img, gts = _scene(5, 160, 220)
    return img, ref.prepare(("5", img, gts, None))


@pytest.mark.slow
def test_features_and_labels_equal_the_reference_scripts(ref, scene):
    """The 24 features of every pair (float32) and the merged labels at τ 0.39 (clean-up included)
    are the reference script's (its trees walked by its own numba/NumPy code)."""
    img, d = scene
    _, _, g = _graph(img)
    for k in ("rsq", "gin", "hist", "bord", "gh", "area", "rsum", "el", "eg"):
        np.testing.assert_array_equal(np.asarray(d["graph"][k], np.float64), np.asarray(g[k], np.float64), err_msg=k)
    inv_norm = 1 / math.sqrt(d["h"] * d["w"])
    st, ea, eb, el, eg, gh = ref.init_state(d)
    R = d["graph"]["R"]
    Xr, _ = ref.edge_features(st, ea, eb, el, eg, gh, inv_norm, float(st["area"].sum()), R, R)
    Xm = LM.edge_features_np(g, inv_norm)
    np.testing.assert_array_equal(Xr.astype(np.float32), Xm.astype(np.float32))
    np.testing.assert_array_equal(ref.predict(LM.model(), Xr), LM.predict_np(Xm))
    for tau in (0.3, 0.39, 0.5):
        want, _ = C._resolve(ref.merge(d, ref.model_score(LM.model()), tau))
        into, count, _ = LM.merge_learned_np(g, 0, tau, inv_norm, min_area=C.min_region_area(d["S"]))
        got, n = C._resolve(into)
        np.testing.assert_array_equal(got, want, err_msg=str(tau))
        assert n == count


def test_the_tools_default_coarseness_is_tau_039(ref, scene):
    img, d = scene
    _, sp, _ = _graph(img)
    want, _ = C._resolve(ref.merge(d, ref.model_score(LM.model()), 0.39))
    seg = segment_contours(img, merge="learned", device="cpu", features=False)
    np.testing.assert_array_equal(seg.labels, want[sp["comps"] - 1])
    assert seg.info["params"]["merge"] == "learned" and seg.info["params"]["tau"] == pytest.approx(0.39)


def test_kept_values_equal_recomputed_ones():
    """A pair of two regions that did not grow keeps its log cost and features 0-20; ``check``
    recomputes every pair every round: no difference, the same merge."""
    img, _ = shaded_regions(1201, cells=8)
    _, sp, g = _graph(img)
    inv = 1 / math.sqrt(img.shape[0] * img.shape[1])
    st1, st2 = {}, {}
    a = LM.merge_learned_np(g, 0, 0.39, inv, min_area=C.min_region_area(sp["S"]), stats=st1)
    b = LM.merge_learned_np(g, 0, 0.39, inv, min_area=C.min_region_area(sp["S"]), stats=st2, check=True)
    np.testing.assert_array_equal(a[0], b[0])
    assert st2["mismatches"] == 0 and st1["walks"] == st2["walks"]
    assert st1["recomputed"] < st2["recomputed"]   # the kept pairs were not computed again


def test_shaded_regions_are_regions_not_bands():
    """The issue's test: each region's own ramp spans more grey levels than the steps between
    regions; the learned merge follows the steps. (It keeps more slivers of 25-60 pixels along the
    boundaries than the contour merge, 19-22 segments for 6 regions against 10-17: the regions'
    own segments still hold nearly every pixel.)"""
    cov = []
    for seed in range(1201, 1205):
        img, truth = shaded_regions(seed, ramp=160.0)
        seg = segment_contours(img, merge="learned", device="cpu", features=False)
        cov.append(evaluate(seg.labels, [truth])["covering"])
        assert cov[-1] > 0.97, (seed, cov[-1])
        k = int(truth.max())
        sizes = np.sort(np.bincount(seg.labels.ravel())[1:])[::-1]
        assert seg.n_regions <= 4 * k and sizes[:k].sum() > 0.97 * truth.size, (seed, sizes)
    assert np.mean(cov) > 0.975, cov


def test_n_segments_is_exact_and_coarseness_orders_the_learned_merge():
    img, _ = shaded_regions(1206, cells=8)
    for k in (1, 3, 8, 20, 60):
        assert segment_contours(img, merge="learned", n_segments=k, device="cpu", features=False).n_regions == k
    counts = [segment_contours(img, merge="learned", coarseness=c, device="cpu", features=False).n_regions
              for c in (0.0, 3.3, 6.0)]
    assert counts[0] > counts[1] >= counts[2] >= 1, counts


@pytest.mark.parametrize("bad", ["learn", "", None, 3])
def test_an_unknown_merge_is_one_clear_line(bad):
    img, _ = shaded_regions(1207)
    with pytest.raises(ImsegInputError, match="unknown merge") as e:
        segment_contours(img, merge=bad, device="cpu")
    assert "\n" not in str(e.value)


@needs_emu
@pytest.mark.parametrize("kw", [dict(), dict(n_segments=4), dict(coarseness=1.5), dict(coarseness=0.0)])
def test_kernels_in_the_emulator_give_the_cpu_labels(kw):
    from skimage import data, transform

    img = (transform.resize(data.astronaut(), (40, 56), anti_aliasing=True) * 255).astype(np.uint8)
    a = segment_contours(img, merge="learned", device=emu_backend(), n_superpixels=50, **kw)
    b = segment_contours(img, merge="learned", device="cpu", n_superpixels=50, **kw)
    np.testing.assert_array_equal(a.clusters, b.clusters)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert a.info["merge_rounds"] == b.info["merge_rounds"] and a.syncs == 2


#: the GPU merge's kernels and their settings: session 12's one-block kernel with the regions in shared
#: memory or not, session 13's grid kernel with 512 or 1024 threads a block, and its profiling build (session
#: 14: per-phase checkpoints into a prof of 64)
KERNEL_SETTINGS = (("block", {"smem": True}), ("block", {"smem": False}), ("grid", {"threads": 512}),
                   ("grid", {"threads": 1024}), ("grid", {"threads": 512, "checkpoints": True}))


def merge_with(be, kernel, setting, *args, **kw):
    """``learned.merge_device`` with one of :data:`KERNEL_SETTINGS`."""
    old, old_ck = LM.GRID_THREADS, LM.GRID_CHECKPOINTS
    LM.GRID_THREADS = setting.get("threads", old)
    LM.GRID_CHECKPOINTS = bool(setting.get("checkpoints"))
    if LM.GRID_CHECKPOINTS:
        kw = {**kw, "prof": be.xp.zeros(64, dtype=be.xp.int64)}
    try:
        return LM.merge_device(be, *args, kernel=kernel, smem=setting.get("smem"), **kw)
    finally:
        LM.GRID_THREADS, LM.GRID_CHECKPOINTS = old, old_ck


@needs_emu
@pytest.mark.slow
def test_the_emulated_merge_kernels_give_the_cpu_merge():
    img, _ = shaded_regions(1208, h=64, w=80, cells=5)
    col, sp, g = _graph(img, 120)
    h, w = img.shape[:2]
    inv = 1 / math.sqrt(h * w)
    be = emu_backend()
    xp = be.xp
    for target, ma in ((0, C.min_region_area(sp["S"])), (3, 0)):
        want, _ = C._resolve(LM.merge_learned_np(g, target, 0.39, inv, min_area=ma)[0])
        for kernel, setting in KERNEL_SETTINGS:
            into, state = merge_with(be, kernel, setting, xp.asarray(sp["comps"].ravel().astype(np.int32)), sp["R"],
                                     h, w, xp.asarray(col["gq"].ravel()), xp.asarray(col["q"].reshape(3, -1).ravel()),
                                     target, 0.39, inv, min_area=ma)
            got, n = C._resolve(np.asarray(into.get()).astype(np.int64))
            np.testing.assert_array_equal(got, want, err_msg=f"{target} {kernel} {setting}")
            assert int(state.get()[0]) == n


@needs_emu
@pytest.mark.parametrize("kernel", ["grid", "block"])
@pytest.mark.parametrize("nlab, bit", [(12, 2), (40, 1)])
def test_labels_beyond_the_graphs_bounds_are_a_clear_error(nlab, bit, kernel):
    """Labels whose regions are not one 4-connected piece each (random labels: every pair of regions
    touches) overflow the pair positions (3R + 16; 12 labels, 66 pairs) or the hash table (40 labels,
    780 pairs in 512 slots): both kernels report it in their state instead of writing out of bounds (or
    probing the table forever; session 14: the block kernel too), and the state check raises one line."""
    rng = np.random.default_rng(1301 + nlab)
    h, w = 48, 64
    labels = rng.integers(1, nlab + 1, size=(h, w)).astype(np.int32)
    q = rng.integers(0, 1000, size=(3, h * w)).astype(np.int32)
    gq = rng.integers(0, 50, size=h * w).astype(np.int32)
    be = emu_backend()
    xp = be.xp
    into, state = LM.merge_device(be, xp.asarray(labels.ravel()), nlab, h, w, xp.asarray(gq), xp.asarray(q.ravel()), 0,
                                  0.39, 1 / math.sqrt(h * w), kernel=kernel)
    st = np.asarray(state.get())
    assert st[3] & bit
    with pytest.raises(ValueError, match="overflowed") as e:
        C.check_merge_state(st, 3)
    assert "\n" not in str(e.value)


def test_the_tool_selects_the_merge_and_a_coarseness_edit_reruns_only_the_merge():
    from app.tools import imseg
    from app.tools.stages import StageCache
    from gpu_kernels.backend import get_backend

    img, _ = shaded_regions(1209, cells=6)
    data = imseg.ImageData(None, img)
    cache = StageCache(cap_bytes=1 << 30)
    be = get_backend("cpu")
    p1 = imseg.PARAMS.validate({"merge": "learned"})
    r1, rep1 = imseg.PIPELINE.execute(data, p1, device=be, cache=cache, scope="l12")
    assert rep1.ran == ["colour", "superpixels", "merge", "regions"]
    want = segment_contours(img, merge="learned", device="cpu")
    np.testing.assert_array_equal(r1.seg.labels, want.labels)
    p2 = imseg.PARAMS.validate({"merge": "learned", "coarseness": 5.0})
    r2, rep2 = imseg.PIPELINE.execute(data, p2, device=be, cache=cache, scope="l12")
    assert rep2.ran == ["merge", "regions"] and r2.seg.n_regions < r1.seg.n_regions
    p3 = imseg.PARAMS.validate({"merge": "contour", "coarseness": 5.0})
    r3, rep3 = imseg.PIPELINE.execute(data, p3, device=be, cache=cache, scope="l12")
    assert rep3.ran == ["merge", "regions"]
    np.testing.assert_array_equal(r3.seg.labels, segment_contours(img, merge="contour", coarseness=5.0,
                                                                  device="cpu").labels)
    with pytest.raises(Exception, match="merge"):
        imseg.PARAMS.validate({"merge": "learnt"})


@needs_emu
@pytest.mark.parametrize("merge", ["contour", "learned"])
def test_a_target_count_that_cuts_a_round_short_in_the_emulated_kernels(merge):
    """With many superpixels and a target count, a round flags more mutual pairs than the target leaves
    room for, so the kernels keep only the lowest ones (imseg_common.cuh ``im_keep_lowest``, shared by
    both merges). The smaller emulator tests above never reach that branch (a kernel that skips it passed
    them); these counts do, and the labels must equal the CPU's."""
    from skimage import data, transform

    img = (transform.resize(data.astronaut(), (72, 96), anti_aliasing=True) * 255).astype(np.uint8)
    for k in (15, 60):
        a = segment_contours(img, merge=merge, device=emu_backend(), n_superpixels=150, n_segments=k, features=False)
        b = segment_contours(img, merge=merge, device="cpu", n_superpixels=150, n_segments=k, features=False)
        assert a.n_regions == b.n_regions == k
        np.testing.assert_array_equal(a.labels, b.labels)


def test_the_cpu_rounds_stop_when_their_control_flag_is_set():
    """The compiled rounds read ``ctl[0]`` before each round (set by the watching thread on a cancel):
    set from the start, no round runs; clear, they run to the end and report the rounds and regions."""
    img, _ = shaded_regions(1201, cells=8)
    _, sp, g = _graph(img)
    inv = 1 / math.sqrt(img.shape[0] * img.shape[1])
    K, m = LM._kernels(), LM.model()
    R = int(g["R"])

    def run(flag):
        ctl = np.array([flag, 0, 0], np.int64)
        out = K._merge_loop(*LM._state(g), *LM._model_arrays(m), LM.thresholds23(m), np.float32(0.39), 0,
                            int(C.min_region_area(sp["S"])), float(inv), float(img.shape[0] * img.shape[1]),
                            100_000, False, ctl)
        return out, ctl

    (into, count, rounds, *_), _ = run(1)
    assert rounds == 0 and count == R and np.array_equal(into, np.arange(R))
    (into, count, rounds, *_), ctl = run(0)
    assert rounds > 1 and count < R and rounds - 1 <= int(ctl[1]) <= rounds   # (the last round may find no merge)


def test_a_cancel_during_the_cpu_rounds_stops_them_and_raises():
    """merge_learned_np's watcher: while the rounds run on their thread it reports them and checks for
    cancel; a cancel sets the rounds' stop flag, waits for them to stop, and raises Cancelled."""
    import threading
    import time

    from gpu_kernels.jobs import Cancelled, Progress

    ev = threading.Event()
    seen = {"updates": [], "stopped": False}

    def report(frac, text):
        seen["updates"].append(text)
        ev.set()   # the user presses Cancel at the first report

    def rounds(ctl):   # stands for the compiled rounds: runs until its stop flag is set (5 s at most)
        t0 = time.monotonic()
        while ctl[0] == 0 and time.monotonic() - t0 < 5.0:
            ctl[1] += 1
            ctl[2] = 40
            time.sleep(0.005)
        seen["stopped"] = bool(ctl[0])
        return "finished"

    ctl = np.zeros(3, np.int64)
    with pytest.raises(Cancelled):
        LM._watched(rounds, (ctl,), ctl, 100, 0, Progress(report, cancel_event=ev, min_interval=0.0))
    assert seen["stopped"] and seen["updates"] and seen["updates"][0].startswith("merging: 40 regions")
    # no cancel: the result comes back, the rounds reported
    ev.clear()
    ctl = np.zeros(3, np.int64)
    seen["updates"].clear()
    assert LM._watched(lambda c: "done", (ctl,), ctl, 100, 0, Progress(lambda f, t: None)) == "done"


def test_the_commands_help_names_the_default_merge():
    """``gpulab imseg --help`` builds the merge sentence from the tool's ``merge`` parameter (it named the default
    in prose before, which could drift from the switch; session 15: the default and choices from the tool
    declaration, which the parser applies, not from defaults beside it)."""
    import dataclasses

    from app.commands import imseg as cmd
    from app.tools import imseg as tool
    from gpu_kernels.imseg import defaults

    assert f"(--merge {defaults.DEFAULT_MERGE}" in cmd._merges_text().split(", the default")[0]
    assert tool.PARAMS["merge"].default == defaults.DEFAULT_MERGE
    switched = dataclasses.replace(tool.PARAMS["merge"], default="learned")
    text = cmd._merges_text(switched)
    assert text.startswith("by a learned merge score") and "(--merge learned), the default, or by colour" in text


@needs_emu
def test_a_cooperative_kernel_in_the_emulator_has_one_block():
    """``backend.kernel(..., cooperative=True)`` (session 13, for the grid merge): launched as usual with one
    block in the emulator (which runs blocks one after another, so blocks waiting for each other would
    hang), refused with more; ``cooperative_blocks`` says 1 there."""
    from gpu_kernels.backend import BackendError, cooperative_blocks, kernel

    be = emu_backend()
    xp = be.xp
    fn = kernel(be, "selftest.cu", "gpulab_saxpy", cooperative=True)
    assert cooperative_blocks(fn, 256) == 1
    x = xp.asarray(np.arange(8, dtype=np.float32))
    y = xp.asarray(np.ones(8, dtype=np.float32))
    fn((1,), (32,), (np.float32(2), x, y, np.int32(8)))
    np.testing.assert_array_equal(np.asarray(y.get()), 2 * np.arange(8) + 1)
    with pytest.raises(BackendError, match="one block"):
        fn((2,), (32,), (np.float32(2), x, y, np.int32(8)))


def test_the_graphs_boundary_pairs_serve_the_gradient_histograms():
    """``region_graph_np(..., boundary=True)`` keeps the boundary pixel pairs, and ``graph_extras_np``
    uses them instead of finding them again (session 12's final read): its gradient histograms equal the
    ones of the pairs found again here (the reference: ``contours.boundary_pairs``, session 12's way), the
    graph's other sums do not change with the kept pairs, and a graph without them is one clear error
    (session 14: the library's second way of finding them, used only by tests, is gone)."""
    img, _ = shaded_regions(1302, h=64, w=80, cells=5)
    col, sp, g = _graph(img, 120)
    R = sp["R"]
    g0 = C.region_graph_np(sp["comps"], R, col["gq"], col["q"])
    assert all(np.array_equal(g[k], g0[k]) for k in ("ea", "eb", "el", "eg", "area", "rsum"))
    lo, hi, s = C.boundary_pairs(sp["comps"].astype(np.int64) - 1, col["gq"].astype(np.int64))
    u, inv = np.unique(lo * R + hi, return_inverse=True)
    assert np.array_equal(u // R, g["ea"]) and np.array_equal(u % R, g["eb"])
    gbin = sum((s >= 16 * (1 << k)).astype(np.int64) for k in range(LM.NG - 1))
    want = np.bincount(inv * LM.NG + gbin, minlength=len(u) * LM.NG).reshape(len(u), LM.NG)
    np.testing.assert_array_equal(g["gh"], want)
    assert g["gh"].sum() == g["el"].sum() and g["gh"][:, 1:].sum() > 0
    with pytest.raises(ValueError, match="boundary=True"):
        LM.graph_extras_np(sp["comps"], R, col["gq"], col["q"], g0)


@needs_emu
def test_a_refused_cooperative_launch_runs_the_one_block_kernel(monkeypatch):
    """Session 13 review #3: where the driver refuses the grid (MPS limits, SMs held by others), the merge runs
    session 12's one-block kernel (the same labels) instead of ending in a raw driver error; any other error of
    the grid kernel is not hidden."""
    from skimage import data, transform

    class CUDADriverError(RuntimeError):
        pass

    img = (transform.resize(data.astronaut(), (40, 56), anti_aliasing=True) * 255).astype(np.uint8)
    b = segment_contours(img, merge="learned", device="cpu", n_superpixels=50)
    ran = []

    def refuse(*a, **kw):
        ran.append(1)
        raise CUDADriverError("CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: too many blocks in cooperative launch")

    monkeypatch.setattr(LM, "_merge_grid", refuse)
    a = segment_contours(img, merge="learned", device=emu_backend(), n_superpixels=50)
    assert ran and a.info["merge_rounds"] == b.info["merge_rounds"]
    np.testing.assert_array_equal(a.labels, b.labels)

    def broken(*a, **kw):
        raise CUDADriverError("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered")

    monkeypatch.setattr(LM, "_merge_grid", broken)
    with pytest.raises(CUDADriverError):
        segment_contours(img, merge="learned", device=emu_backend(), n_superpixels=50)


@needs_emu
def test_a_model_larger_than_the_grid_kernel_holds_runs_the_block_kernel(monkeypatch):
    """(Session 13 final read) A retrained model with more than 64 trees must not break the default GPU path:
    it runs the one-block kernel (the same labels); only an explicit kernel="grid" refuses it. A 65th tree
    whose leaves are all zero leaves every prediction as it was."""
    img, _ = shaded_regions(1208, h=64, w=80, cells=5)
    col, sp, g = _graph(img, 120)
    h, w = img.shape[:2]
    inv = 1 / math.sqrt(h * w)
    m = LM.model()
    big = {k: (np.concatenate([v, v[:1] * 0 if k == "val" else v[:1]]) if isinstance(v, np.ndarray) else v)
           for k, v in m.items()}
    assert big["feat"].shape[0] == 65
    be = emu_backend()
    xp = be.xp
    args = (xp.asarray(sp["comps"].ravel().astype(np.int32)), sp["R"], h, w, xp.asarray(col["gq"].ravel()),
            xp.asarray(col["q"].reshape(3, -1).ravel()), 0, 0.39, inv)
    ma = C.min_region_area(sp["S"])
    want, _ = C._resolve(LM.merge_learned_np(g, 0, 0.39, inv, min_area=ma)[0])
    grid = LM._merge_grid

    def no_grid(*a, **k):
        raise AssertionError("the grid kernel ran")

    monkeypatch.setattr(LM, "_merge_grid", no_grid)   # (both kernels' states have 4 entries since session 14)
    into, state = LM.merge_device(be, *args, min_area=ma, model_arrays=big)
    monkeypatch.setattr(LM, "_merge_grid", grid)
    got, _ = C._resolve(np.asarray(into.get()).astype(np.int64))
    np.testing.assert_array_equal(got, want)
    assert int(np.asarray(state.get())[3]) == 0
    with pytest.raises(ValueError, match="at most 64 trees"):
        LM.merge_device(be, *args, min_area=ma, model_arrays=big, kernel="grid")
