"""Issue 18's numbered fault cases (4-9, 17-19), one test each (or more): each failed before
its fix. The families over every reader and command are in ``test_fuzz_commands.py``."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import zipfile
from pathlib import Path

import fuzz_commands as fc
import numpy as np
import pytest

from app.errors import classify, in_context
from gpu_kernels.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


def _env(**extra):
    env = dict(os.environ)
    env.pop("GPULAB_DEBUG", None)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


# ----------------------------------------------------------------------------- case 4
@pytest.mark.skipif(not sys.platform.startswith("linux") or not os.path.isdir("/dev/shm"),
                    reason="the multi-process APSP shares memory through /dev/shm (Linux)")
def test_sigkill_during_multiprocess_apsp_leaves_no_process_and_no_segment():
    """Case 4: SIGKILL while the Dijkstra workers run. The pool workers, the fork server and
    the resource tracker must exit with the killed process, and the next run must remove
    the shared result file the killed one could not."""
    before = set(os.listdir("/dev/shm"))
    script = textwrap.dedent("""
        import numpy as np
        from gpu_kernels.graph.apsp import all_pairs_shortest_paths
        n = 9000
        rng = np.random.default_rng(0)
        s = np.concatenate([np.arange(n - 1), rng.integers(0, n, 3 * n)])
        d = np.concatenate([np.arange(1, n), rng.integers(0, n, 3 * n)])
        all_pairs_shortest_paths(n, s, d, rng.random(len(s)) + 0.1, method="cpu-mt", workers=2,
                                 device="cpu")
        print("finished", flush=True)
    """)
    proc = subprocess.Popen([PY, "-c", script], cwd=ROOT, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, encoding="utf-8", errors="replace")
    kids: set[int] = set()
    new: set[str] = set()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            # this run's file only: another process's run (a parallel test, another command) is not ours to
            # judge, nor to remove below
            new = {n for n in set(os.listdir("/dev/shm")) - before if n.startswith(f"gpulab-apsp-{proc.pid}-")}
            kids = fc.descendants(proc.pid)
            workers = [k for k in kids if fc.descendants(k)]  # the fork server has the workers
            if new and workers and len(kids) >= 4:
                break
            time.sleep(0.1)
        assert proc.poll() is None, "the APSP run ended before it could be killed"
        assert new, "no shared result file appeared"
        time.sleep(0.5)
        kids = fc.descendants(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(fc.alive(k) for k in kids):
            time.sleep(0.1)
        left = sorted(k for k in kids if fc.alive(k))
        assert not left, f"processes left running after SIGKILL of their parent: {left}"
        # the next start removes the dead run's segment
        from gpu_kernels.graph.apsp import cleanup_stale_shared_memory

        cleanup_stale_shared_memory()
        assert not (new & set(os.listdir("/dev/shm"))), "the killed run's shared file is still there"
    finally:
        fc.reap(kids, proc)
        for n in new:
            Path("/dev/shm", n).unlink(missing_ok=True)


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm")
def test_any_gpulab_start_removes_a_dead_runs_segment():
    """Case 4: "clean up at the next start" (any command, not only the next CPU APSP run)."""
    dead = subprocess.run([PY, "-c", "import os; print(os.getpid())"], capture_output=True, encoding="utf-8")
    f = Path("/dev/shm") / f"gpulab-apsp-{int(dead.stdout)}-testleak"
    f.write_bytes(b"\0" * 4096)
    try:
        r = subprocess.run([PY, "-m", "app", "info", "--device", "cpu"], cwd=ROOT, env=_env(), capture_output=True,
                           encoding="utf-8", errors="replace", timeout=120)
        assert r.returncode == 0, r.stderr
        assert not f.exists()
    finally:
        f.unlink(missing_ok=True)


def test_stale_segment_of_a_dead_process_is_removed_and_a_live_ones_kept(tmp_path):
    from gpu_kernels.graph.apsp import cleanup_stale_shared_memory

    dead = subprocess.run([PY, "-c", "import os; print(os.getpid())"], capture_output=True, encoding="utf-8", errors="replace")
    dead_pid = int(dead.stdout)
    (tmp_path / f"gpulab-apsp-{dead_pid}-abc").write_bytes(b"x")
    (tmp_path / f"gpulab-apsp-{os.getpid()}-def").write_bytes(b"x")
    (tmp_path / "other-file").write_bytes(b"x")
    removed = cleanup_stale_shared_memory(str(tmp_path))
    assert removed == [f"gpulab-apsp-{dead_pid}-abc"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"gpulab-apsp-{os.getpid()}-def", "other-file"]


# ----------------------------------------------------------------------------- case 5
def _reader_samples():
    import importlib
    import pkgutil

    import app.io
    from app.io.registry import READERS

    for m in pkgutil.iter_modules(app.io.__path__):
        importlib.import_module(f"app.io.{m.name}")
    return list(READERS)


@pytest.mark.parametrize("reader", _reader_samples(), ids=lambda r: r.name)
def test_fifo_is_refused_without_blocking(reader, tmp_path):
    """Case 5: a FIFO given as input hung ``gpulab echo``; every reader refuses it at once."""
    fifo = tmp_path / f"pipe{reader.extensions[0]}"
    os.mkfifo(fifo)
    result: dict = {}

    def read():
        try:
            reader.read(fifo)
            result["outcome"] = "ok"
        except InputError as exc:
            result["outcome"] = str(exc)
        except BaseException as exc:  # noqa: BLE001
            result["outcome"] = f"other {type(exc).__name__}: {exc}"

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():  # unblock the reader stuck in open()
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        t.join(5)
        pytest.fail(f"reader {reader.name!r} blocked on a FIFO")
    assert "FIFO" in result["outcome"], result


def test_fifo_given_to_echo_command_is_one_line(tmp_path):
    fifo = tmp_path / "vol.nii.gz"
    os.mkfifo(fifo)
    r = subprocess.run([PY, "-m", "app", "echo", str(fifo), str(fifo), "-o", str(tmp_path / "u.npy"), "-q",
                        "--device", "cpu"], cwd=ROOT, env=_env(), capture_output=True, encoding="utf-8", errors="replace", timeout=60)
    assert r.returncode == 2, r.stderr
    assert "FIFO" in r.stderr and "Traceback" not in r.stderr


# ----------------------------------------------------------------------------- case 6
def test_enomem_is_the_out_of_memory_line():
    """Case 6: ``OSError: [Errno 12]`` from the multi-process APSP was an internal error."""
    kind, msg = classify(OSError(errno.ENOMEM, "Cannot allocate memory"), "Mesh segmentation")
    assert kind == "oom"
    assert msg.startswith("Mesh segmentation ran out of host memory") and "Errno" not in msg


def test_full_shared_memory_falls_back_to_one_process(monkeypatch):
    from gpu_kernels.graph import apsp

    def full(fd, offset, size):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    n = 700
    rng = np.random.default_rng(1)
    s = np.concatenate([np.arange(n - 1), rng.integers(0, n, 2 * n)])
    d = np.concatenate([np.arange(1, n), rng.integers(0, n, 2 * n)])
    w = rng.random(len(s)) + 0.1
    got = apsp.all_pairs_shortest_paths(n, s, d, w, method="cpu-mt", workers=2, device="cpu")
    ref = apsp.all_pairs_shortest_paths(n, s, d, w, method="cpu", device="cpu")
    np.testing.assert_allclose(got, ref, rtol=1e-6)


# ----------------------------------------------------------------------------- case 7
@pytest.mark.parametrize("exc", [
    OSError(errno.ENOSPC, "No space left on device"),
    OSError(errno.ENOSPC, "No space left on device", "/data/out.ply"),
    OSError("19200 requested and 16352 written"),
    OSError(errno.EDQUOT, "Disk quota exceeded"),
    OSError(errno.EROFS, "Read-only file system"),
])
def test_disk_errors_are_user_errors(exc):
    kind, msg = classify(exc, "the command")
    assert kind == "user", msg
    assert "\n" not in msg and "Errno" not in msg and "requested" not in msg
    assert any(w in msg for w in ("space", "quota", "read-only", "full"))


def _tmpfs(path: Path, size: str) -> bool:
    if os.geteuid() != 0 or not sys.platform.startswith("linux"):
        return False
    path.mkdir(parents=True, exist_ok=True)
    try:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                           capture_output=True, encoding="utf-8", errors="replace", timeout=30)
    except (OSError, subprocess.SubprocessError):   # no mount(8) in this container
        return False
    return r.returncode == 0


@pytest.fixture
def full_disk(tmp_path):
    """A 64 KiB tmpfs (skipped where it cannot be mounted: not root, or no mount permission)."""
    mnt = tmp_path / "tiny"
    if not _tmpfs(mnt, "64k"):
        pytest.skip("cannot mount a small tmpfs here (needs root and mount permission)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.mark.parametrize("args", [
    ["mesh-seg", "resources/samples/creature.ply", "-o", "{out}/k.ply", "--k", "3", "--max-faces", "800",
     "--device", "cpu"],
    ["echo-synth", "-o", "{out}/syn", "--size", "24", "--frames", "3"],
    ["mvs", "resources/samples/mvs/synth_par.txt", "-o", "{out}/mv", "--views", "0", "--max-iter", "1",
     "--min-views", "1", "--neighbors", "2", "--device", "cpu"],
], ids=["mesh-seg", "echo-synth", "mvs"])
def test_full_disk_is_one_line(args, full_disk):
    """Case 7: ENOSPC gave a traceback in mesh-seg, mvs and echo-synth."""
    argv = [a.replace("{out}", str(full_disk)) for a in args]
    r = subprocess.run([PY, "-m", "app", *argv, "-q"], cwd=ROOT, env=_env(), capture_output=True, encoding="utf-8", errors="replace",
                       timeout=300)
    assert r.returncode == 2, r.stderr[-2000:]
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "space" in lines[0], r.stderr[-2000:]
    assert [p for p in full_disk.iterdir()] == [], "a partial output was left on the full disk"


# ----------------------------------------------------------------------------- case 9
@pytest.mark.parametrize("spacing", [[0.0, 1.0, 1.0], [-1.0, 1.0, 1.0], [np.nan, 1, 1], [1.0, 2.0],
                                     [1, 2, 3, 4, 5], ["a", "b", "c"]])
def test_bad_npz_spacing_is_an_error(tmp_path, spacing):
    from app.io.volume_io import VolumeIOError, read_volume

    p = tmp_path / "v.npz"
    np.savez(p, volume=np.zeros((4, 5, 6), np.float32), spacing=np.asarray(spacing))
    with pytest.raises(VolumeIOError, match="spacing"):
        read_volume(p)


def test_good_npz_spacing_is_kept(tmp_path):
    from app.io.volume_io import read_volume

    p = tmp_path / "v.npz"
    np.savez(p, volume=np.zeros((4, 5, 6), np.float32), spacing=np.array([2.0, 1.0, 0.5]))
    assert read_volume(p).spacing == (2.0, 1.0, 0.5)


def test_five_channel_tiff_is_read_as_five_channels(tmp_path):
    """Case 9: a 50x50x5 TIFF was read as a 50x5 image (tifffile stores it as 50 pages)."""
    import tifffile

    from app.io.image_io import ImageReadError, read_image

    p = tmp_path / "c5.tif"
    tifffile.imwrite(p, (np.random.default_rng(0).random((50, 50, 5)) * 255).astype(np.uint8))
    with pytest.raises(ImageReadError, match="5 channels"):
        read_image(p)
    rgb = (np.random.default_rng(1).random((50, 40, 3)) * 255).astype(np.uint8)
    tifffile.imwrite(tmp_path / "planar.tif", np.moveaxis(rgb, 2, 0), photometric="rgb",
                     planarconfig="separate")
    np.testing.assert_array_equal(read_image(tmp_path / "planar.tif"), rgb)
    tifffile.imwrite(tmp_path / "contig.tif", rgb, photometric="rgb")
    np.testing.assert_array_equal(read_image(tmp_path / "contig.tif"), rgb)


# ----------------------------------------------------------------------------- case 17
def test_file_name_is_not_said_twice():
    assert in_context("Opening notamesh.ply", "notamesh.ply: not a mesh") == "Opening notamesh.ply: not a mesh"
    assert in_context("Saving", "out.png: permission denied") == "Saving: out.png: permission denied"


def test_window_error_summary_names_the_file_once(tmp_path):
    pytest.importorskip("PySide6")
    from app.io.mesh_io import read_mesh
    from app.ui.worker import describe_exception

    p = tmp_path / "notamesh.ply"
    p.write_text("hello\n")
    with pytest.raises(InputError) as ei:
        read_mesh(p)
    summary, details = describe_exception("Opening notamesh.ply", ei.value)
    assert summary.count("notamesh.ply") == 1, summary
    assert details == ""


def _corrupt_files(d: Path) -> dict[str, Path]:
    import gzip

    out = {}
    good = gzip.compress(b"\x5c\x01" + b"\x00" * 400)
    out["nii.gz"] = d / "bad.nii.gz"
    out["nii.gz"].write_bytes(good[:12] + b"garbage" * 20)
    out["png"] = d / "bad.png"
    out["png"].write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    out["npz"] = d / "bad.npz"
    out["npz"].write_bytes(b"PK\x03\x04" + b"\x00" * 64)
    out["npy"] = d / "bad.npy"
    out["npy"].write_bytes(b"\x93NUMPY\x01\x00" + b"\x10" * 30)
    out["tif"] = d / "bad.tif"
    out["tif"].write_bytes(b"II*\x00" + b"\xff" * 40)
    out["mat"] = d / "bad.mat"
    out["mat"].write_bytes(b"MATLAB 5.0" + b"\x00" * 200)
    return out


def test_no_python_class_name_in_reader_errors(tmp_path):
    """Case 17: "(BadGzipFile)", "(UnidentifiedImageError)" reached users."""
    from app.io.image_io import read_image
    from app.io.labels_io import read_bsds_groundtruth
    from app.io.volume_io import read_volume

    readers = {"nii.gz": read_volume, "png": read_image, "npz": read_volume, "npy": read_volume,
               "tif": read_image, "mat": read_bsds_groundtruth}
    for kind, p in _corrupt_files(tmp_path).items():
        with pytest.raises(InputError) as ei:
            readers[kind](p)
        msg = str(ei.value)
        for word in ("BadGzipFile", "UnidentifiedImageError", "Error)", "BadZipFile", "TiffFileError",
                     "struct.error", "EOFError", "ValueError"):
            assert word not in msg, (kind, msg)


def test_text_file_named_png_is_refused_before_any_decoder_loads(tmp_path):
    """Case 17: a text file renamed .png took 4 s (Pillow tried each of its plugins). Measured
    structurally: the refusal comes from the first bytes, before Pillow or OpenCV import."""
    p = tmp_path / "notes.png"
    p.write_text("these are my notes\n" * 100)
    code = textwrap.dedent(f"""
        import sys, json
        from app.io.image_io import read_image
        try:
            read_image({str(p)!r})
            msg = None
        except Exception as exc:
            msg = str(exc)
        print(json.dumps({{"msg": msg, "pil": "PIL.Image" in sys.modules, "cv2": "cv2" in sys.modules}}))
    """)
    r = subprocess.run([PY, "-c", code], cwd=ROOT, env=_env(), capture_output=True, encoding="utf-8", errors="replace", timeout=60)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["msg"] and "text file" in out["msg"], out
    assert not out["pil"] and not out["cv2"], out


def test_one_pixel_image_is_refused(tmp_path):
    from app.io.image_io import ImageReadError, read_image, write_image

    write_image(tmp_path / "one.png", np.zeros((1, 1), np.uint8))
    with pytest.raises(ImageReadError, match="too small"):
        read_image(tmp_path / "one.png")
    write_image(tmp_path / "line.png", np.zeros((1, 40, 3), np.uint8))   # one row: still an image
    assert read_image(tmp_path / "line.png").shape == (1, 40, 3)
    write_image(tmp_path / "ok.png", np.zeros((2, 1), np.uint8))
    assert read_image(tmp_path / "ok.png").shape == (2, 1)


def test_zip_error_names_no_class(tmp_path):
    from app.io.volume_io import VolumeIOError, read_volume

    p = tmp_path / "v.npz"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("volume.npy", b"\x93NUMPY garbage")
    with pytest.raises(VolumeIOError) as ei:
        read_volume(p)
    assert "Error" not in str(ei.value)


# ----------------------------------------------------------------------------- case 8
def _tetra_strip():
    """A small closed mesh (an octahedron subdivided once) in a unit box."""
    v = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], float)
    f = np.array([[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]])
    return v, f


@pytest.mark.parametrize("value", [1e308, -1e200, 1e160])
def test_overflowing_vertex_is_a_clear_error(value):
    """Case 8: one vertex at 1e308 crashed mesh-seg with an IndexError."""
    from gpu_kernels.mesh.dualgraph import MeshInputError
    from gpu_kernels.mesh.segment import segment_mesh

    v, f = _tetra_strip()
    v[4] = [value, 0.0, 0.0]
    with pytest.raises(MeshInputError, match="too far out"):
        segment_mesh(v, f, k=2, device="cpu")


def test_far_vertex_does_not_make_every_face_zero_area():
    """Case 8: at 1e20, 9,403 of 9,408 faces were counted as zero-area (the tolerance was a
    fraction of the mean area, which the far vertex's faces dominate)."""
    from gpu_kernels.mesh.dualgraph import clean_mesh, dual_graph

    rng = np.random.default_rng(0)
    # a bumpy sphere of 400 faces
    from scipy.spatial import ConvexHull

    pts = rng.normal(size=(202, 3))
    pts /= np.linalg.norm(pts, axis=1, keepdims=True)
    f = ConvexHull(pts).simplices
    v = pts.copy()
    v[int(f[0, 0])] = [1e20, 0.0, 0.0]
    _v, kept_f, _kept, rep = clean_mesh(v, f)
    assert rep["n_degenerate_faces"] == 0, rep
    g = dual_graph(_v, kept_f, delta=0.5, eta_convex=0.2)
    assert any("far outside" in w for w in g.warnings), g.warnings


def test_far_vertex_in_a_file_gives_one_line_in_the_cli(tmp_path):
    from app.io.mesh_io import read_mesh, write_colored_ply

    v, f = read_mesh(ROOT / "resources/samples/creature.ply")
    v[int(f[0, 0])] = [1e308, 0.0, 0.0]
    p = tmp_path / "far.ply"
    write_colored_ply(p, v, f, np.full((len(f), 3), 200, np.uint8))
    r = subprocess.run([PY, "-m", "app", "mesh-seg", str(p), "-o", str(tmp_path / "o.ply"), "--k", "3", "-q",
                        "--device", "cpu"], cwd=ROOT, env=_env(), capture_output=True, encoding="utf-8", errors="replace", timeout=120)
    assert r.returncode == 2, r.stderr[-2000:]
    assert "too far out" in r.stderr
    # one line: no traceback, and no numpy RuntimeWarning (case 9) either
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


# ----------------------------------------------------------------------------- case 9 (the rest)
@pytest.mark.parametrize("flag,value", [("--workers", "0"), ("--retries", "-1"), ("--workers", "x")])
def test_batch_rejects_bad_counts(tmp_path, flag, value):
    r = subprocess.run([PY, "-m", "app", "batch", "imseg", "resources/samples/imseg", "--out", str(tmp_path / "o"),
                        flag, value, "-q"], cwd=ROOT, env=_env(), capture_output=True, encoding="utf-8", errors="replace", timeout=120)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert flag in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists()


def test_save_params_is_checked_before_the_run(tmp_path):
    out = tmp_path / "seg.png"
    r = subprocess.run([PY, "-m", "app", "imseg", "resources/samples/imseg/coffee.jpg", "-o", str(out),
                        "--save-params", str(tmp_path / "missing" / "p.json"), "-q", "--device", "cpu"],
                       cwd=ROOT, env=_env(), capture_output=True, encoding="utf-8", errors="replace", timeout=120)
    assert r.returncode == 2 and "--save-params" in r.stderr, r.stderr
    assert not out.exists(), "the run went ahead although --save-params could not be written"


def test_numpy_warnings_stay_off_stderr():
    """Case 9: numpy RuntimeWarnings reached stderr with -q; they go to the log (-v shows them)."""
    code = textwrap.dedent("""
        import sys
        import numpy as np
        from app import cli
        cli._setup_logging(0)
        np.float64(1e308) * 10
        cli._setup_logging(1)
        np.float64(1e308) * 100
    """)
    r = subprocess.run([PY, "-c", code], cwd=ROOT, env=_env(), capture_output=True, encoding="utf-8", errors="replace", timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("overflow") == 1, r.stderr     # only the one logged at -v
    assert "gpulab: WARNING" in r.stderr


def test_nibabel_warning_is_printed_once_and_only_with_verbose(tmp_path):
    nib = pytest.importorskip("nibabel")
    p = tmp_path / "v.nii"
    img = nib.Nifti1Image(np.zeros((4, 4, 4), np.float32), np.eye(4))
    img.header["pixdim"][1:4] = [1, 1, 1]
    img.header["sizeof_hdr"] = 348
    nib.save(img, p)
    code = textwrap.dedent("""
        import logging
        from app import cli
        cli._setup_logging({v})
        logging.getLogger("nibabel.global").warning("a nibabel warning")
    """)
    quiet = subprocess.run([PY, "-c", code.replace("{v}", "0")], cwd=ROOT, env=_env(), capture_output=True,
                           encoding="utf-8", errors="replace", timeout=60)
    loud = subprocess.run([PY, "-c", code.replace("{v}", "1")], cwd=ROOT, env=_env(), capture_output=True,
                          encoding="utf-8", errors="replace", timeout=60)
    assert "a nibabel warning" not in quiet.stderr, quiet.stderr
    assert loud.stderr.count("a nibabel warning") == 1, loud.stderr


# ----------------------------------------------------------------------------- case 18
def test_data_dir_from_environment_and_settings(tmp_path, monkeypatch):
    from app.io import sample_data

    monkeypatch.delenv("GPULAB_SHARED_DATA", raising=False)
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path / "env-data"))
    assert sample_data.data_dir() == tmp_path / "env-data"
    monkeypatch.delenv("GPULAB_DATA_DIR")
    (tmp_path / "set-data" / "cardiac-mri").mkdir(parents=True)
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "gpulab.ini").write_text(f"[paths]\ndata_dir={tmp_path / 'set-data'}\n")
    monkeypatch.setenv("GPULAB_SETTINGS_DIR", str(tmp_path / "cfg"))
    assert sample_data.data_dir() == tmp_path / "set-data"
    assert sample_data.data_path("cardiac-mri") == tmp_path / "set-data" / "cardiac-mri"
    assert sample_data.data_path("psb") is None


