"""The shape every gpulab tool has, without Qt.

A tool module (``app/tools/<tool>.py``) defines plain functions and one :class:`Tool`
that names them. The command line (``app/commands``), the window (``app/tabs``), ``gpulab
demo`` and ``gpulab batch`` all go through that object, so they cannot disagree about a
tool's parameters, device or outputs:

``params``
    the :class:`~app.tools.params.ParamSet` (defaults from the library's constants);
``load(path, *, progress) -> data``
    read one input file (runs on the worker thread in the window);
``run(data, params, *, device, progress) -> result``
    compute; ``device`` is a :class:`gpu_kernels.backend.Backend` the caller resolved, and
    everything inside uses it (nothing reads the process-wide default);
``summary(result) -> list[str]``
    human-readable lines (the CLI prints them, the tab shows them, the demo writes them);
``exports``
    the :class:`Export` formats a result can be written as;
``check(params, device)``
    fast checks before anything is loaded or run (a GPU-only option on the CPU);
``advise(data, params, device) -> TooLargeError | None``
    a soft size rule ("this will be slow on the CPU"): the window offers the remedy, the CLI
    prints a note; hard limits are raised by ``run`` as :class:`~gpu_kernels.errors.TooLargeError`;
``samples()`` and ``demo(out_dir, *, device, progress)``;
``stages``
    the :class:`~app.tools.stages.Pipeline` of named stages ``run`` goes through: the window
    re-runs only the stages whose parameters changed (see :mod:`app.tools.stages`);
``display(result, params) -> result``
    applies the display-only parameters (``Param(display=True)``) to a finished result,
    without computing anything (the window calls it on the GUI thread).

:func:`execute` runs a :class:`Job` on a given device; the window's worker thread and the
tests use the same function.
"""

from __future__ import annotations

import inspect
import pathlib
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpu_kernels.backend import Backend
from gpu_kernels.errors import TooLargeError
from gpu_kernels.jobs import Progress

from ..io import registry as _registry
from .params import ParamSet
from .running import Job, execute, run_job, run_staged_job  # noqa: F401 - re-exported
from .stages import fmt_seconds  # noqa: F401 - re-exported (the tabs and reports import it from here)

__all__ = ["Tool", "ToolResult", "Export", "resolve", "BatchItem", "Job", "execute", "run_job", "run_staged_job", "resources_dir", "samples_in", "fmt_seconds"]


def resources_dir() -> pathlib.Path:
    """gpulab's samples and icons: ``app/resources`` in an installed wheel or a frozen bundle
    (setup.py maps the checkout's top-level ``resources/`` there), else ``resources/`` of a
    source checkout. A folder counts only if it holds gpulab's icon: a stray ``resources/``
    of another package in site-packages is never taken."""
    here = pathlib.Path(__file__).resolve()
    for cand in (here.parents[1] / "resources", here.parents[2] / "resources"):
        if (cand / "icons" / "gpulab.svg").is_file():
            return cand
    return here.parents[1] / "resources"


def samples_in(subdir: str, extensions: Sequence[str], first: Sequence[str] = ()) -> list[pathlib.Path]:
    """Sample files in ``resources/samples/<subdir>`` with these extensions, the stems in
    ``first`` first (in that order), then the rest by name."""
    d = resources_dir() / "samples" / subdir if subdir else resources_dir() / "samples"
    if not d.is_dir():
        return []
    exts = tuple(e.lower() for e in extensions)
    stems = {}      # name without its matched extension (".nii.gz" is one extension)
    for p in d.iterdir():
        low = p.name.lower()
        ext = next((e for e in sorted(exts, key=len, reverse=True) if low.endswith(e)), None)
        if ext is not None and p.is_file():
            stems[p] = p.name[: len(p.name) - len(ext)]
    order = {s: i for i, s in enumerate(first)}
    return sorted(stems, key=lambda p: (order.get(stems[p], len(order)), p.name))


