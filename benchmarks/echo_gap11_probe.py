"""Where the echo tab's live α edit spends its compute time (session 11, helper echo-gap).

Session 10 found the trajectory stage of the α edit at 128^3 taking 14-21 ms in the tab where the
same code takes 3.4-3.8 ms through the stage cache in a plain thread. This probe drives the real
echo tab (offscreen, as ``benchmarks/live.py``) and times each compute stage in the worker
thread: its wall time, the worker thread's CPU time (``time.thread_time``) and the GUI (main)
thread's CPU time meanwhile (``pthread_getcpuclockid``), under switches that change only what
the GUI thread does or how the GIL is handed over, all in ONE process, in interleaved rounds:

``base``      the tab as it is;
``quiet``     the GUI thread blocks (GIL released, ``threading.Event.wait``) from the moment the
              job starts until it ends: the worker alone, in the tab's own QThread;
``noprog``    the tab's stage label is not updated from the job's progress signals;
``grace``     the job's progress reports are not sent at all during its first ``GRACE_S``
              seconds (a candidate change to ``app/ui/worker.py``);
``oneline``   the tab's stage label one line high, no word wrap, width ignored (a candidate change
              to ``app/tabs/base.py``: a report's text no longer moves the side panel below it);
``switch``    ``sys.setswitchinterval(SWITCH_S)`` while the edit runs (5 ms by default);
``prof``      the GUI thread's Python entries (from C++: slots, event filters, virtual
              overrides) are timed with ``sys.setprofile`` (main thread only);
``sample``    a sampler thread records the GUI thread's innermost Python frame every 0.5 ms;
``old``       the trajectory stage's function as it was at the start of session 11;
``outside``   the same job (``execute(run_staged_job(...))``) in a plain ``threading.Thread``,
              150 ms after the previous edit, with its own stage cache (session 10's "outside");
              ``outside_old`` the same with the old trajectory function.

``--plan`` picks the reference frame (set in the form: a live run) and its modes, e.g.
``1:base,old;0:base``. (Session 10's "outside" figure was at reference 0, while
``benchmarks/live.py``'s α targets follow its reference-1 edit.)

    source .carry-live/setup.sh && python benchmarks/echo_gap11_probe.py --device cuda --json out.json
    python benchmarks/echo_gap11_probe.py --device cpu --quick            # a smoke run here
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

MODES = ("base", "quiet", "noprog", "grace", "oneline", "switch", "prof", "sample", "outside", "old",
         "outside_old")
SWITCH_S = 0.0005
#: ``grace``: the job's progress reports are dropped (in the worker) for its first GRACE_S seconds
GRACE_S = 0.3
MAIN = threading.main_thread().ident
_MAIN_CLOCK = time.pthread_getcpuclockid(MAIN)


def main_cpu() -> float:
    return time.clock_gettime(_MAIN_CLOCK)


class Recorder:
    """Per edit: the stages' records, the job's window, the spare host buffer's window."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.stages: list[dict] = []
        self.job: dict = {}
        self.spare: list[tuple[float, float]] = []
        self.done = threading.Event()


REC = Recorder()


def instrument(tool) -> None:
    """Wrap each stage function of the echo pipeline (timing only), the worker's ``execute``
    (the job's window; sets ``REC.done``) and the spare host buffer's maker."""
    import app.ui.worker as worker
    import gpu_kernels.echo.sequence as seq

    for s in tool.stages.stages:
        fn = s.fn

        def timed(ctx, _fn=fn, _name=s.name):
            w0, c0, m0 = time.perf_counter(), time.thread_time(), main_cpu()
            try:
                return _fn(ctx)
            finally:
                REC.stages.append({"stage": _name, "t0": w0, "wall": time.perf_counter() - w0,
                                   "cpu": time.thread_time() - c0, "main_cpu": main_cpu() - m0,
                                   "thread": threading.current_thread().name})

        object.__setattr__(s, "fn", timed)

    orig_exec = worker.execute

    def execute(job, **kw):
        REC.job["t0"] = time.perf_counter()
        REC.job["main_cpu0"] = main_cpu()
        try:
            return orig_exec(job, **kw)
        finally:
            REC.job["t1"] = time.perf_counter()
            REC.job["main_cpu1"] = main_cpu()
            REC.done.set()

    worker.execute = execute
    orig_spare = seq._make_spare

    def make_spare(key):
        t0 = time.perf_counter()
        try:
            return orig_spare(key)
        finally:
            REC.spare.append((t0, time.perf_counter()))

    seq._make_spare = make_spare


