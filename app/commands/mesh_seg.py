"""``gpulab mesh-seg``: segment a mesh into meaningful parts (Katz-Tal fuzzy clustering).

::

    gpulab mesh-seg IN -o OUT.ply [--k K|auto] [--delta D|auto] [--eta-convex E|auto]
                    [--epsilon EPS] [--apsp gpu-sym|gpu|cpu|cpu-mt|auto]
                    [--labels OUT.seg] [--segments-dir DIR] [--segments-format ply|obj|off|stl]
                    [--max-faces N] [--max-iter N] [--device cpu|cuda|cuda:N|auto] [--quiet]

Progress goes to stderr, the summary (k, faces, time per stage, device, warnings) to
stdout. Every output is checked before the work starts and written atomically at the end,
so a bad input, an error or Ctrl+C leaves none of them behind.

The module also holds :func:`demo` (``gpulab demo``) and :func:`render_png`, which draws a
coloured mesh off-screen with pyvista, or with a small NumPy/Pillow rasteriser where
OpenGL is not available.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import pathlib
import shutil
import sys
import textwrap
import time
from collections.abc import Sequence

import numpy as np

from gpu_kernels.jobs import Progress, as_progress

from ..errors import UserError
from ..io import mesh_io
from .common import add_device_arg, cli_progress, end_progress_line, select_device

__all__ = [
    "register",
    "run",
    "demo",
    "render_png",
    "samples_dir",
    "sample_meshes",
    "APSP_CHOICES",
    "too_large_message",
]

log = logging.getLogger(__name__)

#: above this many faces a CPU run is slow; the CLI says so and the tab offers to simplify
CPU_COMFORT_FACES = 12_000

APSP_CHOICES = ("auto", "gpu-sym", "gpu", "cpu", "cpu-mt")
GPU_APSP = ("gpu-sym", "gpu")


# ----------------------------------------------------------------------------- samples
def samples_dir() -> pathlib.Path:
    """The folder of bundled sample meshes (``resources/samples`` in a checkout)."""
    here = pathlib.Path(__file__).resolve()
    for cand in (here.parents[2] / "resources" / "samples", here.parents[1] / "resources" / "samples"):
        if cand.is_dir():
            return cand
    return here.parents[2] / "resources" / "samples"


def sample_meshes() -> list[pathlib.Path]:
    """Bundled sample meshes, the default (``dumbbell``) first."""
    d = samples_dir()
    if not d.is_dir():
        return []
    files = sorted(p for p in d.iterdir() if p.suffix.lower() in mesh_io.MESH_EXTENSIONS)
    order = {"dumbbell": 0, "creature": 1, "table": 2}
    return sorted(files, key=lambda p: (order.get(p.stem, 99), p.name))


# ----------------------------------------------------------------------------- argument types
def _k_value(text: str):
    t = text.strip().lower()
    if t == "auto":
        return "auto"
    try:
        k = int(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"k must be a whole number of parts or 'auto', not {text!r}") from None
    if k < 1:
        raise argparse.ArgumentTypeError(f"k must be at least 1, not {k}")
    return k


def _auto_float(lo: float, hi: float, name: str, *, lo_open: bool = False):
    def parse(text: str):
        t = text.strip().lower()
        if t == "auto":
            return None
        try:
            x = float(t)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number or 'auto', not {text!r}") from None
        if not math.isfinite(x) or x < lo or x > hi or (lo_open and x == lo):
            rng = f"({lo}, {hi}]" if lo_open else f"[{lo}, {hi}]"
            raise argparse.ArgumentTypeError(f"{name} must lie in {rng}, not {text}")
        return x

    return parse


def _epsilon(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"epsilon must be a number, not {text!r}") from None
    if not math.isfinite(x) or not 0.0 <= x < 1.0:
        raise argparse.ArgumentTypeError(f"epsilon must lie in [0, 1), not {text}")
    return x


def _positive_int(name: str, minimum: int = 1):
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number, not {text!r}") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"{name} must be at least {minimum}, not {n}")
        return n

    return parse


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "mesh-seg",
        help="segment a mesh into parts (Katz-Tal fuzzy clustering on the dual graph)",
        description=textwrap.fill(
            "Segment a triangle mesh into meaningful parts: a weighted dual graph, all-pairs "
            "shortest paths (on the GPU when there is one), fuzzy clustering and minimum-cut "
            "boundaries. Writes a PLY whose faces are coloured by part, and optionally the "
            "labels in the Princeton Segmentation Benchmark format and one mesh per part.", 78
        ),
        epilog=(
            "example: gpulab mesh-seg bunny.off -o bunny-parts.ply --labels bunny.seg --k auto\n"
            "Parameters left at 'auto' are chosen per mesh by the library."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("input", metavar="IN", type=pathlib.Path,
                   help="input mesh: anything pymeshlab reads (PLY, OBJ, OFF, STL, 3MF, ...)")
    p.add_argument("-o", "--output", metavar="OUT.ply", type=pathlib.Path, required=True,
                   help="output PLY with per-face colours (white = uncertain, cluster colour = certain)")
    p.add_argument("--k", metavar="K|auto", type=_k_value, default="auto",
                   help="number of parts, or 'auto' to choose it from the representatives' "
                        "distances (default: auto)")
    p.add_argument("--delta", metavar="D|auto", type=_auto_float(0.0, 1.0, "delta"), default=None,
                   help="weight of geodesic against angular distance in [0, 1] (default: auto)")
    p.add_argument("--eta-convex", metavar="E|auto", type=_auto_float(0.0, 1.0, "eta-convex", lo_open=True),
                   default=None, dest="eta_convex",
                   help="angular weight of convex edges relative to concave ones, in (0, 1] (default: auto)")
    p.add_argument("--epsilon", metavar="EPS", type=_epsilon, default=0.04,
                   help="a face is fuzzy when its two best memberships p1 >= p2 satisfy "
                        "(p1 - p2) / (p1 + p2) <= EPS; a minimum cut decides it (default: 0.04)")
    p.add_argument("--apsp", choices=APSP_CHOICES, default="auto",
                   help="all-pairs shortest-path method: gpu-sym (tiled Floyd-Warshall, half the "
                        "memory), gpu, cpu (Dijkstra), cpu-mt (Dijkstra on all cores) or auto")
    p.add_argument("--labels", metavar="OUT.seg", type=pathlib.Path, default=None,
                   help="also write the labels, one integer per line, line i for face i (PSB format)")
    p.add_argument("--segments-dir", metavar="DIR", type=pathlib.Path, default=None,
                   help="also write each part as its own mesh, DIR/segment_000.ply and so on")
    p.add_argument("--segments-format", choices=mesh_io.SEGMENT_FORMATS, default="ply",
                   help="file format of --segments-dir (default: ply, coloured by part)")
    p.add_argument("--max-faces", metavar="N", type=_positive_int("--max-faces", 4), default=None,
                   help="simplify a mesh with more than N faces to N faces (quadric edge collapse) "
                        "before clustering, then carry the labels back to every original face")
    p.add_argument("--max-iter", metavar="N", type=_positive_int("--max-iter"), default=20,
                   help="maximum clustering iterations (default: 20)")
    add_device_arg(p)
    p.add_argument("--quiet", "-q", action="store_true", help="do not print progress")
    p.set_defaults(func=run)


# ----------------------------------------------------------------------------- checks
def _check_outputs(args) -> list[pathlib.Path]:
    """Validate every output path before any work; return them (for clean-up)."""
    out = args.output
    if out.suffix.lower() != ".ply":
        raise UserError(f"-o {out}: the coloured mesh is written as PLY; give a name ending in .ply")
    outs: list[pathlib.Path] = [out]
    if args.labels is not None:
        if args.labels.suffix.lower() in mesh_io.MESH_EXTENSIONS:
            raise UserError(f"--labels {args.labels}: labels are a .seg text file, not a mesh")
        outs.append(args.labels)
    for p in outs:
        mesh_io.check_output_path(p)
    if args.segments_dir is not None:
        d = args.segments_dir
        if d.exists() and not d.is_dir():
            raise UserError(f"--segments-dir {d}: a file has that name; give a folder")
        parent = d.parent if str(d.parent) else pathlib.Path(".")
        if not parent.is_dir():
            raise UserError(f"--segments-dir {d}: the folder {parent} does not exist")
        if d.is_dir():
            foreign = [x.name for x in d.iterdir() if not mesh_io._SEGMENT_FILE.fullmatch(x.name)]
            if foreign:
                raise UserError(f"--segments-dir {d}: the folder holds other files ({foreign[0]}, ...); "
                                "give a new or empty folder")
    resolved = [p.resolve() for p in outs]
    if len(set(resolved)) != len(resolved):
        raise UserError("-o and --labels name the same file; give two different names")
    if args.input.resolve() in resolved:
        raise UserError(f"{args.input}: an output would overwrite the input mesh; choose another name")
    return outs


def _check_apsp(method: str, backend) -> None:
    if method in GPU_APSP and not backend.is_gpu:
        from gpu_kernels.backend import _no_cuda_reason

        why = _no_cuda_reason() or "the CPU was selected (--device cpu)"
        raise UserError(
            f"--apsp {method} runs on a CUDA GPU, but {why}; use --apsp cpu-mt (or cpu), or "
            "--device cuda on a machine with a GPU"
        )


def too_large_message(exc, *, option: str = "--max-faces") -> str:
    """Say that the mesh is too large and which face count would fit."""
    n = getattr(exc, "n_faces", None)
    m = getattr(exc, "max_faces", None)
    if m:
        suggest = _round_down(int(m))
        return (f"the mesh has {n:,} faces; its distance matrix does not fit in memory (at most about "
                f"{int(m):,} faces fit); rerun with {option} {suggest} to simplify it to {suggest:,} "
                "faces first (labels are carried back to every original face)")
    return f"the mesh is too large for the distance matrix; rerun with {option} N to simplify it first"


def _round_down(m: int) -> int:
    """A round number at most ``m`` (two significant digits)."""
    if m < 100:
        return max(m, 4)
    p = 10 ** (len(str(m)) - 2)
    return max(4, (m // p) * p)


# ----------------------------------------------------------------------------- running
def segment(vertices, faces, *, k="auto", delta=None, eta_convex=None, epsilon=0.04, apsp="auto",
            max_iter=20, max_faces=None, device=None, progress=None):
    """Call the library's ``segment_mesh`` (shared by the CLI, the tab and the demo)."""
    from gpu_kernels.mesh.segment import segment_mesh

    return segment_mesh(
        vertices, faces, k=k, delta=delta, eta_convex=eta_convex, epsilon=epsilon,
        apsp_method=apsp, max_iter=max_iter, max_faces=max_faces, simplify=max_faces is not None,
        device=device, progress=progress,
    )


