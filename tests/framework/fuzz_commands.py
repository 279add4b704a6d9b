"""The command fuzz harness: bad inputs and hostile outputs for every ``gpulab`` command.

Used by ``test_fuzz_commands.py``. :func:`build_cases` writes small valid inputs into a folder
and derives one case per (command, family); ``python fuzz_commands.py CASES.json`` is the
worker that runs cases in one process through :func:`app.cli.main` (the CLI's import cost is
paid once) and prints one JSON line per case. Each case says what it expects:

* ``clear``: exit status 2 and one line ``gpulab: error: ...`` on stderr;
* ``ok``: exit status 0;
* ``ok|clear``: either (a folder input that is valid for some tools);

and, for every case, the files that must be left as they were (``protect``: inputs and the
user's own files; their SHA-256 is compared) and the outputs that must not exist after a
failure (``absent``: no half-written result).

Outcomes: ``ok``, ``clear`` (a clear one-line error), ``traceback`` (exit 3, or a traceback
or more than one line on stderr), ``hang`` (past the case's time limit), ``crash`` (the
worker died), ``cancelled`` (exit 130) and ``data_loss`` (a protected file changed or went,
or a failed run left an output behind).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import signal
import stat
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: time limit of one in-process case (a FIFO or a parser loop must not stall the suite)
CASE_TIMEOUT_S = 45.0
UNICODE_DIR = "données é 日本 ✓"

#: every family of the harness, in report order
FAMILIES = ("empty", "truncated", "random", "huge-count", "nan-inf", "fifo", "directory", "symlink",
            "dangling-symlink", "unicode-path", "read-only-output", "full-disk", "output-equals-input",
            "output-folder-with-user-files", "sigint", "sigkill")


# ----------------------------------------------------------------------------- valid inputs
def _write_inputs(d: Path) -> dict:
    """Small valid inputs of every kind, quick to process: returns their paths."""
    import numpy as np
    from scipy.ndimage import gaussian_filter
    from scipy.spatial import ConvexHull

    from app.io.image_io import write_image
    from app.io.mesh_io import write_colored_ply
    from app.io.volume_io import write_volume

    rng = np.random.default_rng(7)
    d.mkdir(parents=True, exist_ok=True)
    p = rng.normal(size=(120, 3))
    p /= np.linalg.norm(p, axis=1, keepdims=True)
    p[:, 0] *= 2.5
    f = ConvexHull(p).simplices
    write_colored_ply(d / "mesh.ply", p, f, np.full((len(f), 3), 200, np.uint8))
    (d / "mesh.off").write_text("OFF\n" + f"{len(p)} {len(f)} 0\n"
                                + "".join(f"{a:.6f} {b:.6f} {c:.6f}\n" for a, b, c in p)
                                + "".join(f"3 {a} {b} {c}\n" for a, b, c in f))
    img = gaussian_filter((rng.random((40, 56, 3)) * 255), (2, 2, 0)).astype(np.uint8)
    write_image(d / "a.png", img)
    write_image(d / "b.png", np.roll(img, 2, axis=1))
    v = gaussian_filter(rng.random((12, 12, 12)), 2).astype(np.float32)
    write_volume(d / "f.nii.gz", v)
    write_volume(d / "m.nii.gz", np.roll(v, 1, axis=2))
    mv = d / "mvs"
    mv.mkdir()
    lines = (ROOT / "resources/samples/mvs/synth_par.txt").read_text().splitlines()
    (mv / "s_par.txt").write_text("\n".join(["3", *lines[1:4]]) + "\n")
    for i in range(3):
        shutil.copy(ROOT / f"resources/samples/mvs/view{i:03d}.jpg", mv / f"view{i:03d}.jpg")
    return {"mesh": d / "mesh.ply", "a": d / "a.png", "b": d / "b.png", "fixed": d / "f.nii.gz",
            "moving": d / "m.nii.gz", "par": mv / "s_par.txt"}


#: per command: the argument list with {IN} (the fuzzed input), {OUT} (the output) and the
#: other inputs; the kind of output (file or folder); the extension of the fuzzed input
def _commands(inp: dict) -> dict:
    fast_mvs = ["--views", "0", "--max-iter", "1", "--min-views", "1", "--neighbors", "2"]
    return {
        "mesh-seg": {"argv": ["mesh-seg", "{IN}", "-o", "{OUT}", "--k", "2", "--max-iter", "3"],
                     "in": inp["mesh"], "out": "seg.ply", "folder": False},
        "flow": {"argv": ["flow", "{IN}", str(inp["b"]), "-o", "{OUT}"], "in": inp["a"], "out": "flow.flo",
                 "folder": False},
        "echo": {"argv": ["echo", "{IN}", str(inp["moving"]), "-o", "{OUT}", "--levels", "1", "--iters", "3"],
                 "in": inp["fixed"], "out": "u.npy", "folder": False},
        "mvs": {"argv": ["mvs", "{IN}", "-o", "{OUT}", *fast_mvs], "in": inp["par"], "out": "depth",
                "folder": True},
        "imseg": {"argv": ["imseg", "{IN}", "-o", "{OUT}"], "in": inp["a"], "out": "labels.png", "folder": False},
        "echo-synth": {"argv": ["echo-synth", "-o", "{OUT}", "--size", "16", "--frames", "2"], "in": None,
                       "out": "synth", "folder": True},
        "demo": {"argv": ["demo", "--out", "{OUT}", "--only", "imseg"], "in": None, "out": "demo", "folder": True},
        "mesh-seg --segments-dir": {"argv": ["mesh-seg", str(inp["mesh"]), "-o", "{OUTP}/seg2.ply",
                                             "--segments-dir", "{OUT}", "--k", "2", "--max-iter", "3"],
                                    "in": None, "out": "parts", "folder": True},
    }


# ----------------------------------------------------------------------------- corruptions
def _truncated(data: bytes) -> bytes:
    return data[: max(1, len(data) // 2)]


def _random(n: int, seed: int) -> bytes:
    import numpy as np

    return np.random.default_rng(seed).integers(0, 256, size=max(n, 64), dtype=np.uint8).tobytes()


def _huge(kind: str, data: bytes) -> bytes:
    """The valid file with a size field in its header made absurd."""
    import struct

    if kind == "ply":
        import re

        return re.sub(rb"element vertex \d+", b"element vertex 4000000000", data, count=1)
    if kind == "png":     # IHDR width and height (CRC left wrong: a corrupt header either way)
        return data[:16] + struct.pack(">II", 2_000_000_000, 2_000_000_000) + data[24:]
    if kind == "nii.gz":
        import gzip

        raw = bytearray(gzip.decompress(data))
        raw[40:56] = struct.pack("<8h", 3, 32767, 32767, 32767, 1, 1, 1, 1)
        return gzip.compress(bytes(raw))
    if kind == "par":
        lines = data.decode().splitlines()
        return "\n".join(["999999999", *lines[1:]]).encode()
    return data


def _nan(kind: str, work: Path, name: str) -> Path:
    """A file of the input's kind holding NaN or Inf values."""
    import numpy as np

    p = work / name
    if kind == "ply":
        from app.io.mesh_io import write_colored_ply

        v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [np.nan, np.inf, 0]], float)
        f = np.array([[0, 1, 2], [0, 2, 3], [1, 2, 3], [0, 1, 3]])
        with contextlib.suppress(Exception):
            write_colored_ply(p, v, f, np.full((4, 3), 9, np.uint8))
        if not p.exists():   # the writer refuses NaN itself: write the PLY by hand
            p.write_text("ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\n"
                         "property float z\nelement face 4\nproperty list uchar int vertex_indices\n"
                         "end_header\n0 0 0\n1 0 0\n0 1 0\nnan inf 0\n3 0 1 2\n3 0 2 3\n3 1 2 3\n3 0 1 3\n")
    elif kind == "png":
        import tifffile

        p = p.with_suffix(".tif")
        a = np.ones((32, 32), np.float32)
        a[3, 4] = np.nan
        a[5, 6] = np.inf
        tifffile.imwrite(p, a)
    elif kind == "nii.gz":
        import nibabel as nib

        a = np.ones((8, 8, 8), np.float32)
        a[1, 2, 3] = np.nan
        nib.save(nib.Nifti1Image(a, np.eye(4)), p)
    else:
        raise ValueError(f"no NaN sample for {kind}")
    return p