class GuiProfile:
    """The GUI thread's outermost Python calls (entered from C++), with their wall time."""

    def __init__(self):
        self.depth = 0
        self.entries: list[tuple[float, float, str]] = []
        self._t = 0.0
        self._name = ""

    def __call__(self, frame, event, arg):
        if event == "call":
            if self.depth == 0:
                self._t = time.perf_counter()
                c = frame.f_code
                self._name = f"{c.co_qualname} ({pathlib.Path(c.co_filename).name}:{c.co_firstlineno})"
            self.depth += 1
        elif event == "return":
            self.depth -= 1
            if self.depth == 0:
                self.entries.append((self._t, time.perf_counter() - self._t, self._name))
            elif self.depth < 0:
                self.depth = 0


class Sampler(threading.Thread):
    """Every ~0.5 ms: the GUI thread's innermost frame (outside the probe's own wait)."""

    def __init__(self, idle_codes):
        super().__init__(name="gui-sampler", daemon=True)
        self.idle = idle_codes
        self.samples: list[tuple[float, str]] = []
        self.stop_evt = threading.Event()

    def run(self):
        while not self.stop_evt.wait(0.0005):
            f = sys._current_frames().get(MAIN)
            t = time.perf_counter()
            if f is None or f.f_code in self.idle:
                self.samples.append((t, ""))
                continue
            names = []
            while f is not None and f.f_code not in self.idle and len(names) < 4:
                names.append(f"{f.f_code.co_qualname}:{f.f_lineno}")
                f = f.f_back
            self.samples.append((t, " < ".join(names)))


def overlap(a0, a1, b0, b1) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def summarise_edit(mode: str, t_edit: float, t_shown: float | None, report, extra: dict) -> dict:
    job = dict(REC.job)
    st = {s["stage"]: {k: s[k] for k in ("wall", "cpu", "main_cpu")} | {"start_ms": 1000 * (s["t0"] - job.get("t0", s["t0"]))}
          for s in REC.stages}
    out = {"mode": mode, "stages": st, "report_s": dict(report.seconds) if report is not None else {},
           "compute_s": report.total if report is not None else None,
           "job_wall_s": job.get("t1", 0) - job.get("t0", 0),
           "gui_cpu_during_job_s": job.get("main_cpu1", 0) - job.get("main_cpu0", 0),
           "threads": sorted({s["thread"] for s in REC.stages}),
           "spare_overlap_ms": {s["stage"]: 1000 * sum(overlap(s["t0"], s["t0"] + s["wall"], a, b) for a, b in REC.spare)
                                for s in REC.stages},
           "edit_to_shown_s": (t_shown - t_edit) if t_shown is not None else None}
    out.update(extra)
    return out