@dataclass(frozen=True)
class Export:
    """One way to write a result.

    ``write(result, path) -> list[Path]`` writes atomically and returns what it wrote.
    ``folder`` exports write into a new folder (``path`` is that folder).
    """

    key: str
    label: str
    extensions: tuple[str, ...]
    write: Callable[[Any, pathlib.Path], list[pathlib.Path]]
    folder: bool = False
    cli_option: str | None = None  # the command's option for it, for the copied command line
    #: ``check(path)`` raises a one-line error before any work if ``path`` cannot be written
    check: Callable[[pathlib.Path], Any] | None = None
    #: ``unavailable(result)``: why this result cannot give the export (a one-line reason, the
    #: button's tool tip while it is greyed out), or None where it can
    unavailable: Callable[[Any], str | None] | None = None
    #: the help of its CLI flag (default: "also write the <label>")
    cli_help: str = ""
    #: writer keyword -> the tool's (display-only) Param that gives it, e.g. ``{"fmt":
    #: "segments_format"}``: the CLI flag, the widget beside the export button, presets and the
    #: copied command line all come from that Param
    options: Mapping[str, str] = field(default_factory=dict)

    def writer_options(self, params: Mapping[str, Any]) -> dict:
        """The writer's keyword options taken from ``params``."""
        return {kw: params[p] for kw, p in self.options.items() if p in params}

    @property
    def filter(self) -> str:
        if self.folder:
            return self.label
        return f"{self.label} (" + " ".join(f"*{e}" for e in self.extensions) + ")"


class ToolResult:
    """The one shape of a tool's result (a mixin for the tools' result dataclasses).

    Every result holds ``params`` (the validated parameters it was computed with), ``device``
    (the device's label), ``elapsed`` (seconds) and ``metrics`` (the errors against a ground
    truth, a dict, or None where there is none), and answers :meth:`headline` (the status
    bar's line) and :meth:`figures` (the numbers batch's manifest and the benchmarks keep).

    Vector convention: a displacement is stored with one component per array axis, in
    pixels/voxels, in the order of the axes they move along: 2-D flow is ``(u, v)`` =
    ``(x, y)`` (columns, rows), as OpenCV and Middlebury store it; 3-D echo fields are
    ``(3, Z, Y, X)``, component i along array axis i (z, y, x), as SciPy's ``map_coordinates``
    takes them. Both satisfy ``second(x + d(x)) = first(x)``.
    """

    params: dict
    device: str
    elapsed: float
    metrics = None

    def headline(self) -> str:
        return f"Done in {fmt_seconds(self.elapsed)} on {self.device}"

    def figures(self) -> dict:
        out: dict = {"seconds": float(self.elapsed)}
        out.update({k: float(v) for k, v in (self.metrics or {}).items() if isinstance(v, int | float)})
        return out