_STAGE_NAMES = {"clean": "clean-up", "dual_graph": "dual graph", "simplify": "simplify", "apsp": "APSP",
                "clustering": "clustering", "cut": "cut", "transfer": "transfer"}


def _fmt_s(t) -> str:
    try:
        t = float(t)
    except (TypeError, ValueError):
        return str(t)
    return f"{t * 1000:.0f} ms" if t < 1.0 else f"{t:.2f} s"


def summary_lines(name: str, vertices, faces, seg, elapsed: float, device_label: str) -> list[str]:
    """The human-readable summary printed by the CLI (also shown in the tab's log)."""
    info = dict(getattr(seg, "info", {}) or {})
    params = dict(info.get("params", {}) or {})
    lines = [f"{name}: {len(vertices):,} vertices, {len(faces):,} faces"]
    if info.get("simplified") and not any("simplified" in str(w) for w in info.get("warnings", [])):
        lines.append("  simplified for clustering; labels carried back to every face")
    k_req = params.get("k", "auto")
    lines.append(f"  parts (k): {int(seg.k)}" + (" (auto)" if str(k_req) == "auto" else f" (asked for {k_req})"))
    shown = []
    for key, label in (("delta", "delta"), ("eta_convex", "eta_convex")):
        val = params.get(key)
        if val is not None:
            auto = " (auto)" if params.get(f"{key}_auto") else ""
            shown.append(f"{label} = {float(val):.3g}{auto}")
    if params.get("epsilon") is not None:
        shown.append(f"epsilon = {float(params['epsilon']):.3g}")
    its = info.get("iterations")
    if its:
        its = its if isinstance(its, list | tuple) else [its]
        conv = "" if info.get("converged", True) else f", stopped at the cap of {params.get('max_iter')}"
        shown.append(f"iterations = {max(its)}{conv}")
    if shown:
        lines.append("  parameters: " + ", ".join(shown))
    method = info.get("method") or params.get("apsp_method")
    lines.append(f"  device: {info.get('device', device_label)}; APSP: {method}")
    timings = {k: v for k, v in (info.get("timings") or {}).items() if k != "total" and v}
    if timings:
        lines.append("  time: " + ", ".join(f"{_STAGE_NAMES.get(k, k)} {_fmt_s(v)}" for k, v in timings.items())
                     + f"; total {_fmt_s(elapsed)}")
    else:
        lines.append(f"  time: {_fmt_s(elapsed)}")
    n_fuzzy = int(np.count_nonzero(getattr(seg, "fuzzy", np.zeros(0, bool))))
    lines.append(f"  fuzzy faces resolved by minimum cut: {n_fuzzy:,}")
    try:
        table = seg.cluster_table(mesh_io.face_areas(vertices, faces))
    except Exception:  # the summary must never fail the run
        table = []
    if table:
        lines.append("  part  faces     area %  colour")
        for row in table:
            col = row.get("color", row.get("colour", ()))
            hexcol = "#" + "".join(f"{int(c):02x}" for c in col) if len(col) == 3 else ""
            frac = row.get("area_fraction")
            if frac is None and row.get("area") is not None:
                tot = sum(float(r.get("area", 0)) for r in table) or 1.0
                frac = float(row["area"]) / tot
            lines.append(f"  {int(row.get('label', row.get('id', 0))):4d}  {int(row.get('faces', 0)):8,}  "
                         f"{100 * float(frac or 0):6.1f}  {hexcol}")
    for w in info.get("warnings", []) or []:
        lines.append(f"  warning: {w}")
    return lines


