"""The stage mechanism (app.tools.stages): a run with a cached prefix starts at the first
changed stage and gives the result of a full run; a tiny cap still gives correct results;
changing the input or the device clears the cache; every tool's declaration is complete."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from app.tools import TOOLS
from app.tools.params import Param, ParamSet
from app.tools.stages import Pipeline, Stage, StageCache, output_nbytes
from gpu_kernels.backend import get_backend

CPU = get_backend("cpu")


# ----------------------------------------------------------------------------- a toy pipeline
PARAMS = ParamSet([
    Param("scale", float, 2.0, "Scale", "first stage", minimum=0, maximum=10),
    Param("offset", float, 0.0, "Offset", "second stage", minimum=-10, maximum=10),
    Param("power", int, 1, "Power", "third stage", minimum=1, maximum=3),
    Param("cmap", str, "grey", "Colours", "display only", choices=("grey", "hot"), display=True),
])


@dataclasses.dataclass
class Data:
    image: np.ndarray
    truth: np.ndarray | None = None


def make(calls: list):
    def scale(ctx):
        calls.append("scale")
        assert set(ctx.p) == {"scale"}  # a stage sees only its own parameters
        return ctx.data.image * ctx.p["scale"]

    def offset(ctx):
        calls.append("offset")
        return ctx["scale"] + ctx.p["offset"]

    def power(ctx):
        calls.append("power")
        return ctx["offset"] ** ctx.p["power"]

    def error(ctx):
        calls.append("error")
        return None if ctx.data.truth is None else float(np.abs(ctx["power"] - ctx.data.truth).mean())

    return Pipeline([
        Stage("scale", scale, params=("scale",), inputs=("image",)),
        Stage("offset", offset, params=("offset",), inputs=("image",)),
        Stage("power", power, params=("power",), inputs=("image",)),
        Stage("error", error, inputs=("truth",)),
    ], finish=lambda data, out, params, *, device, elapsed: (out["power"], out["error"], params["cmap"]),
        params=PARAMS)


def run(pl, data, cache, **values):
    return pl.execute(data, PARAMS.validate(values), device=CPU, cache=cache, scope="toy")


def test_cached_prefix_starts_at_the_first_changed_stage_and_equals_a_full_run():
    calls: list = []
    pl, cache = make(calls), StageCache(cap_bytes=1 << 20)
    data = Data(np.arange(12.0).reshape(3, 4))
    run(pl, data, cache)
    assert calls == ["scale", "offset", "power", "error"]
    calls.clear()
    (out, _e, _c), rep = run(pl, data, cache, power=2)
    assert calls == ["power", "error"] and rep.ran == ["power", "error"] and rep.reused == ["scale", "offset"]
    assert rep.first_run == 2 and "stage 3 of 4" in rep.describe()
    full = pl.run(data, {"power": 2}, device=CPU)
    np.testing.assert_array_equal(out, full[0])
    calls.clear()
    (out, _e, _c), rep = run(pl, data, cache, offset=1.5, power=2)
    assert calls == ["offset", "power", "error"]
    np.testing.assert_array_equal(out, pl.run(data, {"offset": 1.5, "power": 2}, device=CPU)[0])
    # going back to earlier parameters recomputes nothing
    calls.clear()
    (out, _e, _c), rep = run(pl, data, cache, power=2)
    assert calls == [] and rep.ran == [] and "re-used" in rep.describe()
    np.testing.assert_array_equal(out, full[0])


def test_display_only_parameters_never_run_a_stage():
    calls: list = []
    pl, cache = make(calls), StageCache(cap_bytes=1 << 20)
    data = Data(np.ones((2, 2)))
    run(pl, data, cache)
    calls.clear()
    (_o, _e, cmap), rep = run(pl, data, cache, cmap="hot")
    assert calls == [] and cmap == "hot"
    assert pl.stage_of("cmap") is None and pl.affected("offset") == ["offset", "power", "error"]
    with pytest.raises(TypeError, match="display-only"):
        Pipeline([Stage("x", lambda ctx: 0, params=("cmap",))], finish=lambda *a, **k: 0, params=PARAMS)
    with pytest.raises(TypeError, match="not a parameter"):
        Pipeline([Stage("x", lambda ctx: 0, params=("nope",))], finish=lambda *a, **k: 0, params=PARAMS)
    with pytest.raises(TypeError, match="not an earlier stage"):
        Pipeline([Stage("x", lambda ctx: 0, after=("y",))], finish=lambda *a, **k: 0)


def test_a_field_the_stage_does_not_read_keeps_its_output():
    """A new ground truth (a new input field) re-runs only the stage that reads it."""
    calls: list = []
    pl, cache = make(calls), StageCache(cap_bytes=1 << 20)
    img = np.arange(6.0).reshape(2, 3)
    run(pl, Data(img, None), cache)
    calls.clear()
    (_o, err, _c), _rep = run(pl, Data(img, np.zeros_like(img)), cache)
    assert calls == ["error"] and err == pytest.approx(float((2 * img).mean()))


def test_a_tiny_cap_still_gives_correct_results():
    calls: list = []
    pl = make(calls)
    data = Data(np.random.default_rng(0).random((64, 64)))  # 32 KiB per stage output
    tiny = StageCache(cap_bytes=40_000)  # room for one output
    for values in ({}, {"power": 2}, {"offset": 0.5}, {"scale": 3.0, "power": 3}, {"power": 2}):
        (out, _e, _c), _rep = run(pl, data, tiny, **values)
        np.testing.assert_array_equal(out, pl.run(data, values, device=CPU)[0])
        assert tiny.host_bytes <= tiny.cap_bytes
    assert tiny.evictions > 0 and len(tiny) <= 2  # one array and the (empty) error
    zero = StageCache(cap_bytes=0)  # keeps nothing, runs everything
    calls.clear()
    run(pl, data, zero)
    run(pl, data, zero, power=2)
    assert calls.count("scale") == 2 and len(zero) == 0


def test_least_recently_used_is_evicted_first():
    c = StageCache(cap_bytes=3 * 800)
    a = [np.zeros(100) for _ in range(4)]  # 800 bytes each
    for i in range(3):
        c.put(("k", i), a[i])
    assert c.get(("k", 0))[0]  # 0 is now the most recent
    c.put(("k", 3), a[3])
    assert ("k", 1) not in c and ("k", 0) in c and ("k", 2) in c and ("k", 3) in c
    assert not c.put(("big",), np.zeros(1000))  # larger than the cap: not kept
    assert output_nbytes({"x": [np.zeros(10), (np.zeros(5, np.float32),)]}) == (100, 0)


def test_changing_the_input_or_the_device_clears_the_scope():
    calls: list = []
    pl, cache = make(calls), StageCache(cap_bytes=1 << 20)
    data = Data(np.ones((4, 4)))
    assert not cache.bind("toy", "a.png", CPU)
    run(pl, data, cache)
    cache.put(("other",), np.zeros(3), scope="other-tab")
    assert len(cache.keys("toy")) == 4
    assert not cache.bind("toy", "a.png", CPU)  # same input, same device: kept
    assert len(cache.keys("toy")) == 4
    assert cache.bind("toy", "b.png", CPU)  # another file
    assert cache.keys("toy") == [] and cache.keys("other-tab")
    run(pl, data, cache)
    assert cache.bind("toy", "b.png", "cuda:0")  # another device
    assert cache.keys("toy") == []
    calls.clear()
    run(pl, data, cache)
    assert calls == ["scale", "offset", "power", "error"]


def test_cancel_between_stages():
    from gpu_kernels.jobs import Cancelled, Progress

    calls: list = []
    pl = make(calls)
    p = Progress()
    p.cancel()
    with pytest.raises(Cancelled):
        pl.execute(Data(np.ones(3)), PARAMS.validate({}), device=CPU, progress=p)
    assert calls == []


# ----------------------------------------------------------------------------- the five tools
@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_every_compute_parameter_feeds_a_stage(tool):
    pl = tool.pipeline()
    used = pl.used_params()
    missing = [n for n in tool.params.compute_names() if n not in used]
    assert not missing, f"{tool.name}: parameters no stage reads: {missing} (mark them display=True?)"
    assert not used & set(tool.params.display_names())


def test_echo_reference_change_reruns_only_the_trajectories():
    from app.tools import echo
    from gpu_kernels.echo.synthetic import make_pair

    f, m, gt = make_pair(16, shift=(0.5, -0.5, 0.5), seed=2)
    data = echo.EchoData(np.stack([f, m]).astype(np.float32), (1.0, 1.0, 1.0), ["f", "m"], truth={(0, 1): gt})
    cache = StageCache(cap_bytes=64 << 20)
    fast = {"levels": 1, "warps": 1, "iters": 5}
    r0, rep = echo.TOOL.run_staged(data, fast, device=CPU, cache=cache)
    assert rep.ran == ["prepare", "tensors", "pairs", "trajectory", "metrics"]
    r1, rep = echo.TOOL.run_staged(data, {**fast, "reference": 1}, device=CPU, cache=cache)
    assert rep.ran == ["trajectory"] and rep.reused == ["prepare", "tensors", "pairs", "metrics"]
    full = echo.run(data, {**fast, "reference": 1}, device=CPU)
    np.testing.assert_array_equal(r1.pairwise, full.pairwise)
    np.testing.assert_array_equal(r1.trajectory, full.trajectory)
    assert r1.metrics == full.metrics and r1.reference == full.reference == 1
    r2, rep = echo.TOOL.run_staged(data, {**fast, "alpha": 0.5}, device=CPU, cache=cache)
    assert rep.ran == ["pairs", "trajectory", "metrics"]      # the pyramids and tensors are re-used
    np.testing.assert_array_equal(r2.pairwise, echo.run(data, {**fast, "alpha": 0.5}, device=CPU).pairwise)


def test_mvs_fusion_change_reuses_the_depth_maps():
    from app.tools import mvs
    from gpu_kernels.mvs.synth import render_synthetic_scene

    syn = render_synthetic_scene(n_views=8, width=64, height=48)
    data = mvs.MVSData(syn.scene)
    cache = StageCache(cap_bytes=256 << 20)
    # three growing iterations, one attempt a pixel: the stages' reuse and the same arrays as a full run are
    # tested, not the growing (the test: 3.6-4.0 s -> 1.4-1.7 s on the 2-core box)
    prm = {"views": "0,1", "neighbors": 4, "min_views": 2, "max_iter": 3, "max_attempts": 1}
    r0, rep = mvs.TOOL.run_staged(data, prm, device=CPU, cache=cache)
    assert rep.ran == ["seeds", "textures", "views", "depth", "fusion"]
    assert all(np.isfinite(m.depth).sum() > 100 for m in r0.maps) and r0.fused is not None   # grown, fused
    r1, rep = mvs.TOOL.run_staged(data, {**prm, "fuse_tol": 0.02, "fuse_min_views": 1}, device=CPU, cache=cache)
    assert rep.ran == ["fusion"]
    full = mvs.run(data, {**prm, "fuse_tol": 0.02, "fuse_min_views": 1}, device=CPU)
    for a, b in zip(r1.maps, full.maps, strict=True):
        np.testing.assert_array_equal(a.depth, b.depth)
    if full.fused is not None:
        np.testing.assert_array_equal(r1.fused.points, full.fused.points)
    # a growing parameter re-runs the growing and the fusion, not the seeds (SIFT on a real scene)
    r2, rep = mvs.TOOL.run_staged(data, {**prm, "ncc_accept": 0.5}, device=CPU, cache=cache)
    assert rep.ran == ["depth", "fusion"] and rep.reused == ["seeds", "textures", "views"]
    full = mvs.run(data, {**prm, "ncc_accept": 0.5}, device=CPU)
    for a, b in zip(r2.maps, full.maps, strict=True):
        np.testing.assert_array_equal(a.depth, b.depth)


@pytest.mark.slow
def test_mesh_shading_is_display_only():
    from app.tools import mesh_seg

    data = mesh_seg.load(mesh_seg.samples()[0])
    cache = StageCache(cap_bytes=256 << 20)
    r0, rep = mesh_seg.TOOL.run_staged(data, {"k": 2}, device=CPU, cache=cache)
    r1, rep = mesh_seg.TOOL.run_staged(data, {"k": 2, "shading": 1.0}, device=CPU, cache=cache)
    assert rep.ran == []
    full = mesh_seg.run(data, {"k": 2, "shading": 1.0}, device=CPU)
    np.testing.assert_array_equal(r1.seg.face_colors, full.seg.face_colors)
    np.testing.assert_array_equal(r1.seg.labels, full.seg.labels)
    np.testing.assert_array_equal(r0.seg.face_colors, mesh_seg.run(data, {"k": 2}, device=CPU).seg.face_colors)
    assert r1.params["shading"] == 1.0 and r0.params["shading"] != 1.0


def test_a_parameter_made_unused_keys_as_its_default_in_every_pipeline():
    """The mechanism, not one tool: a parameter whose ``used_when`` is false (another mode's)
    counts as its default in the stage keys, so editing it re-runs nothing; once its mode is on,
    it re-runs its stage again. (Flow had this as its own Pipeline subclass; imseg re-ran its
    k-means stages for a k-means edit while the contours method was on.)"""
    calls = []
    ps = ParamSet([
        Param("mode", str, "a", "Mode", "", choices=("a", "b")),
        Param("x", int, 1, "X", "", used_when=lambda v: v["mode"] == "b"),
    ])

    def st(ctx):
        calls.append(ctx.p["x"])
        return ctx.p["x"] if ctx.p["mode"] == "b" else 0

    pipe = Pipeline([Stage("s", st, params=("mode", "x"))], finish=lambda d, out, p, **kw: out["s"], params=ps)
    cpu, cache, data = get_backend("cpu"), StageCache(cap_bytes=1 << 20), object()

    def run(**p):
        return pipe.execute(data, ps.validate(p), device=cpu, cache=cache)

    run()
    res, rep = run(x=5)                                   # mode a: x is unused
    assert rep.ran == [] and res == 0 and calls == [1]
    res, rep = run(mode="b", x=5)
    assert rep.ran == ["s"] and res == 5
    res, rep = run(mode="b", x=6)                         # used now: it re-runs
    assert rep.ran == ["s"] and res == 6
    # the tab's "re-runs from stage N" message asks affected() with the current values
    assert pipe.affected("x", ps.validate({})) == [] and pipe.affected("x") == ["s"]
    assert pipe.affected("x", ps.validate({"mode": "b"})) == ["s"]
    # a fresh run reads what the cache is keyed on: the unused parameter's default
    calls.clear()
    assert pipe.run(data, {"x": 9}, device=cpu) == 0 and calls == [1]


def _imseg_runner(seed):
    """``run(**params) -> RunReport`` of imseg's pipeline on a small random image, one cache."""
    from app.tools import imseg

    img = (np.random.default_rng(seed).random((40, 48, 3)) * 255).astype(np.uint8)
    data = imseg.ImageData(None, img)
    cpu, cache = get_backend("cpu"), StageCache(cap_bytes=1 << 28)

    def run(**p):
        return imseg.PIPELINE.execute(data, imseg.PARAMS.validate(p), device=cpu, cache=cache)[1]
    return run


def test_imseg_kmeans_edit_with_contours_on_reruns_nothing():
    run = _imseg_runner(0)
    run()
    assert run(k_max=7, min_size=33, q=4).ran == []       # the default method is contours


def test_another_methods_stages_are_not_run_timed_or_counted():
    """Stage.when: a stage of another method is skipped (output None), and "stage N of M"
    counts only the stages that apply (imseg's contours said "stage 7 of 8" for a coarseness
    edit, counting the four k-means stages that did nothing)."""
    calls = []
    ps = ParamSet([Param("mode", str, "a", "Mode", "", choices=("a", "b")),
                   Param("x", int, 1, "X", ""), Param("y", int, 1, "Y", "")])

    def st(name):
        def fn(ctx):
            calls.append(name)
            return name
        return fn

    pipe = Pipeline([
        Stage("a1", st("a1"), params=("mode", "x"), when=lambda v: v["mode"] == "a"),
        Stage("b1", st("b1"), params=("mode", "x"), after=(), when=lambda v: v["mode"] == "b"),
        Stage("tail", st("tail"), params=("y",), after=("a1", "b1")),
    ], finish=lambda d, out, p, **kw: dict(out), params=ps)
    cpu, cache, data = get_backend("cpu"), StageCache(cap_bytes=1 << 20), object()

    def run(**p):
        return pipe.execute(data, ps.validate(p), device=cpu, cache=cache)

    out, rep = run()
    assert calls == ["a1", "tail"] and out["b1"] is None and rep.n_stages == 2 and rep.ran == ["a1", "tail"]
    calls.clear()
    _out, rep = run(y=2)
    assert calls == ["tail"] and "re-ran from stage 2 of 2" in rep.describe()
    assert pipe.names(ps.validate({})) == ["a1", "tail"] and pipe.names() == ["a1", "b1", "tail"]
    assert pipe.affected("x", ps.validate({"mode": "b"})) == ["b1", "tail"]
    assert pipe.affected("x", ps.validate({})) == ["a1", "tail"]
    calls.clear()
    out, rep = run(mode="b")
    assert calls == ["b1", "tail"] and out["a1"] is None and rep.reused == []


def test_a_result_from_the_cache_keeps_its_compute_time():
    """A result shown from the cache says how long it took to compute, not "0 ms"."""
    import time as _time

    def slow(ctx):
        _time.sleep(0.05)
        return 1

    pipe = Pipeline([Stage("s", slow)], finish=lambda d, out, p, *, device, elapsed: elapsed)
    cpu, cache, data = get_backend("cpu"), StageCache(cap_bytes=1 << 20), object()
    first, rep1 = pipe.execute(data, {}, device=cpu, cache=cache)
    again, rep2 = pipe.execute(data, {}, device=cpu, cache=cache)
    assert rep2.ran == [] and first >= 0.05 and again == pytest.approx(rep1.seconds["s"])
    assert "computed earlier" in rep2.describe()


def test_imseg_coarseness_edit_counts_only_the_contours_stages():
    run = _imseg_runner(1)
    full = run()
    assert full.ran == ["colour", "superpixels", "merge", "regions"] and full.n_stages == 4
    assert "re-ran from stage 3 of 4 (region merging)" in run(coarseness=2.5).describe()
    assert run(method="kmeans").n_stages == 5   # CIELAB, quantise, k-means, components, features


def test_took_text_and_reused_note_are_the_tabs_one_wording():
    """The flow, mesh, MVS and imseg panels say the same thing the same way (they had four
    copies): a result from the cache keeps its compute time, a live re-run names the re-used
    stages."""
    from app.tools.stages import RunReport, reused_note, took_text

    ran = RunReport(ran=["b"], reused=["a"], labels={"a": "pyramids"})
    cached = RunReport(reused=["a", "b"])
    assert took_text(ran, 0.25) == "in 250 ms" and took_text(None, 2.5, prefix="") == "2.50 s"
    assert took_text(cached, 1.5) == "shown from the cache (computed in 1.50 s)"
    assert reused_note(ran).startswith("re-used from the cache: pyramids (")
    assert reused_note(None) == "" and reused_note(RunReport(ran=["a"])) == ""


# ----------------------------------------------------------------------------- no wait after a deferred stage
class _CountingGPU:
    """The backend surface ``Pipeline.execute`` uses, on a pretend GPU that counts its waits."""

    is_gpu = True
    name = "fake-gpu"

    def __init__(self):
        self.waits = 0

    def synchronize(self):
        self.waits += 1


class _Lazy:
    queues_no_work = True


def test_execute_skips_the_wait_after_an_output_that_queued_nothing():
    ps = ParamSet([Param("a", float, 1.0, "A", "x", minimum=0, maximum=2)])
    pipe = Pipeline([Stage("defer", lambda ctx: _Lazy(), params=("a",)),
                     Stage("also", lambda ctx: _Lazy()),
                     Stage("work", lambda ctx: 1.0)],
                    finish=lambda d, out, p, **kw: out["work"], params=ps)
    dev = _CountingGPU()
    result, report = pipe.execute(Data(np.zeros(2)), {"a": 1.0}, device=dev)
    assert result == 1.0 and report.ran == ["defer", "also", "work"]
    assert dev.waits == 1          # only after the stage that queued work (3 without the rule)


# ----------------------------------------------------------------------------- a deferred output computed later
class _Later:
    """Like ``gpu_kernels.imseg.deferred.Deferred``: nothing held until a later run computes it."""

    queues_no_work = True

    def __init__(self, image):
        self.image = image          # the input: not this output's own bytes
        self.held = None


def test_the_cache_counts_a_deferred_output_once_it_is_computed_and_evicts_for_it():
    image = np.zeros(1000)                                # 8,000 bytes of input, held by the caller
    cache = StageCache(cap_bytes=20_000)
    later = _Later(image)
    assert cache.put(("a",), later) and cache.host_bytes == 0     # the input is not counted
    assert cache.put(("b",), np.zeros(1500))                       # 12,000 bytes
    assert cache.host_bytes == 12_000
    later.held = np.zeros(1500)                            # a live re-run computed it
    hit, val = cache.get(("a",))
    assert hit and val is later
    # now counted (12,000 more): over the 20,000 cap, so the least recently used ("b") goes
    assert ("b",) not in cache and ("a",) in cache and cache.host_bytes == 12_000


def test_per_run_weights_set_each_stages_share_of_the_bar_and_never_stop_a_run():
    from gpu_kernels.jobs import Progress

    ps = ParamSet([Param("a", float, 1.0, "A", "x", minimum=0, maximum=2)])
    stages = [Stage("one", lambda ctx: 1, params=("a",)), Stage("two", lambda ctx: 2)]

    def starts(weights):
        log = []
        pipe = Pipeline(stages, finish=lambda d, out, p, **kw: out["two"], params=ps, weights=weights)
        pipe.execute(Data(np.zeros(2)), {"a": 1.0}, device=get_backend("cpu"),
                     progress=Progress(lambda f, s: log.append((f, s or ""))))
        return next(f for f, s in log if s.startswith("two"))

    assert starts(None) == pytest.approx(0.5)                              # declared: 1 and 1
    assert starts(lambda data, p: {"one": 3.0 * p["a"]}) == pytest.approx(0.75)   # "two" keeps 1
    assert starts(lambda data, p: None) == pytest.approx(0.5)

    def broken(data, p):
        raise ValueError("no size")

    assert starts(broken) == pytest.approx(0.5)


def test_a_dataclass_counts_what_it_caches_beside_its_fields():
    """A mesh's dual graph keeps its CSR weight matrix in an attribute that is not a field: the
    stage cache must count it (session 13: 2 MB at 40k faces were missed)."""
    import dataclasses

    @dataclasses.dataclass
    class G:
        w: np.ndarray

    g = G(np.zeros(10))
    assert output_nbytes(g) == (80, 0)
    g._cache = np.zeros(20)
    assert output_nbytes(g) == (240, 0)
    import scipy.sparse as sp

    g._csr = sp.csr_matrix(np.eye(4))  # data 4 float64, indices 4 int32, indptr 5 int32
    assert output_nbytes(g) == (240 + 32 + 16 + 20, 0)
    g._other = object()  # not an array: not followed
    assert output_nbytes(g) == (240 + 32 + 16 + 20, 0)

    @dataclasses.dataclass(slots=True)
    class S:
        w: np.ndarray

    assert output_nbytes(S(np.zeros(3))) == (24, 0)