def run(args) -> dict:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import live
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from app.tools import TOOLS
    from app.tools.running import run_staged_job
    from app.tools.stages import StageCache
    from app.ui import gc_guard
    from gpu_kernels.backend import get_backend

    app = QApplication.instance() or QApplication([])
    tool = next(t for t in TOOLS if t.name == "echo")
    instrument(tool)
    data, base = live.load_input(tool, args.quick)
    be = get_backend(args.device)
    tab = tool.tab_class()()
    tab.host.device = args.device
    tab.resize(1300, 800)
    tab.show()
    tab.cache = StageCache()
    tab.set_input(data, pathlib.Path(tool.key))
    tab.form.set_values(base)
    gc_guard.settle()

    idle_codes: set = set()
    import app.ui.worker as worker
    import gpu_kernels.echo.sequence as seq
    from gpu_kernels.jobs import Progress
    from tests.echo.echo_trajectories_old import old_trajectories  # the one frozen copy of the old path

    new_trajectories = seq.trajectories
    lab = tab.stage_label
    label_state = (lab.wordWrap(), lab.sizePolicy(), lab.minimumHeight(), lab.maximumHeight())

    def one_line_label(on: bool) -> None:
        """The candidate change to app/tabs/base.py: the stage label one line high, no word wrap,
        its width ignored by the layout (a report repaints the label alone)."""
        from PySide6.QtWidgets import QSizePolicy

        if on:
            lab.setWordWrap(False)
            lab.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
            lab.setFixedHeight(lab.fontMetrics().lineSpacing() + 2)
        else:
            lab.setWordWrap(label_state[0])
            lab.setSizePolicy(label_state[1])
            lab.setMinimumHeight(label_state[2])
            lab.setMaximumHeight(label_state[3])
        app.processEvents()

    def graced(callback, event, **kw):
        t_start = time.monotonic()

        def cb(fraction, stage):
            if time.monotonic() - t_start >= GRACE_S:
                callback(fraction, stage)

        return Progress(cb, event, **kw)

    def wait_shown(action, mode):
        """One edit: ``action`` (a form edit), the loop until the result is shown, its events."""
        loop = QEventLoop()
        shown: list[float] = []

        def on_shown():
            shown.append(time.perf_counter())
            loop.quit()

        fired: list[float] = []

        def on_fire():
            fired.append(time.perf_counter())

        tab.result_shown.connect(on_shown)
        tab._live_timer.timeout.connect(on_fire)
        QTimer.singleShot(60_000, loop.quit)
        REC.reset()
        extra: dict = {}
        prof = GuiProfile() if mode == "prof" else None
        sampler = Sampler(idle_codes) if mode == "sample" else None
        orig_start = tab.runner.start
        orig_show_stage = tab._show_stage
        old_switch = sys.getswitchinterval()
        if mode == "quiet":
            def start(*a, **k):
                orig_start(*a, **k)
                REC.done.wait(30)       # the GUI thread waits with the GIL released
            tab.runner.start = start
        elif mode == "noprog":
            tab._show_stage = lambda: None
        elif mode == "switch":
            sys.setswitchinterval(SWITCH_S)
        elif mode == "grace":
            worker.Progress = graced
        elif mode == "old":
            seq.trajectories = old_trajectories
        elif mode == "oneline":
            one_line_label(True)
        if sampler is not None:
            sampler.start()
        if prof is not None:
            sys.setprofile(prof)
        t0 = time.perf_counter()
        try:
            action()
            loop.exec()
        finally:
            sys.setprofile(None)
            if sampler is not None:
                sampler.stop_evt.set()
                sampler.join()
            sys.setswitchinterval(old_switch)
            tab.runner.start = orig_start
            tab._show_stage = orig_show_stage
            worker.Progress = Progress
            seq.trajectories = new_trajectories
            tab.result_shown.disconnect(on_shown)
            tab._live_timer.timeout.disconnect(on_fire)
        t_shown = shown[0] if shown else None
        app.processEvents()       # as benchmarks/live.py: the posted paint, then a repaint of the tab
        tab.repaint()
        if fired and t_shown is not None:
            extra["after_debounce_s"] = time.perf_counter() - fired[0]
        if mode == "oneline":   # put back after the measurement (call 3 put it back before: its
            one_line_label(False)   # oneline after-debounce figures include that relayout)
        while tab.runner.is_running():
            app.processEvents()
        j0, j1 = REC.job.get("t0", 0.0), REC.job.get("t1", 0.0)
        if prof is not None:
            inside = [(t, d, n) for t, d, n in prof.entries if overlap(t, t + d, j0, j1) > 0]
            by = collections.defaultdict(lambda: [0, 0.0])
            for t, d, n in inside:
                by[n][0] += 1
                by[n][1] += overlap(t, t + d, j0, j1)
            extra["gui_python_ms"] = 1000 * sum(v[1] for v in by.values())
            extra["gui_python_top"] = sorted(([n, c, round(1000 * s, 3)] for n, (c, s) in by.items()),
                                             key=lambda r: -r[2])[:12]
            # the entries of 0.1 ms or more, and the GUI thread's Python time inside each stage
            extra["gui_python_timeline"] = [[round(1000 * (t - j0), 2), round(1000 * d, 3), n] for t, d, n in inside
                                            if d >= 1e-4][:60]
            extra["gui_python_by_stage_ms"] = {s["stage"]: round(1000 * sum(overlap(t, t + d, s["t0"], s["t0"] + s["wall"])
                                                                        for t, d, _n in inside), 3) for s in REC.stages}
        if sampler is not None:
            ins = [(t, n) for t, n in sampler.samples if j0 <= t <= j1]
            cnt = collections.Counter(n for _, n in ins)
            extra["samples"] = len(ins)
            extra["samples_busy"] = sum(c for n, c in cnt.items() if n)
            extra["samples_top"] = cnt.most_common(10)
        return summarise_edit(mode, t0, t_shown, tab.last_report, extra)

    idle_codes.add(wait_shown.__code__)
    idle_codes.add(run.__code__)

    def edit(v):
        tab.form.editor("alpha").setValue(v)

    wait_shown(lambda: tab.live_check.setChecked(True), "base")      # the first (full) run
    vals = iter([round(0.02 + 0.0005 * i, 4) for i in range(1, 900)])

    # the same job outside the tab: a plain thread, its own cache (warmed at each reference)
    out_cache = StageCache()

    def outside_once(params, mode="outside"):
        REC.reset()
        res = {}
        wrapped = worker.execute    # the instrumented execute fills REC.job as in the tab
        if mode == "outside_old":
            seq.trajectories = old_trajectories

        def work():
            res["r"] = wrapped(run_staged_job(tool, data, params, cache=out_cache, scope="outside", input_key="o"),
                               device=args.device)

        th = threading.Thread(target=work, name="outside")
        t0 = time.perf_counter()
        try:
            th.start()
            th.join()
        finally:
            seq.trajectories = new_trajectories
        (_result, report), _be, _secs = res["r"]
        return summarise_edit(mode, t0, time.perf_counter(), report, {})

    records: list[dict] = []
    for part in args.plan.split(";"):
        ref_s, _, mode_s = part.partition(":")
        ref, modes = int(ref_s), [m for m in mode_s.split(",") if m]
        if tab.form.values()["reference"] != ref:
            wait_shown(lambda ref=ref: tab.form.editor("reference").setValue(ref), "base")
        for _ in range(args.warm):
            time.sleep(args.pause)
            wait_shown(lambda v=next(vals): edit(v), "base")
        outside_once(tab.tool.params.validate(tab.shown_params()))
        for rnd in range(args.rounds):
            order = modes[rnd % len(modes):] + modes[:rnd % len(modes)]   # rotate: no mode always first
            for mode in order:
                for _ in range(args.edits):
                    v = next(vals)
                    time.sleep(args.pause)
                    if mode.startswith("outside"):
                        r = outside_once(tab.tool.params.validate({**tab.shown_params(), "alpha": v}), mode)
                    else:
                        r = wait_shown(lambda v=v: edit(v), mode)
                    r["round"], r["alpha"], r["reference"] = rnd, v, ref
                    r["mode"] = f"{mode}@{ref}"
                    records.append(r)
                    print(line(r), flush=True)
    tab.live_check.setChecked(False)
    tab.close()
    return {"device": be.label, "quick": args.quick, "switch_s": SWITCH_S, "pause_s": args.pause,
            "records": records, "summary": summary(records)}