def _kind(path: Path) -> str:
    n = path.name.lower()
    if n.endswith("_par.txt"):
        return "par"
    if n.endswith(".nii.gz"):
        return "nii.gz"
    return path.suffix.lower().lstrip(".")


def _sha(path: Path) -> str | None:
    try:
        if path.is_dir():
            h = hashlib.sha256()
            for q in sorted(path.rglob("*")):
                h.update(str(q.relative_to(path)).encode())
                if q.is_file():
                    h.update(q.read_bytes())
            return "dir:" + h.hexdigest()
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _mount_tmpfs(path: Path, opts: str) -> bool:
    if os.geteuid() != 0 or not sys.platform.startswith("linux"):
        return False
    import subprocess

    path.mkdir(parents=True, exist_ok=True)
    try:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):   # no mount(8) in this container
        return False
    return r.returncode == 0


def _fill(folder: Path) -> None:
    """Fill the file system of ``folder`` up to its last byte."""
    for name, block in ((".filler", b"\0" * 4096), (".filler2", b"\0")):
        with open(folder / name, "wb", buffering=0) as fh:
            try:
                while True:
                    fh.write(block)
            except OSError:
                pass


def build_cases(work: Path, mounts: list[Path]) -> tuple[list[dict], list[str]]:
    """Every in-process case and the families skipped here (with the reason); the tmpfs
    mounted are appended to ``mounts`` (unmount them afterwards, also after an error)."""
    inp = _write_inputs(work / "inputs")
    cmds = _commands(inp)
    cases: list[dict] = []
    skipped: list[str] = []
    n = 0

    def case(cmd: str, family: str, argv: list[str], *, expect: str, protect=(), absent=(), timeout=CASE_TIMEOUT_S):
        nonlocal n
        n += 1
        extra = ["--gpus", "none"] if cmd.startswith("batch") else ["--device", "cpu"]
        cases.append({"id": f"{n:03d}", "command": cmd, "family": family, "argv": [*argv, "-q", *extra],
                      "expect": expect, "protect": [str(p) for p in protect], "absent": [str(p) for p in absent],
                      "timeout": timeout})

    def fill(spec, src: Path | None, out: Path) -> list[str]:
        return [a.replace("{IN}", str(src) if src else "").replace("{OUTP}", str(out.parent)).replace("{OUT}", str(out))
                for a in spec["argv"]]

    # --- the input families, for each command that reads an input file
    for cmd, spec in cmds.items():
        src: Path | None = spec["in"]
        base = work / "cases" / cmd.replace(" ", "_").replace("-", "_")
        base.mkdir(parents=True)
        protect_all = [p for p in inp.values()]
        if src is not None:
            kind = _kind(src)
            data = src.read_bytes()
            sibling = src.parent           # mvs needs the par file's images beside it

            def put(name: str, *, _sib=sibling, _base=base, _kind_=kind) -> Path:
                d = _base / name.replace("/", "_")
                d.mkdir()
                if _kind_ == "par":
                    for q in _sib.iterdir():
                        if q.suffix == ".jpg":
                            shutil.copy(q, d / q.name)
                return d

            fname = src.name
            for fam, content in (("empty", b""), ("truncated", _truncated(data)),
                                 ("random", _random(len(data), 11)), ("huge-count", _huge(kind, data))):
                d = put(fam)
                (d / fname).write_bytes(content)
                out = d / spec["out"]
                case(cmd, fam, fill(spec, d / fname, out), expect="clear", protect=[d / fname, *protect_all],
                     absent=[out])
            # NaN/Inf
            if kind == "par":
                d = put("nan-inf")
                lines = data.decode().splitlines()
                bad = lines[1].split()
                bad[3] = "nan"
                bad[-1] = "inf"
                (d / fname).write_text("\n".join([lines[0], " ".join(bad), *lines[2:]]) + "\n")
                nanfile = d / fname
            else:
                d = put("nan-inf")
                nanfile = _nan(kind, d, fname)
            out = d / spec["out"]
            case(cmd, "nan-inf", fill(spec, nanfile, out), expect="clear", protect=[nanfile], absent=[out])
            # FIFO
            d = put("fifo")
            os.mkfifo(d / fname)
            out = d / spec["out"]
            case(cmd, "fifo", fill(spec, d / fname, out), expect="clear", absent=[out], timeout=20)
            # a folder with the input's name
            d = put("directory")
            (d / fname).mkdir()
            out = d / spec["out"]
            case(cmd, "directory", fill(spec, d / fname, out), expect="clear", absent=[out])
            # a symbolic link to the valid input: works
            d = put("symlink")
            (d / fname).symlink_to(src)
            out = d / spec["out"]
            case(cmd, "symlink", fill(spec, d / fname, out), expect="ok", protect=[src])
            d = put("dangling-symlink")
            (d / fname).symlink_to(d / "gone" / fname)
            out = d / spec["out"]
            case(cmd, "dangling-symlink", fill(spec, d / fname, out), expect="clear", absent=[out])
            # output = input
            case(cmd, "output-equals-input", fill(spec, src, src if not spec["folder"] else src.parent),
                 expect="clear", protect=[src, *( [src.parent] if spec["folder"] else [])])
        # a unicode path for input and output
        d = base / UNICODE_DIR
        d.mkdir()
        uin = None
        if src is not None:
            if _kind(src) == "par":
                shutil.copytree(src.parent, d / "scene")
                uin = d / "scene" / src.name
            else:
                uin = d / src.name
                shutil.copy(src, uin)
        case(cmd, "unicode-path", fill(spec, uin, d / spec["out"]), expect="ok")
        # a read-only output folder: a read-only tmpfs as root, a chmod-ed folder otherwise
        ro = base / "read-only"
        if os.geteuid() == 0:
            if _mount_tmpfs(ro, "ro,size=64k"):
                mounts.append(ro)
            else:
                skipped.append(f"read-only-output/{cmd}: cannot mount a read-only tmpfs here")
                ro = None
        else:
            ro.mkdir()
            ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
        if ro is not None:
            case(cmd, "read-only-output", fill(spec, src, ro / spec["out"]), expect="clear", protect=protect_all)
        # a full disk (a 64 KiB tmpfs)
        full = base / "full"
        if _mount_tmpfs(full, "size=64k"):
            mounts.append(full)
            _fill(full)
            case(cmd, "full-disk", fill(spec, src, full / spec["out"]), expect="clear", protect=protect_all,
                 absent=[full / spec["out"]])
        else:
            skipped.append(f"full-disk/{cmd}: cannot mount a small tmpfs here (needs root)")
        # an output folder that holds the user's own files
        if spec["folder"]:
            d = base / "user-files" / spec["out"]
            d.mkdir(parents=True)
            (d / "thesis.tex").write_text("my thesis\n")
            (d / "notes").mkdir()
            (d / "notes" / "a.txt").write_text("notes\n")
            case(cmd, "output-folder-with-user-files", fill(spec, src, d), expect="ok|clear",
                 protect=[d / "thesis.tex", d / "notes" / "a.txt"])
    # a parameter preset (--params) that is a FIFO, a folder or empty: every tool command reads it
    pdir = work / "cases" / "params"
    pdir.mkdir(parents=True)
    os.mkfifo(pdir / "fifo.json")
    (pdir / "folder.json").mkdir()
    (pdir / "empty.json").write_bytes(b"")
    (pdir / "random.json").write_bytes(_random(300, 5))
    for fam, name in (("fifo", "fifo.json"), ("directory", "folder.json"), ("empty", "empty.json"),
                      ("random", "random.json")):
        out = pdir / f"{fam}-labels.png"
        case("imseg --params", fam, ["imseg", str(inp["a"]), "-o", str(out), "--params", str(pdir / name)],
             expect="clear", absent=[out], timeout=20)
    # batch: its own families (it reads folders and writes one)
    bdir = work / "cases" / "batch"
    (bdir / "in").mkdir(parents=True)
    shutil.copy(inp["a"], bdir / "in" / "a.png")
    (bdir / "in" / "notes.png").write_text("not an image\n")
    case("batch imseg", "random", ["batch", "imseg", str(bdir / "in"), "--out", str(bdir / "out1"), "--workers", "1"],
         expect="items", protect=[bdir / "in" / "a.png", bdir / "in" / "notes.png"], timeout=120)
    case("batch imseg", "output-equals-input", ["batch", "imseg", str(bdir / "in"), "--out", str(bdir / "in"),
                                                "--workers", "1"],
         expect="ok|clear|items", protect=[bdir / "in" / "a.png", bdir / "in" / "notes.png"], timeout=120)
    (bdir / "user").mkdir()
    (bdir / "user" / "thesis.tex").write_text("mine\n")
    case("batch imseg", "output-folder-with-user-files",
         ["batch", "imseg", str(bdir / "in" / "a.png"), "--out", str(bdir / "user"), "--workers", "1"],
         expect="ok|clear|items", protect=[bdir / "user" / "thesis.tex"], timeout=120)
    return cases, skipped