def run(args: argparse.Namespace) -> int:
    from gpu_kernels.mesh.segment import MeshTooLargeError

    outs = _check_outputs(args)
    be = select_device(args)
    _check_apsp(args.apsp, be)
    read_warnings: list[str] = []
    t0 = time.perf_counter()
    vertices, faces = mesh_io.read_mesh(args.input, warnings=read_warnings)
    progress = cli_progress(quiet=args.quiet)
    if not be.is_gpu and args.max_faces is None and len(faces) > CPU_COMFORT_FACES and not args.quiet:
        print(f"gpulab: note: {len(faces):,} faces on the CPU can take many minutes (the shortest paths "
              f"grow with the cube of the face count); --max-faces {CPU_COMFORT_FACES} simplifies first",
              file=sys.stderr)
    progress.update(0.0, f"read {args.input.name}: {len(faces):,} faces")
    try:
        seg = segment(
            vertices, faces, k=args.k, delta=args.delta, eta_convex=args.eta_convex,
            epsilon=args.epsilon, apsp=args.apsp, max_iter=args.max_iter, max_faces=args.max_faces,
            device=be, progress=progress,
        )
    except MeshTooLargeError as exc:
        end_progress_line()
        raise UserError(f"{args.input}: {too_large_message(exc)}") from None
    elapsed = time.perf_counter() - t0
    end_progress_line()

    written = _write_outputs(args, vertices, faces, seg, outs)
    lines = summary_lines(str(args.input), vertices, faces, seg, elapsed, be.label)
    lines[1:1] = [f"  warning: {w}" for w in read_warnings]
    lines += [f"wrote {p}" for p in written]
    print("\n".join(lines))
    sys.stdout.flush()
    return 0


