"""The command fuzz harness (issue 18): every ``gpulab`` command against the families of bad
input and hostile output of :mod:`fuzz_commands` (empty, truncated, random, huge counts,
NaN/Inf, FIFO, folder, symlink, dangling symlink, unicode path, read-only output, full disk,
output equal to input, output folder holding user files), plus SIGINT and SIGKILL mid-run.

Every case must give what it expects (a clear one-line error, or success) and lose no data:
inputs and the user's files are hashed before and after, and a failed run must leave no
output. The totals go to the terminal summary and a JSON file (``conftest.py``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import fuzz_commands as fc
import fuzz_report
import pytest
from terminal_signals import terminal_sigint  # tests/framework is on sys.path under pytest

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("fuzz_commands.py")
COMMANDS = ("mesh-seg", "flow", "echo", "mvs", "imseg", "echo-synth", "demo", "mesh-seg --segments-dir", "batch imseg",
            "imseg --params")


def _env():
    env = dict(os.environ)
    env.pop("GPULAB_DEBUG", None)
    env["QT_QPA_PLATFORM"] = "offscreen"
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    # a crash (SIGABRT, SIGSEGV) prints every thread's Python stack to stderr, which the assertion shows:
    # session 10's CI saw mesh-seg abort once after a SIGINT ("terminate called without an active
    # exception"), not reproduced in 26 targeted runs
    env["PYTHONFAULTHANDLER"] = "1"
    return env


def _run_worker(cases: list[dict], folder: Path) -> dict[str, dict]:
    """Run the cases in worker processes; a worker that dies marks its case a crash and a new
    one goes on with the rest."""
    results: dict[str, dict] = {}
    todo = list(cases)
    while todo:
        f = folder / f"cases-{len(results):03d}.json"
        f.write_text(json.dumps(todo))
        budget = min(240, 60 + sum(c["timeout"] for c in todo))  # within pytest-timeout's 300 s
        try:
            r = subprocess.run([sys.executable, str(WORKER), str(f)], capture_output=True, encoding="utf-8", errors="replace", cwd=ROOT,
                               env=_env(), timeout=budget)
            out, err = r.stdout, r.stderr
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode("utf-8", "replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            err = "worker timed out"
        started = None
        for ln in out.splitlines():
            if not ln.startswith("{"):
                continue
            d = json.loads(ln)
            if "start" in d:
                started = d["start"]
            else:
                results[d["id"]] = d
                started = None
        done_ids = set(results)
        if started is not None and started not in done_ids:
            c = next(c for c in todo if c["id"] == started)
            results[started] = {"id": started, "command": c["command"], "family": c["family"],
                                "expect": c["expect"], "data_loss": [], "rc": None, "stderr": err[-600:],
                                # stuck where the per-case alarm could not reach (C code): a hang
                                "outcome": "hang" if err == "worker timed out" else "crash"}
        rest = [c for c in todo if c["id"] not in results]
        if len(rest) == len(todo):   # no progress at all: give up on the rest
            for c in rest:
                results[c["id"]] = {"id": c["id"], "command": c["command"], "family": c["family"],
                                    "expect": c["expect"], "outcome": "crash", "rc": None, "data_loss": [],
                                    "stderr": err[-600:]}
            break
        todo = rest
    return results


def _expected(res: dict) -> bool:
    return res["outcome"] in res["expect"].split("|") and not res["data_loss"]


@pytest.fixture(scope="module")
def command_results(tmp_path_factory):
    work = tmp_path_factory.mktemp("fuzzcmd")
    mounts: list[Path] = []
    try:
        cases, skipped = fc.build_cases(work, mounts)
        results = _run_worker(cases, work)
    finally:
        for m in reversed(mounts):
            subprocess.run(["umount", "-l", str(m)], capture_output=True)
    fuzz_report.SKIPPED.extend(skipped)
    for c in cases:
        r = results[c["id"]]
        fuzz_report.record("commands", r["command"], r["family"], r["outcome"], r["expect"], r["data_loss"],
                           _expected(r), r.get("stderr", ""))
    return results


@pytest.mark.slow
@pytest.mark.parametrize("command", [pytest.param(c, marks=pytest.mark.batch) if c.startswith("batch") else c
                                     for c in COMMANDS])
def test_command_families(command, command_results):
    mine = [r for r in command_results.values() if r["command"] == command]
    assert mine, f"no case for {command}"
    bad = [r for r in mine if not _expected(r)]
    assert not bad, "\n".join(f"{r['family']}: expected {r['expect']}, got {r['outcome']} "
                              f"{'(data loss: ' + str(r['data_loss']) + ') ' if r['data_loss'] else ''}"
                              f"stderr: {r['stderr'][-300:]!r}" for r in bad)


def test_fifo_messages_say_fifo(command_results):
    """A FIFO is refused unopened, and the message says what it is (not "not a par file")."""
    fifo = [r for r in command_results.values() if r["family"] == "fifo"]
    assert fifo
    vague = {r["command"]: r["stderr"] for r in fifo if "FIFO" not in r["stderr"]}
    assert not vague, vague


def test_every_family_is_exercised(command_results):
    seen = {r["family"] for r in command_results.values()}
    want = set(fc.FAMILIES) - {"sigint", "sigkill"}
    skipped_families = {s.split("/")[0] for s in fuzz_report.SKIPPED}
    assert want - skipped_families <= seen, want - seen


# ----------------------------------------------------------------------------- signals
#: long enough runs to interrupt: (command, argv with {OUT}, the output, what marks "working")
SIGNAL_RUNS = {
    "mesh-seg": (["mesh-seg", str(ROOT / "resources/samples/creature.ply"), "-o", "{OUT}/seg.ply", "--k", "4"],
                 "seg.ply"),
    "echo-synth": (["echo-synth", "-o", "{OUT}/synth", "--size", "80", "--frames", "8"], "synth"),
    "mvs": (["mvs", str(ROOT / "resources/samples/mvs/synth_par.txt"), "-o", "{OUT}/depth", "--views", "0,1,2",
             "--max-iter", "3"], "depth"),
    "imseg": (["imseg", "{OUT}/big.png", "-o", "{OUT}/labels.png", "--bilateral", "8"], "labels.png"),
    "echo": (["echo", str(ROOT / "resources/samples/echo/lv_synthetic.npz"), "-o", "{OUT}/u.npy"], "u.npy"),
}


def _prepare(command: str, folder: Path) -> None:
    if command == "imseg":   # the sample takes 0.3 s: a 1536 x 1536 tiling takes seconds
        import numpy as np

        from app.io.image_io import read_image, write_image

        a = read_image(ROOT / "resources/samples/imseg/astronaut.png")
        write_image(folder / "big.png", np.ascontiguousarray(np.tile(a, (6, 6, 1))))


def _complete(path: Path) -> bool:
    """An output that exists after a signal must be whole: readable by its reader, or a
    folder without temporary parts."""
    if path.is_dir():
        return any(path.iterdir()) and not any(".part" in q.name for q in path.rglob("*"))
    import importlib
    import pkgutil

    import app.io
    from app.io.registry import READERS

    for m in pkgutil.iter_modules(app.io.__path__):
        importlib.import_module(f"app.io.{m.name}")
    for r in READERS:
        if any(path.name.lower().endswith(e) for e in r.extensions):
            try:
                r.read(path)
                return True
            except Exception:  # noqa: BLE001
                continue
    if path.suffix.lower() in (".npy", ".npz"):
        # outputs no gpulab reader opens (the echo's (pairs, 3, Z, Y, X) field) are whole when
        # NumPy reads every array in full (a cut file fails its header's size). Seen in CI once
        # the echo got faster: the run ended before the signal, with a whole u.npy
        import numpy as np

        try:
            data = np.load(path, allow_pickle=False)
            if isinstance(data, np.lib.npyio.NpzFile):
                with data:
                    for k in data.files:
                        data[k]
        except Exception:  # noqa: BLE001
            return False
        return True
    return False


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")
@pytest.mark.parametrize("sig", ["sigint", "sigkill"])
@pytest.mark.parametrize("command", sorted(SIGNAL_RUNS))
def test_signal_mid_run(command, sig, tmp_path):
    """SIGINT: exit 130, "cancelled", no output. SIGKILL: no output and no process left; the
    next run of the same command into the same place succeeds and leaves no temporary file."""
    argv, out_name = SIGNAL_RUNS[command]
    argv = [a.replace("{OUT}", str(tmp_path)) for a in argv]
    _prepare(command, tmp_path)
    protected = {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    t0 = time.monotonic()
    # SIGINT at its default in the child, as from a terminal: a test run started in the background of a
    # non-interactive shell (the CI's own launch in session 11) passes SIGINT on ignored, and the sigint cases
    # then ran each command to its end and passed as "ok" (echo-synth 39 s) without testing a cancel
    proc = subprocess.Popen([sys.executable, "-m", "app", *argv, "--device", "cpu"], cwd=ROOT, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, encoding="utf-8", errors="replace",
                            preexec_fn=terminal_sigint)
    # wait until the tool is at work: its progress line shows (after the imports)
    kids: set[int] = set()
    line = ""
    try:
        while time.monotonic() - t0 < 60:
            line = proc.stderr.readline()
            if not line or "%" in line:
                break
        if proc.poll() is not None:
            pytest.fail(f"{command} ended before the signal: {line!r}")
        time.sleep(0.2)
        kids = fc.descendants(proc.pid)
        os.kill(proc.pid, signal.SIGINT if sig == "sigint" else signal.SIGKILL)
        try:
            proc.wait(60)
            err = proc.stderr.read()
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            outcome, err = "hang", ""
        else:
            if sig == "sigint":
                outcome = "cancelled" if proc.returncode == 130 and "cancelled" in err else \
                    ("ok" if proc.returncode == 0 else ("traceback" if "Traceback" in err else f"exit-{proc.returncode}"))
                if proc.returncode == -signal.SIGINT and "Traceback" not in err:
                    outcome = "cancelled"   # the signal came as the interpreter was exiting
            else:
                outcome = "killed" if proc.returncode == -signal.SIGKILL else f"exit-{proc.returncode}"
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(fc.alive(k) for k in kids):
            time.sleep(0.1)
        left = sorted(k for k in kids if fc.alive(k))
        out = tmp_path / out_name
        lost = [f"{out} (half-written)"] if out.exists() and not _complete(out) else []
        lost += [f"{p.name} (input changed)" for p, b in protected.items() if not p.exists() or p.read_bytes() != b]
        lost += [f"process {k} left running" for k in left]
        if outcome == "cancelled" and proc.returncode == 130:
            # nothing but the progress and the one line: no traceback, no "Exception ignored", no
            # "terminate called ..." (session 10: an abort after the line), no leaked-resource warning
            said = [ln for ln in err.replace("\r", "\n").splitlines() if ln.strip() and not ln.lstrip().startswith("[")]
            if said[1:2] and said[1].startswith("gpulab: waiting for ") and \
                    said[1].endswith(" to stop (Ctrl+C again to quit at once)"):
                del said[1]   # a cancel that waits for gpulab's own thread says so, once (app.cli.waiting_note)
            if said != ["gpulab: cancelled"]:
                lost.append(f"stderr after the signal: {said[:6]!r}")
        rerun_ok = True
        if sig == "sigkill" and not lost:
            r = subprocess.run([sys.executable, "-m", "app", *argv, "--device", "cpu", "-q", *_fast(command)],
                               cwd=ROOT, env=_env(), capture_output=True, encoding="utf-8", errors="replace", timeout=300)
            leftovers = [p.name for p in tmp_path.iterdir() if ".part" in p.name]
            rerun_ok = r.returncode == 0 and not leftovers
            if not rerun_ok:
                lost.append(f"rerun: exit {r.returncode}, leftovers {leftovers}, {r.stderr[-300:]!r}")
        expect = "cancelled|ok" if sig == "sigint" else "killed"
        passed = outcome in expect.split("|") and not lost
        fuzz_report.record("signals", command, sig, "cancelled" if outcome == "killed" else outcome, expect,
                           lost, passed)
        assert passed, (outcome, lost, err[-4000:])
    finally:
        fc.reap(kids, proc)


def _fast(command: str) -> list[str]:
    """Smaller settings for the re-run after SIGKILL (it only has to work)."""
    return {"echo-synth": ["--size", "16", "--frames", "2"], "mvs": ["--views", "0", "--max-iter", "1"],
            "mesh-seg": ["--max-faces", "1500"], "imseg": ["--bilateral", "0"],
            "echo": ["--frames", "0", "1", "--levels", "1", "--iters", "5"]}[command]
