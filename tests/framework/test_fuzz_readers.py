"""Every registered reader (``app.io.registry``) against corrupted files: truncated, with
flipped bytes, with absurd header counts, empty and huge. The only acceptable failure is
:class:`gpu_kernels.errors.InputError` with one line; no other exception, no hang, no crash,
no allocation beyond a memory limit (each reader runs in a memory-limited subprocess)."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import fuzz_report
import numpy as np
import pytest

import app.io
from app.io.registry import READERS

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("fuzz_worker.py")
MEMORY_MB = 6144      # address space of the reading process (numpy, OpenCV, pymeshlab included)
TIMEOUT_S = 20.0      # per file
HUGE = 1 << 31        # the "huge" cases: a valid file followed by 2 GiB of (sparse) zeros

for _m in pkgutil.iter_modules(app.io.__path__):
    importlib.import_module(f"app.io.{_m.name}")


def _bundled(exts) -> list[Path]:
    found = [p for p in (ROOT / "resources").rglob("*") if p.is_file() and p.suffix.lower() in exts]
    found = [p for p in found if p.stat().st_size < (4 << 20)]
    # at most two bundled files per extension keep the suite quick
    per: dict[str, list[Path]] = {}
    for p in sorted(found):
        per.setdefault(p.suffix.lower(), []).append(p)
    return [p for ps in per.values() for p in ps[:2]]


def _mutants(data: bytes, stem: str, ext: str, rng: np.random.Generator) -> dict[str, bytes]:
    n = len(data)
    out = {f"{stem}-empty{ext}": b""}
    for frac in (0.0005, 0.1, 0.5, 0.9):
        cut = max(1, int(n * frac))
        out[f"{stem}-trunc{int(frac * 1000):04d}{ext}"] = data[:cut]
    out[f"{stem}-trunc-last{ext}"] = data[:-1]
    for i in range(4):
        b = bytearray(data)
        idx = rng.integers(0, n, size=min(16, n))
        for j in idx:
            b[j] ^= int(rng.integers(1, 256))
        out[f"{stem}-flip{i}{ext}"] = bytes(b)
    head = data[:1024]
    nums = list(re.finditer(rb"\d+", head))
    for k, m in enumerate(nums[:6]):
        b = head[:m.start()] + b"4000000000" + head[m.end():]
        out[f"{stem}-count{k}{ext}"] = b + data[1024:]
    if nums:
        b = re.sub(rb"\d+", b"99999999999", head)
        out[f"{stem}-countall{ext}"] = b + data[1024:]
    out[f"{stem}-garbage{ext}"] = bytes(rng.integers(0, 256, size=4096, dtype=np.uint8))
    return out


def _cases(reader, folder: Path) -> list[Path]:
    src = folder / "src"
    src.mkdir()
    samples = list(reader.make_samples(src)) if reader.make_samples else []
    samples += _bundled(reader.extensions)
    if not samples:
        pytest.fail(f"reader {reader.name!r} has no sample to corrupt: give it make_samples")
    cases = folder / "cases"
    cases.mkdir()
    rng = np.random.default_rng(1234)
    for i, s in enumerate(samples):
        data = s.read_bytes()
        ext = "".join(s.suffixes[-1:]).lower()
        stem = f"s{i:02d}"
        (cases / f"valid-{stem}{ext}").write_bytes(data)
        for name, b in _mutants(data, stem, ext, rng).items():
            (cases / name).write_bytes(b)
        huge = cases / f"{stem}-huge{ext}"
        with open(huge, "wb") as fh:
            fh.write(data)
            fh.truncate(HUGE)
    (cases / f"folder{reader.extensions[0]}").mkdir()
    # the path families: a FIFO (must not block), links, a unicode name
    first = next(p for p in sorted(cases.iterdir()) if p.name.startswith("valid-"))
    ext = first.name[len("valid-s00"):]
    os.mkfifo(cases / f"fifo{ext}")
    (cases / f"symlink-ok{ext}").symlink_to(first)
    (cases / f"symlink-dangling{ext}").symlink_to(cases / f"gone{ext}")
    (cases / f"unicode-ok-données é 日本{ext}").write_bytes(first.read_bytes())
    return sorted(cases.iterdir())


def _family(case: str) -> str:
    for key, fam in (("-empty", "empty"), ("-trunc", "truncated"), ("-flip", "random"), ("-garbage", "random"),
                     ("-count", "huge-count"), ("-huge", "huge-file"), ("folder", "directory"), ("fifo", "fifo"),
                     ("symlink-ok", "symlink"), ("symlink-dangling", "dangling-symlink"),
                     ("unicode-ok", "unicode-path"), ("valid-", "valid")):
        if key in case:
            return fam
    return "other"


def _medical(readers):
    """The volume reader's cases are MetaImage and NRRD files too, which need the medical extra."""
    return [pytest.param(r, marks=pytest.mark.medical) if r.name == "volume" else r for r in readers]