def _write_outputs(args, vertices, faces, seg, outs) -> list[pathlib.Path]:
    """Write every output; if one fails, remove those this run created."""
    created: list[pathlib.Path] = []
    existed = {p: p.exists() for p in outs}
    seg_dir_existed = args.segments_dir is not None and args.segments_dir.exists()
    try:
        mesh_io.write_colored_ply(args.output, vertices, faces, seg.face_colors)
        created.append(args.output)
        if args.labels is not None:
            mesh_io.write_seg(args.labels, seg.labels, n_faces=len(faces))
            created.append(args.labels)
        if args.segments_dir is not None:
            files = mesh_io.write_segments(args.segments_dir, vertices, faces, seg.labels,
                                           fmt=args.segments_format, colors=seg.cluster_colors)
            created.append(args.segments_dir)
            return [*created[:-1], *files]
    except BaseException:
        for p in created:
            if p.is_file() and not existed.get(p, False):
                p.unlink(missing_ok=True)
            elif p.is_dir() and not seg_dir_existed:
                shutil.rmtree(p, ignore_errors=True)
        raise
    return created


# ----------------------------------------------------------------------------- pictures
def render_png(path, vertices, faces, face_colors, *, size: tuple[int, int] = (900, 700),
               title: str | None = None, edges: bool = False) -> pathlib.Path:
    """Draw the mesh with its face colours into a PNG, off-screen.

    Uses pyvista's off-screen plotter (VTK picks EGL/OSMesa without a display); if that is
    not available, falls back to :func:`rasterize`, a NumPy/Pillow painter's-algorithm
    renderer, so a picture is always written.
    """
    path = pathlib.Path(path)
    try:
        img = _render_pyvista(vertices, faces, face_colors, size, title, edges)
    except Exception as exc:  # no OpenGL at all: draw it ourselves
        log.info("off-screen OpenGL rendering failed (%s); using the software rasteriser", exc)
        img = rasterize(vertices, faces, face_colors, size=size)
    from PIL import Image

    from ..io.atomic import atomic_write

    with atomic_write(path, "wb") as fh:
        Image.fromarray(img).save(fh, format="PNG")
    return path


