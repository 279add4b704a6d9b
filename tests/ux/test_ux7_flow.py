"""Session 7 (ux2), U5: the flow tool's progress bar follows the run's size (the quality map's
share grows with the pixels over ``max_pixels``), and the pyramids stage reports progress so a
Cancel lands inside it. Qt-free, CPU."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import numpy as np
import pytest

from app.tools import flow as F
from gpu_kernels.backend import get_backend
from gpu_kernels.jobs import Cancelled, Progress


def _pair(H, W, seed=0):
    cv2 = pytest.importorskip("cv2")
    rng = np.random.default_rng(seed)
    a = cv2.resize((rng.random((H // 8, W // 8)) * 255).astype(np.uint8), (W, H), interpolation=cv2.INTER_CUBIC)
    return F.FlowData(img1=a, img2=np.roll(a, (3, 5), axis=(0, 1)), name1="a", name2="b")


def _bar_at_stage_starts(data, params):
    log = []
    pr = Progress(lambda f, s: log.append((f, s or "")))
    F.PIPELINE.execute(data, F.PARAMS.validate(params), device=get_backend("cpu"), progress=pr)
    return {name: next(f for f, s in log if s.startswith(name)) for name in ("flow", "quality map")}


def test_the_quality_maps_share_of_the_bar_follows_the_pixels_over_max_pixels():
    # before: flow 15, quality map 3 whatever the size: the bar was at 80 % when the quality map
    # started, at ~20 % of a 12 Mpx CPU run (the quality map works at full resolution)
    from app.tools.flow_progress import stage_weights

    big = stage_weights(SimpleNamespace(img1=SimpleNamespace(shape=(3000, 4000, 3))), F.PARAMS.validate({}))
    small = stage_weights(SimpleNamespace(img1=SimpleNamespace(shape=(480, 640, 3))), F.PARAMS.validate({}))
    share = {k: w["quality"] / sum(w.values()) for k, w in (("big", big), ("small", small))}
    assert share["big"] > 0.6 and 0.2 < share["small"] < 0.6, share
    # (the timings behind the model, 2 cores: 12 Mpx quality 74-81 % of the run, 0.24 Mpx 44-46 %)
    # another method: its flow stage is the whole run
    other = stage_weights(SimpleNamespace(img1=SimpleNamespace(shape=(480, 640))), F.PARAMS.validate({"method": "lk"}))
    assert other["flow"] == 1.0 and other["quality"] == other["pyramids"] == 0.0
    # through the pipeline: a pair 64x over max_pixels (a 12 Mpx pair at the default, scaled
    # down; measured: the quality map starts at 34 % of the run, the model says 40 %)
    starts = _bar_at_stage_starts(_pair(960, 1280), {"max_pixels": 20_000})
    assert starts["quality map"] < 0.5, starts
    # within max_pixels: the flow is most of the work, the quality map still gets its part
    starts = _bar_at_stage_starts(_pair(480, 640), {})
    assert 0.35 < starts["quality map"] < 0.8, starts


def test_the_weighted_pipeline_keeps_the_stage_cache():
    from app.tools.stage_cache import StageCache

    data = _pair(240, 320)
    p = F.PARAMS.validate({})
    cache = StageCache()
    dev = get_backend("cpu")
    r1, rep1 = F.PIPELINE.execute(data, p, device=dev, cache=cache)
    r2, rep2 = F.PIPELINE.execute(data, p, device=dev, cache=cache)
    assert rep1.ran == ["pyramids", "flow", "quality", "metrics"] and not rep2.ran
    assert np.array_equal(r1.u, r2.u)
    p2 = F.PARAMS.validate({"quality_map": "ncc"})
    _, rep3 = F.PIPELINE.execute(data, p2, device=dev, cache=cache)
    assert rep3.ran[0] == "quality"
    assert F.PIPELINE.stage("flow").weight == 15.0      # the declaration is untouched by a run


def test_a_cancel_lands_inside_the_pyramids_stage():
    # before: stage_pyramids took no progress: a Cancel during its 1.7 s (12 Mpx, CPU) waited for
    # its end and was only seen by the flow stage
    from gpu_kernels.flow import search

    data = _pair(480, 640)
    kw = F._search_kw(F.PARAMS.validate({}))
    seen = []
    ev = threading.Event()

    def cb(f, s):
        seen.append((f, s))
        ev.set()                      # Cancel pressed at the first step

    with pytest.raises(Cancelled):
        search.stage_pyramids(data.img1, data.img2, kw, device=get_backend("cpu"), progress=Progress(cb, ev))
    assert len(seen) == 1, seen
    # the whole run: cancelled in the pyramids stage, the flow never started
    seen.clear()
    ev.clear()

    def cb2(f, s):
        seen.append(s or "")
        if (s or "").startswith("pyramids:"):
            ev.set()

    with pytest.raises(Cancelled):
        F.run(data, {}, device=get_backend("cpu"), progress=Progress(cb2, ev))
    assert not any(s.startswith("flow") for s in seen), seen
    # uncancelled, the bar climbs through the stage and the pyramids are the same arrays
    fr = []
    a = search.stage_pyramids(data.img1, data.img2, kw, device=get_backend("cpu"),
                              progress=lambda f, s: fr.append(f))
    b = search.stage_pyramids(data.img1, data.img2, kw, device=get_backend("cpu"))
    assert fr == sorted(fr) and 0.6 <= fr[-1] <= 1.0 and len(fr) >= 3, fr   # (updates are rate-limited)
    assert a.work == b.work and all(np.array_equal(x, y) for x, y in zip(a.p1 + a.p2, b.p1 + b.p2, strict=True))