@pytest.mark.parametrize("reader", _medical(READERS), ids=lambda r: r.name)
def test_reader_survives_corrupt_files(reader, tmp_path):
    files = _cases(reader, tmp_path)
    r = subprocess.run([sys.executable, str(WORKER), reader.name, str(tmp_path / "cases"), str(MEMORY_MB),
                        str(TIMEOUT_S)], capture_output=True, encoding="utf-8", errors="replace", timeout=60 + TIMEOUT_S * len(files),
                       cwd=ROOT)
    lines = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    started = [d["start"] for d in lines if "start" in d]
    done = {d["case"]: d for d in lines if "case" in d}
    if r.returncode != 0 and started:
        fuzz_report.record("readers", reader.name, _family(started[-1]), "crash", "input_error", (), False)
    for k, v in done.items():
        fam = _family(k)
        expect = "ok" if fam in ("valid", "symlink", "unicode-path") else \
            ("input_error" if fam in ("empty", "directory", "fifo", "dangling-symlink") else "ok|input_error")
        fuzz_report.record("readers", reader.name, fam, v["outcome"], expect, (), v["outcome"] in expect.split("|"),
                           v.get("message", ""))
    assert r.returncode == 0, (f"the reading process died (exit {r.returncode}) on "
                               f"{started[-1] if started else '?'}:\n{r.stderr[-2000:]}")
    assert len(done) == len(files)
    bad = {k: v for k, v in done.items() if v["outcome"] not in ("ok", "input_error")}
    assert not bad, json.dumps(bad, indent=1)
    multi = {k: v["message"] for k, v in done.items() if v["outcome"] == "input_error" and not v["one_line"]}
    assert not multi, multi
    # no Python class name, errno or codec text reaches the user (issue 18, case 17)
    pythonish = re.compile(r"\b[A-Z]\w*(Error|Exception)\b|\[Errno|codec can't|Traceback")
    leaks = {k: v["message"] for k, v in done.items() if v["outcome"] == "input_error"
             and pythonish.search(v["message"])}
    assert not leaks, leaks
    for k, v in done.items():
        if k.startswith("valid-"):
            assert v["outcome"] == "ok", (k, v)
        if "-empty" in k or k.startswith("folder") or k.startswith("fifo") or k.startswith("symlink-dangling"):
            assert v["outcome"] == "input_error", (k, v)
        if k.startswith("symlink-ok") or k.startswith("unicode-ok"):
            assert v["outcome"] == "ok", (k, v)


def test_every_format_reader_is_registered():
    names = {r.name for r in READERS}
    assert {"mesh", "seg labels", "image"} <= names


@pytest.mark.parametrize("reader", _medical([r for r in READERS if r.name in ("volume", "image", "mesh", "echo study")]),
                         ids=lambda r: r.name)
def test_the_input_registry_dispatches_the_corrupt_cases_quickly(reader, tmp_path):
    """The window's Open and drop, the generated commands and batch ask the reader registry
    (app.io.registry) which tool takes a path before any reader runs: on every corrupt case
    (FIFOs, dangling links, empty, truncated, huge files, folders of them) it answers at once,
    never opens a FIFO and never raises."""
    import time

    from app.io.registry import INPUT_KINDS, kinds_for

    files = _cases(reader, tmp_path)
    t0 = time.perf_counter()
    for f in [*files, tmp_path / "cases", tmp_path / "src"]:
        kinds = kinds_for(f)
        assert all(k.name in INPUT_KINDS for k in kinds)
        for k in INPUT_KINDS.values():
            k.files_in(f if f.is_dir() else f.parent)
            k.partner(f)
            k.truth_beside(f)
    assert time.perf_counter() - t0 < 30.0   # ~1 s on a quiet core; no hang on a FIFO
    # the folder of cases holds files of this reader's kind: a folder input where the kind takes folders
    names = {k.name for k in kinds_for(tmp_path / "cases")}
    if reader.name in ("volume", "echo study"):
        assert "volumes" in names
    if reader.name == "image":
        assert {"frames", "image"} <= names