@dataclass(frozen=True)
class BatchItem:
    """One unit of ``gpulab batch``: ``key`` names its outputs (unique in the batch); ``inputs``
    are file paths (as text, so they travel to Dask workers cheaply); ``meta`` is small JSON-able
    data (a frame index, a view name)."""

    key: str
    inputs: tuple[str, ...]
    meta: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Tool:
    """A tool as the CLI, the window, the demo and batch see it (see the module docstring)."""

    name: str                     # command and batch name: "mesh-seg"
    title: str                    # "Mesh segmentation"
    key: str                      # settings group, demo folder: "mesh"
    description: str              # one sentence
    params: ParamSet
    load: Callable[..., Any]
    run: Callable[..., Any]
    summary: Callable[[Any], list[str]]
    exports: tuple[Export, ...] = ()
    #: the kind of input, by its name in the reader registry (:data:`app.io.registry.INPUT_KINDS`):
    #: file patterns, folders, pairing and ground truth come from there. A tool that names
    #: none but gives ``input_extensions`` gets a kind of its own, registered under its name.
    inputs: str | None = None
    input_extensions: tuple[str, ...] = ()
    input_kind: str = ""              # the kind's title ("Volumes"); default: the registry's
    input_noun: str = "Input"         # the input box's title ("Mesh")
    #: one line for the status bar once a result is shown (default: the title and "done")
    headline: Callable[[Any], str] | None = None
    samples: Callable[[], list[pathlib.Path]] = lambda: []
    demo: Callable[..., list[pathlib.Path]] | None = None
    advise: Callable[..., TooLargeError | None] | None = None
    #: ``check(params, device)``: fast checks before any work (raise InputError), e.g. a GPU-only option
    check: Callable[[dict, Backend], None] | None = None
    #: positional inputs and the main output option of the CLI, for the copied command line:
    #: ``command_line(inputs, output)`` reproduces ``gpulab <name> INPUT... -o OUTPUT <flags>``
    output_option: str = "-o"
    default_output: Callable[[pathlib.Path], str] | None = None
    #: the compute library's entry point; its keyword defaults must equal the parameters'
    library: Callable[..., Any] | None = None
    # -- gpulab batch (defaults: one item per input file; every file export written as
    #    OUT/<key>-<export key><ext>; no metrics) -------------------------------------------
    #: ``batch_items(paths) -> list[BatchItem]``: the items of a batch over these inputs
    batch_items: Callable[[list[pathlib.Path]], list[BatchItem]] | None = None
    #: ``batch_load(item, *, progress) -> data``
    batch_load: Callable[..., Any] | None = None
    #: ``batch_write(result, out_dir, key) -> list[Path]`` (atomic writes)
    batch_write: Callable[[Any, pathlib.Path, str], list[pathlib.Path]] | None = None
    #: ``metrics(result) -> dict``: a few key figures for the batch manifest
    metrics: Callable[[Any], dict] | None = None
    #: ``item_params(item, params) -> params``: an item's own parameters (e.g. its view)
    item_params: Callable[[BatchItem, dict], dict] | None = None
    #: ``batch_finish(out_dir, records, params, *, device) -> list[Path]``: runs once, on a worker,
    #: after every item is done (e.g. fusing per-view depth maps into one cloud)
    batch_finish: Callable[..., list[pathlib.Path]] | None = None
    # -- stages and display ------------------------------------------------------------------
    # -- where the other layers find the tool's parts (named, imported only when needed) ----
    #: the window's tab: ``"app.tabs.echo_tab:EchoTab"`` (or the class itself)
    tab: Any = None
    #: a command module with ``register(subparsers)``/``run(args)`` for a tool whose command
    #: has real extras (``"app.commands.echo"``); None: the command is generated from the tool
    command: str | None = None
    #: the generated command's texts: a longer description, the positional input's help, the epilog
    cli_description: str = ""
    input_help: str = ""
    cli_epilog: str = ""
    #: the pipeline ``run`` goes through (:mod:`app.tools.stages`); None: one opaque stage
    stages: Any = None
    #: ``display(result, params) -> result``: apply the display-only parameters to a result
    display: Callable[[Any, dict], Any] | None = None

    def __post_init__(self):
        registry = _registry
        if self.inputs is None:  # a tool declared with extensions only: its own kind
            registry.register_input(registry.InputKind(self.name, self.input_kind or "Files",
                                                       tuple(e.lower() for e in self.input_extensions)))
            object.__setattr__(self, "inputs", self.name)
        kind = registry.input_kind(self.inputs)
        object.__setattr__(self, "input_extensions", kind.patterns)
        object.__setattr__(self, "input_kind", kind.title)
        sig = inspect.signature(self.run)
        if "device" not in sig.parameters or "progress" not in sig.parameters:
            raise TypeError(f"{self.name}: run() must take device= and progress= keywords")
        if self.stages is not None:
            self.stages.check_params(self.params)

    @property
    def input(self):
        """The tool's :class:`~app.io.registry.InputKind` (patterns, folders, pairs, truth)."""
        return _registry.input_kind(self.inputs)

    def tab_class(self):
        """The tab class named by :attr:`tab` (imported now; None if the tool has no tab)."""
        return resolve(self.tab)

    # -- stages ------------------------------------------------------------------------------
    def pipeline(self):
        """The tool's :class:`~app.tools.stages.Pipeline` (a tool without stages gets one stage,
        ``run``, that every compute parameter feeds)."""
        if self.stages is not None:
            return self.stages
        from .stages import Pipeline, Stage

        pl = getattr(self, "_opaque_pipeline", None)
        if pl is None:
            compute = tuple(self.params.compute_names())
            run = self.run

            def whole(ctx):
                return run(ctx.data, {**self.params.defaults(), **ctx.p}, device=ctx.device, progress=ctx.progress)

            pl = Pipeline([Stage("run", whole, params=compute, label=self.title)],
                          finish=lambda data, out, params, *, device, elapsed: out["run"])
            object.__setattr__(self, "_opaque_pipeline", pl)
        return pl

    def run_staged(self, data, params: dict, *, device: Backend, progress: Progress | None = None,
                   cache=None, scope: str | None = None):
        """Run through the stage cache: ``(result, report)``; the result equals ``run``'s and
        has the display-only parameters applied."""
        p = self.params.validate(params)
        result, report = self.pipeline().execute(data, p, device=device, progress=progress, cache=cache,
                                                 scope=scope or self.name)
        return self.apply_display(result, p), report

    def apply_display(self, result, params: dict):
        """``result`` with the display-only parameters of ``params`` (no computation)."""
        if self.display is None or result is None:
            return result
        return self.display(result, self.params.validate(params))

    # -- the result's shape -------------------------------------------------------------
    def headline_of(self, result) -> str:
        """The status bar's line for ``result``: the tool's ``headline``, else the result's
        :meth:`ToolResult.headline`, else the title."""
        if self.headline is not None:
            return self.headline(result)
        h = getattr(result, "headline", None)
        return h() if callable(h) else f"{self.title}: done"

    def metrics_of(self, result) -> dict:
        """The numbers kept for ``result`` (batch's manifest): the tool's ``metrics``, else the
        result's :meth:`ToolResult.figures`."""
        if self.metrics is not None:
            return dict(self.metrics(result))
        f = getattr(result, "figures", None)
        return dict(f()) if callable(f) else {}

    # -- batch defaults ----------------------------------------------------------------
    def items(self, paths: Sequence[str | pathlib.Path]) -> list[BatchItem]:
        """The batch items for these inputs (files, or folders of files of this tool's types, as
        the reader registry expands them)."""
        if self.batch_items is not None:
            return list(self.batch_items([pathlib.Path(p) for p in paths]))
        files = self.input.expand(paths)
        items, seen = [], set()
        for f in files:
            key, n = f.stem, 2
            while key in seen:
                key, n = f"{f.stem}-{n}", n + 1
            seen.add(key)
            items.append(BatchItem(key, (str(f),)))
        return items

    def load_item(self, item: BatchItem, *, progress: Progress | None = None):
        if self.batch_load is not None:
            return self.batch_load(item, progress=progress)
        return self.load(pathlib.Path(item.inputs[0]), progress=progress)

    def write_item(self, result, out_dir: pathlib.Path, key: str) -> list[pathlib.Path]:
        if self.batch_write is not None:
            return list(self.batch_write(result, pathlib.Path(out_dir), key))
        out: list[pathlib.Path] = []
        for e, path in self._item_files(out_dir, key):
            out += e.write(result, path)
        return out

    def item_outputs(self, out_dir: pathlib.Path, key: str) -> list[pathlib.Path]:
        """The files :meth:`write_item` writes with the default writer (for re-run checks)."""
        return [path for _e, path in self._item_files(out_dir, key)]

    def _item_files(self, out_dir: pathlib.Path, key: str) -> list[tuple[Export, pathlib.Path]]:
        """The default writer's file exports and their paths, ``<key>-<export><ext>``."""
        return [(e, pathlib.Path(out_dir) / f"{key}-{e.key}{e.extensions[0]}") for e in self.exports if not e.folder]

    def handles(self, path: str | pathlib.Path) -> bool:
        """Whether ``path`` (a file, or a folder) is this tool's input: the reader registry decides."""
        return self.input.accepts(path)

    def export(self, key: str) -> Export:
        """The export named ``key``."""
        for e in self.exports:
            if e.key == key:
                return e
        raise KeyError(f"{self.name} has no export {key!r}")

    def export_for(self, path: str | pathlib.Path) -> Export | None:
        """The file export whose extension ``path`` has."""
        name = pathlib.Path(path).name.lower()
        return next((e for e in self.exports if not e.folder and any(name.endswith(x) for x in e.extensions)),
                    None)

    def command_line(self, inputs: Sequence[str | pathlib.Path], params: dict, *,
                     output: str | None = None, device: str | None = None) -> str:
        """The ``gpulab`` command that repeats this run headless."""
        args = ["gpulab", self.name, *map(str, inputs)]
        if output is None and self.default_output is not None and inputs:
            output = self.default_output(pathlib.Path(inputs[0]))
        if output is not None and self.output_option:
            args += [self.output_option, output]
        args += self.params.to_cli(params)
        if device and device != "auto":
            args += ["--device", device]
        return shlex.join(args)


def resolve(ref):
    """The object a ``"package.module:Name"`` reference names (imported now); other values as they are."""
    if not isinstance(ref, str):
        return ref
    import importlib
    import sys

    mod_name, _, attr = ref.partition(":")
    mod = sys.modules.get(mod_name) or importlib.import_module(mod_name)
    return getattr(mod, attr) if attr else mod