def offscreen_gl_reason() -> str:
    """Why VTK cannot render off-screen here ("" when it can, as far as we can tell).

    VTK needs an X display, or EGL/OSMesa to render without one; with none of them it may
    abort the process instead of raising, so the software rasteriser is used up front.
    """
    if os.environ.get("GPULAB_NO_OPENGL", "") not in ("", "0"):
        return "GPULAB_NO_OPENGL is set"
    if os.environ.get("DISPLAY") or sys.platform in ("win32", "darwin"):
        return ""
    import ctypes.util

    if ctypes.util.find_library("EGL") or ctypes.util.find_library("OSMesa"):
        return ""
    return "no X display and neither EGL nor OSMesa is installed"


def _render_pyvista(vertices, faces, face_colors, size, title, edges) -> np.ndarray:
    why = offscreen_gl_reason()
    if why:
        raise RuntimeError(why)
    import pyvista as pv

    if not os.environ.get("DISPLAY"):
        # VTK tries X11 first and warns before it falls back to EGL/OSMesa: not news
        import vtk

        vtk.vtkLogger.SetStderrVerbosity(vtk.vtkLogger.VERBOSITY_ERROR)
    mesh = to_polydata(vertices, faces, face_colors)
    pl = pv.Plotter(off_screen=True, window_size=list(size))
    try:
        pl.set_background("white")
        pl.add_mesh(mesh, scalars="colors", rgb=True, show_edges=edges, edge_color="#404040",
                    smooth_shading=False, lighting=True)
        if title:
            pl.add_text(title, font_size=10, color="black")
        set_default_view(pl, vertices)
        img = pl.screenshot(return_img=True)
    finally:
        pl.close()
    img = np.asarray(img)
    if img.ndim != 3 or img.size == 0 or float(img.std()) == 0.0:
        raise RuntimeError("the off-screen render came back blank")
    return img[..., :3].astype(np.uint8)


def to_polydata(vertices, faces, face_colors=None):
    """A pyvista PolyData of a triangle mesh, face colours in cell array ``colors``."""
    import pyvista as pv

    f = np.asarray(faces, dtype=np.int64)
    cells = np.hstack([np.full((len(f), 1), 3, np.int64), f]).ravel()
    mesh = pv.PolyData(np.asarray(vertices, dtype=np.float64), cells)
    if face_colors is not None:
        mesh.cell_data["colors"] = np.ascontiguousarray(np.asarray(face_colors)[:, :3], dtype=np.uint8)
    return mesh


