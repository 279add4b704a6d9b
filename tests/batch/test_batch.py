"""``gpulab batch`` on a local Dask cluster of CPU worker processes (what CI can run)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed")

from app.batch import MANIFEST, read_manifest, run_batch  # noqa: E402
from app.cli import main  # noqa: E402
from app.io.mesh_io import read_face_colors, read_seg  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "resources" / "samples"
PARAMS = {"apsp": "cpu", "max_faces": 900, "k": 3}


@pytest.fixture
def meshes(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    for p in sorted(SAMPLES.glob("*.ply")):
        shutil.copy(p, d / p.name)
    return d


def _records(out):
    return [json.loads(ln) for ln in (out / MANIFEST).read_text().splitlines() if ln.strip()]


@pytest.mark.slow
def test_two_workers_give_what_the_single_item_command_gives(meshes, tmp_path, capsys):
    out = tmp_path / "out"
    s = run_batch("mesh-seg", [meshes], out, params=PARAMS, workers=2, gpus="none")
    assert (s.done, s.failed, s.skipped, s.workers) == (3, 0, 0, 2)
    recs = _records(out)
    assert {r["key"] for r in recs} == {"creature", "dumbbell", "table"}
    assert len({r["worker"] for r in recs}) >= 1 and all(r["device"] == "cpu" for r in recs)
    for name in ("creature", "dumbbell", "table"):
        single = tmp_path / f"{name}-single.ply"
        assert main(["mesh-seg", str(meshes / f"{name}.ply"), "-o", str(single), "--labels",
                     str(tmp_path / f"{name}-single.seg"), "--device", "cpu", "-q",
                     *sum((["--" + k.replace("_", "-"), str(v)] for k, v in PARAMS.items()), [])]) == 0
        np.testing.assert_array_equal(read_seg(out / f"{name}-labels.seg"), read_seg(tmp_path / f"{name}-single.seg"))
        np.testing.assert_array_equal(read_face_colors(out / f"{name}-mesh.ply"), read_face_colors(single))
    capsys.readouterr()


@pytest.mark.slow
def test_an_interrupted_batch_runs_only_the_missing_items_again(meshes, tmp_path):
    out = tmp_path / "out"

    def stop_after_first(summary, rec):
        if summary.done == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_batch("mesh-seg", [meshes], out, params=PARAMS, workers=1, gpus="none", on_record=stop_after_first)
    first = read_manifest(out)
    assert len([r for r in first.values() if r["status"] == "done"]) == 1
    again = run_batch("mesh-seg", [meshes], out, params=PARAMS, workers=1, gpus="none")
    assert (again.skipped, again.done, again.failed) == (1, 2, 0)
    latest = read_manifest(out)
    assert sorted(r["status"] for r in latest.values()) == ["done", "done", "skipped"]
    # nothing half-written: every output of the manifest exists, no temporary files around
    for r in latest.values():
        assert all(Path(o).is_file() for o in r["outputs"])
    # (the bookkeeping: attempts, the journal of written files and the gpulab-output marker)
    assert not [p for p in out.iterdir() if p.name.startswith(".")
                and p.name not in (".attempts", ".gpulab-written", ".gpulab-output")]
    assert not (out / ".gpulab-staging").exists()


@pytest.mark.slow
def test_an_unreadable_item_fails_alone(meshes, tmp_path):
    (meshes / "broken.ply").write_text("ply\nformat ascii 1.0\nelement vertex 3\n")
    out = tmp_path / "out"
    s = run_batch("mesh-seg", [meshes], out, params=PARAMS, workers=2, gpus="none")
    assert (s.done, s.failed) == (3, 1)
    rec = read_manifest(out)["broken"]
    assert rec["status"] == "failed" and "broken.ply" in rec["error"] and rec["error_kind"] == "user"
    assert "\n" not in rec["error"]
    # a failed item is tried again on the next run; the done ones are skipped
    again = run_batch("mesh-seg", [meshes], out, params=PARAMS, workers=1, gpus="none")
    assert (again.skipped, again.failed) == (3, 1)


@pytest.mark.slow
def test_a_killed_worker_has_its_item_rescheduled(meshes, tmp_path):
    originals = sorted(meshes.glob("*.ply"))
    # six items (each sample twice; twelve until session 20): the kill comes with the first record, while
    # the other worker is still in its first item, so one is in flight whatever the count; fewer items
    # only shorten the rest of the batch
    for p in originals:
        shutil.copy(p, meshes / f"{p.stem}-0.ply")
    out = tmp_path / "out"
    state = {}

    def on_start(summary, client):
        state["pids"] = client.run(os.getpid)

    def on_record(summary, rec):
        if "killed" in state:
            return
        other = [pid for addr, pid in state["pids"].items() if not rec["worker"].endswith(f":{pid}")]
        os.kill(other[0], signal.SIGKILL)  # the other worker is in the middle of an item
        state["killed"] = other[0]

    s = run_batch("mesh-seg", [meshes], out, params={**PARAMS, "max_faces": 2500}, workers=2, gpus="none",
                  retries=2, on_start=on_start, on_record=on_record)
    assert "killed" in state
    latest = read_manifest(out)
    assert s.failed == 0 and s.done == len(latest) == 6
    assert max(r["attempts"] for r in latest.values()) >= 2  # the killed worker's item ran again
    assert all(r["status"] == "done" for r in latest.values())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.timeout(240)
@pytest.mark.slow
def test_an_existing_scheduler_on_loopback(meshes, tmp_path):
    port = _free_port()
    addr = f"tcp://127.0.0.1:{port}"
    bindir = Path(sys.executable).parent
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([str(bindir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        time.sleep(1)
        procs.append(subprocess.Popen([str(bindir / "dask"), "worker", addr, "--nthreads", "1", "--nworkers", "1",
                                       "--no-dashboard"], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        out = tmp_path / "out"
        s = run_batch("mesh-seg", [meshes], out, params=PARAMS, scheduler=addr)
        assert (s.done, s.failed) == (3, 0) and s.workers >= 1
        assert all(r["worker"].startswith(socket.gethostname()) for r in read_manifest(out).values())
    finally:
        for p in procs[::-1]:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()


def test_no_scheduler_there_is_one_clear_error(meshes, tmp_path, capsys, monkeypatch):
    import app.batch

    # the same path as the default 10 s, which the test spent waiting for a port nobody listens on
    monkeypatch.setattr(app.batch, "SCHEDULER_CONNECT_S", 1.0)
    addr = f"tcp://127.0.0.1:{_free_port()}"
    assert main(["batch", "mesh-seg", str(meshes), "--out", str(tmp_path / "o"), "--scheduler", addr, "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no Dask scheduler answers there" in err[0]


def test_the_command_line(meshes, tmp_path, capsys):
    out = tmp_path / "out"
    preset = tmp_path / "p.json"
    from app.tools import mesh_seg

    mesh_seg.PARAMS.save_json(preset, PARAMS, tool="mesh-seg")
    rc = main(["batch", "mesh-seg", str(meshes), "--out", str(out), "--gpus", "none", "--workers", "1",
               "--params", str(preset), "--k", "2", "-q"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "3 done, 0 failed" in text
    labels = read_seg(out / "dumbbell-labels.seg")
    assert labels.max() + 1 == 2  # --k on the command line overrides the preset's k = 3
    assert main(["batch", "mesh-seg", str(meshes), "--out", str(out), "--gpus", "none", "-q"]) == 0
    assert "0 done, 0 failed, 3 skipped" in capsys.readouterr().out
    assert main(["batch", "nosuchtask", "x", "--out", str(out)]) == 2


@pytest.mark.gui
@pytest.mark.slow
def test_the_batch_dialog_runs_the_same_batch(qtbot, meshes, tmp_path):
    pytest.importorskip("PySide6")
    from app.gui.main_window import MainWindow

    win = MainWindow()
    qtbot.addWidget(win)
    mesh_tab = win.tabs[0]
    mesh_tab.form.set_values(PARAMS)
    dlg = win.show_batch()
    assert dlg.task.currentData() == "mesh-seg"
    dlg.add_inputs([meshes])
    dlg.out.setText(str(tmp_path / "out"))
    dlg.gpus.setCurrentIndex(dlg.gpus.findData("none"))
    dlg.workers.setValue(1)
    with qtbot.waitSignal(dlg.runner.finished, timeout=120000):
        assert dlg.start()
    assert dlg.summary.done == 3 and "3 done, 0 failed" in dlg.status.text()
    assert read_seg(tmp_path / "out" / "dumbbell-labels.seg").max() + 1 == 3  # the tab's k = 3
    dlg.close()
    win.close()