def line(r) -> str:
    st = r["stages"]
    parts = [f"{k} {1000 * v['wall']:.1f}/{1000 * v['cpu']:.1f}/{1000 * v['main_cpu']:.1f}" for k, v in st.items()]
    x = ""
    if "gui_python_ms" in r:
        x = f" gui-py {r['gui_python_ms']:.1f} ms"
    if "samples" in r:
        x = f" samples {r['samples_busy']}/{r['samples']} busy"
    if "after_debounce_s" in r:
        x += f" after-debounce {1000 * r['after_debounce_s']:.1f}"
    return (f"{r['mode']:8s} compute {1000 * (r['compute_s'] or 0):.1f} job {1000 * r['job_wall_s']:.1f} "
            f"gui-cpu {1000 * r['gui_cpu_during_job_s']:.1f} | " + ", ".join(parts) + x)


def summary(records) -> dict:
    """Per mode: medians of compute, job, GUI CPU, and each stage's wall / worker CPU / GUI CPU (ms)."""
    def med(xs):
        xs = sorted(xs)
        return round(1000 * xs[len(xs) // 2], 2) if xs else None

    out = {}
    for m in dict.fromkeys(r["mode"] for r in records):
        rs = [r for r in records if r["mode"] == m]
        d = {"n": len(rs), "compute_ms": med([r["compute_s"] for r in rs]), "job_ms": med([r["job_wall_s"] for r in rs]),
             "gui_cpu_ms": med([r["gui_cpu_during_job_s"] for r in rs]),
             "after_debounce_ms": med([r["after_debounce_s"] for r in rs if "after_debounce_s" in r])}
        for s in rs[0]["stages"]:
            for k in ("wall", "cpu", "main_cpu"):
                d[f"{s}_{k}_ms"] = med([r["stages"][s][k] for r in rs if s in r["stages"]])
        out[m] = d
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--edits", type=int, default=3, help="edits per mode per round")
    ap.add_argument("--warm", type=int, default=3, help="α edits before each reference's rounds")
    ap.add_argument("--pause", type=float, default=0.15, help="seconds between edits")
    ap.add_argument("--plan", default="0:" + ",".join(MODES),
                    help="REF:MODE,MODE;REF:...: the reference frame set in the form, then its modes in rounds")
    ap.add_argument("--json", type=pathlib.Path, default=None)
    args = ap.parse_args(argv)
    doc = run(args)
    for m, d in doc["summary"].items():
        print(f"{m:8s} " + ", ".join(f"{k} {v}" for k, v in d.items()), flush=True)
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
