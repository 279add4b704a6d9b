"""Issue 20, the paint share of a live edit: a new result is drawn without redoing what did
not change. The mesh view's software picture recolours a face-number picture drawn once per
mesh and size (the very pixels of a fresh render); with OpenGL the face colours change in place
with one render; the flow view colour-codes through :class:`app.render.flow.FlowPicture`,
once per result and on the device that computed it, and does not convert a frame again that it
already shows."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from app.render import mesh as render_mesh

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples"


def _old_rasterize(vertices, faces, face_colors, *, size, background=(255, 255, 255), markers=None, title=None):
    """The software render as it was before the face-number picture (session 4), the reference."""
    from PIL import Image, ImageDraw

    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    col = np.asarray(face_colors, dtype=np.float64)[:, :3]
    w, h = size
    d, up = render_mesh.view_direction(v)
    right = np.cross(up, d)
    right /= np.linalg.norm(right)
    up2 = np.cross(d, right)
    c = (v.min(0) + v.max(0)) / 2
    p = v - c
    x, y, z = p @ right, p @ up2, p @ d
    sx, sy = max(np.ptp(x), 1e-12), max(np.ptp(y), 1e-12)
    top = 22 if title else 0
    scale = 0.9 * min(w / sx, (h - top) / sy)
    cx, cy = (x.max() + x.min()) / 2, (y.max() + y.min()) / 2
    px = w / 2 + (x - cx) * scale
    py = top + (h - top) / 2 - (y - cy) * scale
    tri = v[f]
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    ln = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.divide(n, ln, out=np.zeros_like(n), where=ln > 0)
    light = d * 0.8 + up2 * 0.45 + right * 0.2
    light /= np.linalg.norm(light)
    shade = 0.35 + 0.65 * np.abs(n @ light)
    rgb = np.clip(col * shade[:, None], 0, 255).astype(np.uint8)
    depth = z[f].mean(axis=1)
    img = Image.new("RGB", (w, h), tuple(background))
    draw = ImageDraw.Draw(img)
    for i in np.argsort(depth):
        a, b, cc = f[i]
        draw.polygon([(px[a], py[a]), (px[b], py[b]), (px[cc], py[cc])], fill=tuple(int(t) for t in rgb[i]))
    if title:
        draw.text((6, 4), title, fill=(0, 0, 0))
    out = np.asarray(img)
    if markers is not None and len(markers[0]):
        mp = np.asarray(markers[0], dtype=np.float64) - c
        ax = w / 2 + (mp @ right - cx) * scale
        ay = top + (h - top) / 2 - (mp @ up2 - cy) * scale
        out = render_mesh.draw_markers(out, np.c_[ax, ay], markers[1], markers[2])
    return out


@pytest.fixture(scope="module")
def creature():
    from app.io.mesh_io import read_mesh

    return read_mesh(SAMPLES / "creature.ply")


@pytest.mark.parametrize("size,title", [((420, 310), None), ((300, 500), "a title")])
def test_recoloured_face_numbers_are_a_fresh_render_pixel_for_pixel(creature, size, title):
    v, f = creature
    rng = np.random.default_rng(1)
    raster = render_mesh.FaceRaster(v, f, size=size, title=title)
    assert (raster.ids >= 0).any() and (raster.ids == -1).any()
    for k in (3, 7):   # two results on one raster: a live k edit
        lab = rng.integers(0, k, len(f))
        pal = rng.integers(0, 256, (k, 3)).astype(np.uint8)
        cols = pal[lab]
        reps = v[f[rng.integers(0, len(f), k)]].mean(axis=1)
        markers = (reps, [str(j) for j in range(k)], pal)
        for m in (None, markers):
            got = raster.picture(cols, markers=m)
            want = _old_rasterize(v, f, cols, size=size, title=title, markers=m)
            assert got.shape == want.shape == (size[1], size[0], 3)
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(render_mesh.rasterize(v, f, cols, size=size, title=title, markers=m), want)
    with pytest.raises(ValueError, match="face colours"):
        raster.picture(np.zeros((3, 3), np.uint8))


def _flow_result(shape=(60, 80), device="cpu", mask=None, seed=0):
    rng = np.random.default_rng(seed)
    u = (rng.standard_normal(shape) * 4).astype(np.float32)
    v = (rng.standard_normal(shape) * 4).astype(np.float32)
    q = rng.random(shape).astype(np.float32)
    data = SimpleNamespace(mask=mask, shape=shape)
    valid = np.ones(shape, bool) if mask is None else mask
    return SimpleNamespace(u=u, v=v, quality=q, data=data, device=device, valid=valid)


@pytest.mark.gpu
def test_flow_picture_of_a_gpu_result_is_made_on_the_gpu_with_the_cpu_bytes():
    from app.render.flow import FlowPicture

    res = _flow_result((1080, 1920), device="cuda:0", seed=4)
    pic = FlowPicture(res)
    assert pic.be.is_gpu
    cpu = FlowPicture(res, device="cpu")
    for kw in ({"max_flow": None, "alpha": 255, "threshold": 0.0}, {"max_flow": 5.0, "alpha": 100, "threshold": 0.4}):
        got = pic.rgba(**kw)
        np.testing.assert_array_equal(got, cpu.rgba(**kw))
    np.testing.assert_array_equal(pic.rgb(max_flow=None), cpu.rgb(max_flow=None))
    assert pic.radius() == cpu.radius()
    for k, x in pic.stats().items():
        assert x == pytest.approx(cpu.stats()[k], rel=1e-5)


@pytest.mark.gpu
def test_flow_picture_on_the_gpu_finds_the_automatic_radius_once(monkeypatch):
    """Redraws with the automatic radius re-use the cached one: no reduction and read-back per
    picture (the kernel's own radius search ran at every redraw before), the same bytes."""
    from app.render.flow import FlowPicture
    from gpu_kernels.flow import colorwheel as cw

    res = _flow_result((240, 320), device="cuda:0", seed=5)
    calls, real = [], cw._gpu_radius
    monkeypatch.setattr(cw, "_gpu_radius", lambda *a: (calls.append(1), real(*a))[1])
    pic, cpu = FlowPicture(res), FlowPicture(res, device="cpu")
    for alpha in (255, 120, 30):
        np.testing.assert_array_equal(pic.rgba(max_flow=None, alpha=alpha, threshold=0.2),
                                      cpu.rgba(max_flow=None, alpha=alpha, threshold=0.2))
    np.testing.assert_array_equal(pic.rgb(max_flow=None), cpu.rgb(max_flow=None))
    assert len(calls) == 1, calls


#: the views' tests need Qt and pytest-qt (the GPU host has Qt from a carry, not pytest-qt: the
#: GPU test above runs there without them)
needs_qt = pytest.mark.skipif(not (importlib.util.find_spec("PySide6") and importlib.util.find_spec("pytestqt")),
                              reason="needs PySide6 and pytest-qt")


def _face_colors(n, k, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (k, 3)).astype(np.uint8)[rng.integers(0, k, n)]


@needs_qt
def test_mesh_view_recolours_without_drawing_the_triangles_again(qtbot, monkeypatch, creature):
    """The static picture (no OpenGL): a new result (a live k edit) recolours the face numbers;
    the triangles are drawn again only for a new mesh or a new size. Fails without the cache:
    every result drew them (130 ms of the 17k-face mesh's k edit on the H100 host)."""
    from app.tabs.mesh_view import MeshView

    v, f = creature
    built = []
    real = render_mesh.FaceRaster.__init__
    monkeypatch.setattr(render_mesh.FaceRaster, "__init__", lambda self, *a, **k: (built.append(1), real(self, *a, **k))[1])
    view = MeshView(allow_3d=False)
    qtbot.addWidget(view)
    view.resize(500, 420)
    view.show()
    qtbot.wait(20)
    view.set_mesh(v, f)
    n0 = len(built)
    assert n0 == 1
    for k, seed in ((3, 1), (5, 2), (6, 3)):
        cols = _face_colors(len(f), k, seed)
        reps = v[f[:k]].mean(axis=1)
        view.show_reps = True
        view.set_segmentation(cols, reps_points=reps, reps_colors=cols[:k])
        size = view._raster.size
        want = _old_rasterize(v, f, cols, size=size, markers=(reps, [str(j) for j in range(k)], cols[:k]))
        np.testing.assert_array_equal(view.render_image(size), want)
        pix = view.static.pixmap()
        assert (pix.width(), pix.height()) == size
    assert len(built) == n0, "a new result drew the triangles again"
    view.set_mesh(v * 2.0, f)          # a new mesh: drawn again
    assert len(built) == n0 + 1


class _FakePlotter:
    """What MeshView's OpenGL path calls on a pyvistaqt plotter, recorded."""

    def __init__(self):
        self.calls = []
        self.renderer = SimpleNamespace(RemoveViewProp=lambda a: None)

    def add_mesh(self, mesh, **kw):
        self.calls.append(("add_mesh", kw.get("name")))
        return SimpleNamespace(GetProperty=lambda: SimpleNamespace(SetEdgeVisibility=lambda on: None))

    def render(self):
        self.calls.append(("render",))

    def remove_actor(self, *a, **k):
        self.calls.append(("remove_actor", a[0] if a else None))

    def clear_actors(self):
        self.calls.append(("clear_actors",))


@needs_qt
def test_mesh_view_with_opengl_updates_the_colours_in_place_with_one_render(qtbot, monkeypatch, creature):
    """A k change with a 3-D view: the mesh actor stays (no add_mesh), the colour scalars change
    in place, and the view renders once (it rendered three times: colours, representatives,
    picked face)."""
    pytest.importorskip("pyvista")
    from app.tabs import mesh_view as mv

    v, f = creature
    view = mv.MeshView(allow_3d=False)
    qtbot.addWidget(view)
    fake = _FakePlotter()
    view.plotter = fake
    monkeypatch.setattr(view, "_frame", lambda: None)
    monkeypatch.setattr(view._stack, "setCurrentWidget", lambda w: None)
    view.set_mesh(v, f)
    assert ("add_mesh", "mesh") in fake.calls
    arr = view.mesh.cell_data["colors"]
    for k, seed in ((3, 1), (5, 2)):
        fake.calls.clear()
        cols = _face_colors(len(f), k, seed)
        view.set_segmentation(cols)
        assert ("add_mesh", "mesh") not in fake.calls and ("clear_actors",) not in fake.calls
        assert fake.calls.count(("render",)) == 1, fake.calls
        np.testing.assert_array_equal(np.asarray(view.mesh.cell_data["colors"]), cols)
        assert np.shares_memory(np.asarray(view.mesh.cell_data["colors"]), np.asarray(arr)), "not in place"


@needs_qt
def test_flow_view_colours_once_per_result_and_keeps_its_frames(qtbot, monkeypatch):
    """The colour wheel of a result is the NumPy path's RGBA (alpha where known and above the
    threshold); the summary numbers and the radius are computed once per result; a redraw does
    not convert the first frame again."""
    from app.render import flow as render_flow
    from app.tabs.flow_view import FlowView
    from gpu_kernels.flow import colorwheel as cw

    view = FlowView()
    qtbot.addWidget(view)
    img = np.random.default_rng(2).integers(0, 255, (60, 80, 3), dtype=np.uint8)
    view.set_frames(img, img)
    mask = np.ones((60, 80), bool)
    mask[:5] = False
    res = _flow_result(mask=mask)
    radius_calls, colour_calls = [], []
    real_radius, real_colour = cw.flow_radius, cw.flow_to_color
    monkeypatch.setattr(cw, "flow_radius", lambda *a, **k: (radius_calls.append(1), real_radius(*a, **k))[1])
    monkeypatch.setattr(cw, "flow_to_color", lambda *a, **k: (colour_calls.append(1), real_colour(*a, **k))[1])
    set_left = []
    real_set = view.img_left.setImage
    monkeypatch.setattr(view.img_left, "setImage", lambda *a, **k: (set_left.append(1), real_set(*a, **k))[1])
    for thr, opacity in ((0.0, 1.0), (0.5, 0.6), (0.9, 0.3)):
        view.show_left(img, res, style="Colour wheel", flow_opacity=opacity, quality_overlay=False,
                       quality_opacity=0.5, threshold=thr, spacing=16, max_flow=None)
        want = cw.flow_to_rgba(res.u, res.v, valid=mask, alpha=int(round(255 * opacity)), quality=res.quality,
                               threshold=thr, device="cpu")
        np.testing.assert_array_equal(view.img_flow.image, want)
        assert view.img_flow.levels is None   # uint8 shown as it is: no per-paint level mapping
        view.picture(res).radius()
    assert set_left == [], "the first frame was converted and set again on a redraw"
    assert len(radius_calls) == 1
    assert len(colour_calls) == 1, "an opacity or threshold edit coloured the flow again (CPU)"
    pic = view.picture(res)
    assert pic is view.picture(res) and isinstance(pic, render_flow.FlowPicture)
    st = pic.stats()
    mag = np.hypot(res.u, res.v)[mask]
    assert st["max_mag"] == pytest.approx(float(mag.max()), rel=1e-6)
    assert st["mean_mag"] == pytest.approx(float(mag.mean()), rel=1e-5)
    assert st["mean_quality"] == pytest.approx(float(res.quality[mask].mean()), rel=1e-5)
    other = _flow_result(seed=5)
    assert view.picture(other) is not pic and view.picture(res) is pic   # the live and the pinned are kept


@needs_qt
def test_eight_bit_pictures_are_shown_without_levels(qtbot):
    """An 8-bit picture with levels (0, 255) is mapped again by pyqtgraph at every paint (about
    10 ms at 1080p); without levels it is shown as it is, with the same pixels."""
    from app.tabs.imseg_views import ImsegView

    canvas = ImsegView()
    qtbot.addWidget(canvas)
    rgb = np.random.default_rng(0).integers(0, 256, (40, 50, 3), dtype=np.uint8)
    canvas.set_picture(rgb)
    assert canvas.img.levels is None
    canvas.img.render()
    q = canvas.img.qimage
    px = q.pixelColor(7, 5)
    assert (px.red(), px.green(), px.blue()) == tuple(int(c) for c in rgb[5, 7])
    canvas.set_picture(rgb.astype(np.float32) / 255.0)   # float in 0..1: levels kept
    assert canvas.img.levels is not None


@needs_qt
def test_quality_overlay_masks_are_found_once_per_result(qtbot, monkeypatch):
    """With the quality overlay on, an opacity or threshold edit redraws without finding the
    occlusions again (0.2-0.7 s at 1080p on a CPU); a new result finds them anew."""
    from app.tabs import flow_view as fv

    view = fv.FlowView()
    qtbot.addWidget(view)
    img = np.zeros((60, 80, 3), np.uint8)
    view.set_frames(img, img)
    calls = []
    real = fv.failure_masks
    monkeypatch.setattr(fv, "failure_masks", lambda r: (calls.append(1), real(r))[1])
    res = _flow_result()
    res.flow = SimpleNamespace(extras={})
    for opacity in (0.2, 0.5, 0.9):
        view.show_left(img, res, style="Colour wheel", flow_opacity=0.7, quality_overlay=True,
                       quality_opacity=opacity, threshold=0.1, spacing=16, max_flow=None)
        np.testing.assert_array_equal(view.img_quality.image, fv.quality_overlay_rgba(res, opacity, masks=real(res)))
    assert len(calls) == 1
    other = _flow_result(seed=3)
    other.flow = SimpleNamespace(extras={})
    view.show_left(img, other, style="None", flow_opacity=0.7, quality_overlay=True, quality_opacity=0.5,
                   threshold=0.1, spacing=16, max_flow=None)
    assert len(calls) == 2


def test_flow_picture_falls_back_to_the_cpu_where_the_gpu_fails(caplog):
    """A GPU that fails while drawing (out of memory, a lost context) leaves the picture to the
    CPU, with the same bytes, and says so in the log; no exception reaches the view."""
    from contextlib import nullcontext

    from app.render.flow import FlowPicture
    from gpu_kernels.flow import colorwheel as cw

    def boom(*a, **k):
        raise MemoryError("out of memory allocating 8,294,400 bytes")

    broken = SimpleNamespace(is_gpu=True, xp=SimpleNamespace(asarray=boom, hypot=boom), activate=nullcontext,
                             asnumpy=np.asarray)
    res = _flow_result(mask=np.ones((60, 80), bool))
    pic = FlowPicture(res, device=broken)
    with caplog.at_level("WARNING", logger="app.render.flow"):
        got = pic.rgba(max_flow=None, alpha=200, threshold=0.3)
    np.testing.assert_array_equal(got, cw.flow_to_rgba(res.u, res.v, valid=res.data.mask, alpha=200,
                                                       quality=res.quality, threshold=0.3, device="cpu"))
    assert not pic.be.is_gpu and "GPU failed" in caplog.text
    assert pic.stats()["max_mag"] > 0 and pic.radius() > 0
