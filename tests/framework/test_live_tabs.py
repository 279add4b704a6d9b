"""Live tuning in each of the five real tabs (offscreen, CPU, small inputs): an edit with Live
on re-runs without Run and shows what a full run with those parameters gives; undo brings back
the earlier parameters and result from the cache; Pin lists the parameter that differs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from app.tools import tool_by_name  # noqa: E402
from app.tools.stages import StageCache  # noqa: E402
from gpu_kernels.backend import get_backend  # noqa: E402

pytestmark = pytest.mark.gui

CPU = get_backend("cpu")


def _input(name):
    if name == "mesh-seg":
        from app.tools import mesh_seg

        return mesh_seg.load(mesh_seg.samples()[0]), {"k": 2}, ("epsilon", 0.1)
    if name == "flow":
        from app.tools import flow

        return flow.load(flow.samples()[0]), {}, ("lam", 0.2)
    if name == "echo":
        from app.tools import echo
        from gpu_kernels.echo.synthetic import make_pair

        f, m, gt = make_pair(16, shift=(0.5, -0.5, 0.5), seed=2)
        data = echo.EchoData(np.stack([f, m]).astype(np.float32), (1.0, 1.0, 1.0), ["f", "m"], truth={(0, 1): gt})
        return data, {"levels": 1, "warps": 1, "iters": 5}, ("reference", 1)
    if name == "mvs":
        from app.tools import mvs
        from gpu_kernels.mvs.synth import render_synthetic_scene

        data = mvs.MVSData(render_synthetic_scene(n_views=8, width=64, height=48).scene)
        return data, {"views": "0,1", "neighbors": 4, "min_views": 2}, ("fuse_tol", 0.02)
    if name == "imseg":
        from app.tools import imseg

        data = imseg.load(imseg.samples()[0])
        data = dataclasses.replace(data, image=np.ascontiguousarray(data.image[:120, :160]))
        return data, {}, ("coarseness", 6.0)  # the default method's (min_size is k-means': unused, it re-runs nothing)
    raise KeyError(name)


def _arrays(obj, out=None, prefix="", depth=0):
    out = {} if out is None else out
    if isinstance(obj, np.ndarray):
        out[prefix] = obj
    elif depth < 5 and dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            if f.name != "data":
                _arrays(getattr(obj, f.name), out, f"{prefix}.{f.name}", depth + 1)
    elif depth < 5 and isinstance(obj, list | tuple):
        for i, x in enumerate(obj):
            _arrays(x, out, f"{prefix}[{i}]", depth + 1)
    return out


def assert_same(a, b, *, recoloured=()):
    """Every array of the two results equal; those named in ``recoloured`` (a mesh part's colours, which the tab gives
    the colour of the part it overlaps in the pinned result: ``MeshTab.stable_colors``) equal as sets of rows."""
    aa, bb = _arrays(a), _arrays(b)
    assert aa.keys() == bb.keys() and aa
    for k in aa:
        if k in recoloured:
            assert {tuple(r) for r in np.asarray(aa[k]).reshape(-1, 3)} == \
                {tuple(r) for r in np.asarray(bb[k]).reshape(-1, 3)}, k
            continue
        np.testing.assert_array_equal(aa[k], bb[k], err_msg=k)


@pytest.mark.parametrize("name", [pytest.param("mesh-seg", marks=pytest.mark.slow), "flow", "echo",
                                  pytest.param("mvs", marks=pytest.mark.slow), "imseg"])
def test_live_edit_undo_and_pin_in_the_real_tab(name, open_tab, qtbot, tmp_path):
    tool = tool_by_name(name)
    data, base, (param, value) = _input(name)
    tab = open_tab(tool.tab_class())
    tab.host.device = "cpu"
    tab.cache = StageCache(cap_bytes=512 << 20)
    tab.set_input(data, getattr(data, "path", None) or tmp_path / f"{name}.in")
    tab.form.set_values(base)

    def idle():
        qtbot.waitUntil(lambda: not tab.runner.is_running() and not tab._live_timer.isActive()
                        and not tab._pending_live and tab.result is not None, timeout=60000)

    with qtbot.waitSignal(tab.result_shown, timeout=60000):
        tab.live_check.setChecked(True)
    idle()
    first = tab.result
    p0 = tab.shown_params()
    assert tab.pin()
    with qtbot.waitSignal(tab.result_shown, timeout=60000):
        tab.form.set_value(param, value)  # no Run pressed
    idle()
    p1 = tab.shown_params()
    assert p1[param] == value
    # (mesh: the live result's parts take the pinned parts' colours, so its colours are the fresh run's palette in
    # another order where the part numbers differ, as they do here since session 25's integer-k model)
    assert_same(tab.result, tool.run(data, p1, device=CPU, progress=None),
                recoloured=(".seg.face_colors", ".seg.cluster_colors") if name == "mesh-seg" else ())
    if name == "mesh-seg":  # (and the face colours are those part colours, blended as a run blends them)
        from gpu_kernels.mesh.colors import blend_face_colors

        seg = tab.result.seg
        np.testing.assert_array_equal(seg.face_colors, blend_face_colors(seg.memberships, seg.labels, seg.cluster_colors,
                                                                         shading=p1["shading"]))
    stages = tool.pipeline().affected(param)
    assert tab.last_report.ran == stages, tab.last_report
    assert [r[0] for r in tab.differing_params()] == [tool.params[param].label]
    assert tab.compare_table.rowCount() == 1
    sp = tab.splitter   # the pinned and the live halves side by side are equally wide (same zoom)

    def halves():
        return sp.sizes()[sp.indexOf(tab._pinned_box)], sp.sizes()[sp.indexOf(tab.view)]
    qtbot.waitUntil(lambda: abs(halves()[0] - halves()[1]) <= 1, timeout=3000)
    # and the same height for the views' contents: the live half leaves the caption's room free
    pinned_view = tab._pinned_slot["view"]
    assert abs(tab.view.contentsRect().height() - pinned_view.contentsRect().height()) <= 1
    margins = tab._view_margins
    tab.unpin()
    assert (tab.view.contentsMargins().top(), tab.view.contentsMargins().left()) == (margins[1], margins[0])
    qtbot.wait(200)  # the history step is recorded after the debounce
    assert tab.undo()
    idle()
    assert tab.shown_params() == p0 and tab.last_report.ran == []  # from the cache
    assert_same(tab.result, first)