def test_echo_samples_follow_the_data_dir(tmp_path, monkeypatch):
    from app.tools import echo

    acdc = tmp_path / "cardiac-mri" / "acdc"
    acdc.mkdir(parents=True)
    (acdc / "sax_ed.nii.gz").write_bytes(b"x")
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path))
    assert (acdc / "sax_ed.nii.gz").resolve() in echo.samples()


def test_unusable_display_is_one_line_not_an_abort(tmp_path):
    """Case 18: with DISPLAY pointing at no X server gpulab aborted with exit 134."""
    pytest.importorskip("PySide6")
    env = _env(DISPLAY=":187", GPULAB_SETTINGS_DIR=str(tmp_path))
    env.pop("QT_QPA_PLATFORM", None)
    env.pop("WAYLAND_DISPLAY", None)
    r = subprocess.run([PY, "-m", "app", "--quit-after", "100"], cwd=ROOT, env=env, capture_output=True,
                       encoding="utf-8", errors="replace", timeout=120)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "QT_QPA_PLATFORM=offscreen" in lines[0] and "Xvfb" in lines[0], r.stderr


def test_check_display_accepts_a_running_x_server(tmp_path, monkeypatch):
    import shutil

    from app.cli import check_display
    from app.errors import UserError

    if not shutil.which("Xvfb"):
        pytest.skip("Xvfb is not installed (make test installs it)")
    n = 100 + os.getpid() % 700
    xvfb = subprocess.Popen(["Xvfb", f":{n}", "-screen", "0", "320x240x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
        monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
        monkeypatch.setenv("DISPLAY", f":{n}")
        deadline = time.monotonic() + 10
        while not Path(f"/tmp/.X11-unix/X{n}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        check_display()
        monkeypatch.setenv("DISPLAY", f":{n + 1}")
        with pytest.raises(UserError, match="offscreen"):
            check_display()
        # a library Qt's xcb plugin needs is missing (Qt aborted with exit 134 and a hint)
        import ctypes

        real = ctypes.CDLL

        def fake(name, *a, **k):
            if str(name).endswith("libQt6XcbQpa.so.6"):
                raise OSError("libxcb-cursor.so.0: cannot open shared object file: No such file or directory")
            return real(name, *a, **k)

        monkeypatch.setenv("DISPLAY", f":{n}")
        monkeypatch.setattr(ctypes, "CDLL", fake)
        import importlib.util

        if importlib.util.find_spec("PySide6") is not None:   # the check reads PySide6's xcb library
            with pytest.raises(UserError, match="apt install libxcb-cursor0"):
                check_display()
        monkeypatch.setattr(ctypes, "CDLL", real)
        monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
        check_display()   # not xcb: nothing to check
    finally:
        xvfb.terminate()
        xvfb.wait(10)


# ----------------------------------------------------------------------------- case 19
def test_version_imports_nothing_heavy():
    """Case 19: ``gpulab --version`` imported NumPy, SciPy and every tool (0.6-1.6 s).
    Checked structurally (what is imported), not by timing."""
    code = ("import sys, io, contextlib\nfrom app.cli import main\nbuf = io.StringIO()\n"
            "with contextlib.redirect_stdout(buf):\n    rc = main(['--version'])\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'scipy', 'PySide6', 'cupy', "
            "'gpu_kernels') or m.startswith('app.tools') or m.startswith('app.commands'))\n"
            "print(rc, buf.getvalue().strip(), heavy)")
    r = subprocess.run([PY, "-c", code], cwd=ROOT, env=_env(), capture_output=True, encoding="utf-8", errors="replace", timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().startswith("0 gpulab ") and r.stdout.strip().endswith("[]"), r.stdout
    imp = subprocess.run([PY, "-X", "importtime", "-m", "app", "--version"], cwd=ROOT, env=_env(),
                         capture_output=True, encoding="utf-8", errors="replace", timeout=60)
    assert imp.returncode == 0 and imp.stdout.startswith("gpulab ")
    import re

    heavy = re.findall(r"\|\s+(numpy|scipy|PySide6)\s*$", imp.stderr, flags=re.M)
    assert not heavy, f"imported by --version: {sorted(set(heavy))}"


def _dead_pid() -> int:
    r = subprocess.run([PY, "-c", "import os; print(os.getpid())"], capture_output=True, encoding="utf-8", errors="replace")
    return int(r.stdout)


def test_stale_part_folders_of_killed_runs_are_removed(tmp_path):
    """Case 9: a SIGKILLed echo-synth left hidden 41 MB .part folders no later run removed."""
    from app.io.atomic import _host

    dead = _dead_pid()
    stale = tmp_path / f".syn.{_host()}-{dead}.k2j4.part"
    stale.mkdir()
    (stale / "sequence.nii.gz").write_bytes(b"x" * 1000)
    live = tmp_path / f".syn.{_host()}-{os.getpid()}.zz.part"   # a run still going: kept
    live.mkdir()
    user = tmp_path / ".syn.notes.part"                          # not ours: kept
    user.write_text("mine")
    r = subprocess.run([PY, "-m", "app", "echo-synth", "-o", str(tmp_path / "syn"), "--size", "16", "--frames", "2",
                        "-q"], cwd=ROOT, env=_env(), capture_output=True, encoding="utf-8", errors="replace", timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert not stale.exists()
    assert live.exists() and user.exists()
    assert (tmp_path / "syn").is_dir()


def test_sigkilled_echo_synth_leftovers_go_at_the_next_run(tmp_path):
    proc = subprocess.Popen([PY, "-m", "app", "echo-synth", "-o", str(tmp_path / "syn"), "--size", "72",
                             "--frames", "8", "-q", "--device", "cpu"], cwd=ROOT, env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        parts: list = []
        while time.monotonic() < deadline and proc.poll() is None:
            parts = [p for p in tmp_path.iterdir() if ".part" in p.name]
            if parts:
                break
            time.sleep(0.05)
        if not parts:
            pytest.skip("the run finished before a temporary folder could be seen")
        proc.kill()
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert [p for p in tmp_path.iterdir() if ".part" in p.name], "nothing left to clean (the kill came late)"
    assert not (tmp_path / "syn").exists()
    r = subprocess.run([PY, "-m", "app", "echo-synth", "-o", str(tmp_path / "syn"), "--size", "16", "--frames", "2",
                        "-q", "--device", "cpu"], cwd=ROOT, env=_env(), capture_output=True, encoding="utf-8", errors="replace", timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert [p.name for p in tmp_path.iterdir()] == ["syn"]


# ----------------------------------------------------------------------------- case 9: pymeshlab
def _pymeshlab_file(tmp_path, ext):
    pymeshlab = pytest.importorskip("pymeshlab")
    ms = pymeshlab.MeshSet()
    ms.load_new_mesh(str(ROOT / "resources/samples/table.ply"))
    p = tmp_path / f"table.{ext}"
    ms.save_current_mesh(str(p))
    return p


def test_pymeshlab_formats_load_in_a_child_process(tmp_path):
    """Case 9: 3MF, glTF, DAE ... were loaded by pymeshlab in the window's own process, where
    a corrupt file can crash it; checked structurally: pymeshlab is not imported here."""
    p = _pymeshlab_file(tmp_path, "3mf")
    code = ("import sys\nfrom app.io.mesh_io import read_mesh\nv, f = read_mesh(sys.argv[1])\n"
            "print(len(v), len(f), 'pymeshlab' in sys.modules)")
    r = subprocess.run([PY, "-c", code, str(p)], cwd=ROOT, env=_env(), capture_output=True, encoding="utf-8", errors="replace", timeout=120)
    assert r.returncode == 0, r.stderr
    nv, nf, imported = r.stdout.split()
    assert int(nf) > 0 and imported == "False"


def test_a_crash_of_the_mesh_importer_is_one_line(tmp_path, monkeypatch):
    from app.io import pymeshlab_child
    from app.io.mesh_io import MeshIOError, read_mesh

    p = _pymeshlab_file(tmp_path, "dae")
    (tmp_path / "crashing_child.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setattr(pymeshlab_child, "_CHILD_MODULE", "crashing_child")
    with pytest.raises(MeshIOError, match="crashed") as ei:
        read_mesh(p)
    assert "SIGSEGV" in str(ei.value) and "\n" not in str(ei.value)


@pytest.mark.parametrize("argv", [["mesh-seg", "--help"], ["--help"], ["batch", "imseg", "-h"]])
def test_repeated_help_imports_nothing_heavy(tmp_path, argv):
    """Case 19: ``gpulab mesh-seg --help`` took 1.8 s (every tool imported). The first help
    builds the parsers and keeps the text (keyed by the sources, version, width); the next one
    prints it importing only the standard library. Checked structurally, not timed."""
    import re

    env = _env(XDG_CACHE_HOME=str(tmp_path), COLUMNS="100")
    kw = {"cwd": ROOT, "capture_output": True, "encoding": "utf-8", "errors": "replace", "timeout": 120}
    for _attempt in range(2):   # a second try only where a source file changed in between (a shared tree)
        first = subprocess.run([PY, "-m", "app", *argv], env=env, **kw)
        second = subprocess.run([PY, "-X", "importtime", "-m", "app", *argv], env=env, **kw)
        assert first.returncode == 0 and second.returncode == 0, (first.stderr, second.stderr)
        assert first.stdout == second.stdout and "usage: gpulab" in first.stdout
        heavy = re.findall(r"\|\s+(numpy|scipy|PySide6|app\.tools|app\.commands)\s*$", second.stderr,
                           flags=re.M)
        if not heavy:
            break
    assert not heavy, f"imported by a repeated --help: {sorted(set(heavy))}"
    # a different width is another text (argparse wraps to the terminal)
    narrow = subprocess.run([PY, "-m", "app", *argv], env={**env, "COLUMNS": "60"}, **kw)
    assert narrow.returncode == 0 and narrow.stdout != first.stdout


def test_help_cache_key_follows_sources_and_environment(monkeypatch):
    from app import cli

    k = cli._help_key(["mesh-seg", "--help"])
    assert k is not None and k == cli._help_key(["mesh-seg", "--help"])
    assert cli._help_key(["mesh-seg", "x.ply", "--help"]) is None     # not a pure help request
    assert cli._help_key(["mesh-seg", "--k", "3"]) is None
    monkeypatch.setenv("GPULAB_TOOLS", "mypkg.tool:TOOL")
    assert cli._help_key(["mesh-seg", "--help"]) != k


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")
def test_a_killed_apsp_worker_is_the_out_of_memory_line():
    """Case 6: a pool worker killed by the OOM killer gave a BrokenProcessPool traceback."""
    code = textwrap.dedent("""
        import os, signal, threading, time
        import numpy as np
        from app.errors import classify
        from gpu_kernels.graph.apsp import all_pairs_shortest_paths

        def descendants(pid):
            kids = set()
            for d in os.listdir("/proc"):
                if d.isdigit():
                    try:
                        with open(f"/proc/{d}/stat") as fh:
                            if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                                kids.add(int(d))
                    except (OSError, ValueError, IndexError):
                        pass
            return kids

        def killer():
            for _ in range(600):
                workers = [w for k in descendants(os.getpid()) for w in descendants(k)]
                if workers:
                    time.sleep(0.3)
                    os.kill(workers[0], signal.SIGKILL)
                    return
                time.sleep(0.05)

        threading.Thread(target=killer, daemon=True).start()
        n = 8000
        rng = np.random.default_rng(0)
        s = np.concatenate([np.arange(n - 1), rng.integers(0, n, 3 * n)])
        d = np.concatenate([np.arange(1, n), rng.integers(0, n, 3 * n)])
        try:
            all_pairs_shortest_paths(n, s, d, rng.random(len(s)) + 0.1, method="cpu-mt", workers=2, device="cpu")
            print("FINISHED")
        except BaseException as exc:
            kind, msg = classify(exc, "Mesh segmentation")
            print(kind, "|", msg)
    """)
    r = subprocess.run([PY, "-c", code], cwd=ROOT, env=_env(), capture_output=True, encoding="utf-8", errors="replace", timeout=300)
    out = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr[-1000:]
    if out == "FINISHED":
        pytest.skip("the run ended before a worker could be killed")
    assert out.startswith("oom | Mesh segmentation ran out of host memory"), out


@pytest.mark.slow
@pytest.mark.parametrize("ext", ["3mf", "dae", "wrl"])
def test_corrupt_pymeshlab_formats_are_one_line(tmp_path, ext):
    """The formats read by pymeshlab in its child process, corrupted: one MeshIOError line each,
    never a crash of this process (the reader fuzz covers the formats we parse ourselves)."""
    import fuzz_report

    from app.io.mesh_io import MeshIOError, read_mesh

    good = _pymeshlab_file(tmp_path, ext).read_bytes()
    rng = np.random.default_rng(3)
    flipped = bytearray(good)
    for j in rng.integers(0, len(good), 24):
        flipped[j] ^= 0x5A
    cases = {"truncated": good[: len(good) // 2], "random": rng.integers(0, 256, 2048, dtype=np.uint8).tobytes(),
             "random-flips": bytes(flipped), "huge-count": good.replace(b"count=\"", b"count=\"9999999999")}
    for fam, data in cases.items():
        p = tmp_path / f"{fam}.{ext}"
        p.write_bytes(data)
        try:
            read_mesh(p)
            outcome = "ok"
        except MeshIOError as exc:
            outcome = "input_error" if "\n" not in str(exc).strip() else "multiline"
        except Exception as exc:  # noqa: BLE001
            outcome = f"other {type(exc).__name__}"
        fuzz_report.record("readers", f"mesh ({ext}, pymeshlab)", fam, outcome if not outcome.startswith("other")
                           else "other", "ok|input_error", (), outcome in ("ok", "input_error"))
        assert outcome in ("ok", "input_error"), (fam, outcome)