# ----------------------------------------------------------------------------- the worker
_PYTHONISH = __import__("re").compile(r"\b[A-Z]\w*(Error|Exception)\b|\[Errno|codec can't|Traceback|object has no")


class _Timeout(BaseException):
    pass


def _outcome(rc: int, err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("[")]
    if "Traceback" in err or rc == 3:
        return "traceback"
    if rc == 0:
        return "ok"
    if rc == 130:
        return "cancelled"
    if rc == 2 and len(lines) == 1 and lines[0].startswith("gpulab: error: "):
        # a clear line names no Python class or errno ("(BadGzipFile)", "[Errno 28]", "codec can't")
        if _PYTHONISH.search(lines[0]):
            return "unclear"
        return "clear"
    if rc == 2 and lines and lines[-1].startswith("gpulab: error: "):
        return "clear-multiline"
    return f"exit-{rc}"


def run_case(c: dict) -> dict:
    from app.cli import main

    before = {p: _sha(Path(p)) for p in c["protect"]}
    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, c["timeout"])
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(list(c["argv"]))
        outcome = _outcome(int(rc or 0), err.getvalue())
    except _Timeout:
        outcome, rc = "hang", None
    except SystemExit as exc:   # argparse's --help; never for these cases
        rc = exc.code if isinstance(exc.code, int) else 2
        outcome = _outcome(rc, err.getvalue())
    except BaseException as exc:  # noqa: BLE001 - escaped main(): a bug
        outcome, rc = "traceback", None
        err.write(f"{type(exc).__name__}: {exc}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    lost = [p for p, h in before.items() if h is not None and _sha(Path(p)) != h]
    # a failed run must leave no output behind (a half-written result is lost data too)
    lost += [f"{p} (left behind)" for p in c["absent"] if outcome != "ok" and Path(p).exists()]
    if c["command"].startswith("batch") and outcome == "exit-1":
        outcome = "items"      # batch: some items failed, each recorded in the manifest
    return {"id": c["id"], "command": c["command"], "family": c["family"], "expect": c["expect"],
            "outcome": outcome, "rc": rc, "data_loss": lost, "seconds": round(time.perf_counter() - t0, 2),
            "stderr": err.getvalue()[-600:]}


def main_worker(cases_file: str, done_file: str | None = None) -> int:
    cases = json.loads(Path(cases_file).read_text())

    def on_alarm(*_):
        raise _Timeout()

    signal.signal(signal.SIGALRM, on_alarm)
    os.environ.pop("GPULAB_DEBUG", None)
    for c in cases:
        print(json.dumps({"start": c["id"]}), flush=True)
        res = run_case(c)
        print(json.dumps(res), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main_worker(sys.argv[1]))


# ----------------------------------------------------------------------------- processes
def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (from /proc)."""
    parent: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    parent[int(d)] = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        for c, pp in parent.items():
            if pp == p and c not in out:
                out.add(c)
                todo.append(c)
    return out


def alive(pid: int) -> bool:
    """``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def reap(kids, proc) -> None:
    """A test's clean-up: SIGKILL the ``kids`` pids still alive, then the command ``proc``
    (a :class:`subprocess.Popen`) if it still runs."""
    for k in kids:
        if alive(k):
            os.kill(k, signal.SIGKILL)
    if proc.poll() is None:
        proc.kill()