def view_direction(vertices) -> tuple[np.ndarray, np.ndarray]:
    """A pleasant 3/4 view: y is up (MeshLab's convention), looking from +x+y+z."""
    d = np.array([1.0, 0.8, 1.6])
    return d / np.linalg.norm(d), np.array([0.0, 1.0, 0.0])


def set_default_view(plotter, vertices) -> None:
    v = np.asarray(vertices, dtype=np.float64)
    c = (v.min(0) + v.max(0)) / 2
    r = float(np.linalg.norm(v.max(0) - v.min(0))) / 2 or 1.0
    d, up = view_direction(v)
    plotter.camera_position = [tuple(c + d * r * 3.2), tuple(c), tuple(up)]
    plotter.reset_camera()


def rasterize(vertices, faces, face_colors, *, size=(900, 700), background=(255, 255, 255)) -> np.ndarray:
    """Software render: orthographic projection, flat Lambert shading, painter's algorithm.

    Needs only NumPy and Pillow; used where OpenGL is unavailable.
    """
    from PIL import Image, ImageDraw

    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    col = np.asarray(face_colors, dtype=np.float64)[:, :3]
    w, h = size
    d, up = view_direction(v)
    right = np.cross(up, d)
    right /= np.linalg.norm(right)
    up2 = np.cross(d, right)
    c = (v.min(0) + v.max(0)) / 2
    p = v - c
    x, y, z = p @ right, p @ up2, p @ d
    span = max(np.ptp(x), np.ptp(y), 1e-12)
    scale = 0.85 * min(w, h) / span
    px = w / 2 + x * scale
    py = h / 2 - y * scale
    tri = v[f]
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    ln = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.divide(n, ln, out=np.zeros_like(n), where=ln > 0)
    light = d * 0.8 + up2 * 0.45 + right * 0.2
    light /= np.linalg.norm(light)
    lam = np.abs(n @ light)  # two-sided
    shade = 0.35 + 0.65 * lam
    rgb = np.clip(col * shade[:, None], 0, 255).astype(np.uint8)
    depth = z[f].mean(axis=1)
    img = Image.new("RGB", (w, h), tuple(background))
    draw = ImageDraw.Draw(img)
    for i in np.argsort(depth):  # far to near
        a, b, cc = f[i]
        draw.polygon([(px[a], py[a]), (px[b], py[b]), (px[cc], py[cc])], fill=tuple(int(t) for t in rgb[i]))
    return np.asarray(img)


# ----------------------------------------------------------------------------- demo
def demo(out_dir: pathlib.Path, progress: Progress | None = None, *,
         names: Sequence[str] = ("dumbbell", "creature"), device=None, apsp: str = "auto") -> list[pathlib.Path]:
    """Segment bundled samples headless; write the coloured PLY, the .seg and a PNG of each."""
    progress = as_progress(progress)
    out_dir = pathlib.Path(out_dir) / "mesh_seg"
    out_dir.mkdir(parents=True, exist_ok=True)
    samples = {p.stem: p for p in sample_meshes()}
    todo = [samples[n] for n in names if n in samples]
    if not todo:
        raise UserError(f"no bundled sample meshes found in {samples_dir()}")
    written: list[pathlib.Path] = []
    for i, path in enumerate(todo):
        sub = progress.sub(i / len(todo), (i + 1) / len(todo), prefix=path.stem)
        v, f = mesh_io.read_mesh(path)
        t0 = time.perf_counter()
        seg = segment(v, f, device=device, apsp=apsp, progress=sub)
        elapsed = time.perf_counter() - t0
        ply = mesh_io.write_colored_ply(out_dir / f"{path.stem}-parts.ply", v, f, seg.face_colors)
        lab = mesh_io.write_seg(out_dir / f"{path.stem}.seg", seg.labels, n_faces=len(f))
        png = render_png(out_dir / f"{path.stem}-parts.png", v, f, seg.face_colors,
                         title=f"{path.stem}: {seg.k} parts, {len(f):,} faces")
        txt = out_dir / f"{path.stem}-summary.txt"
        from ..io.atomic import atomic_write

        with atomic_write(txt, "w") as fh:
            fh.write("\n".join(summary_lines(path.name, v, f, seg, elapsed, "demo")) + "\n")
        written += [ply, lab, png, txt]
    return written
