"""The session-8 benchmark scripts on bad paths (reviewer B, session 8, F10): one line on stderr,
exit status 2, no traceback, before anything runs, and nothing written. A wrong ``--data`` no
longer runs from a cache and writes over the committed results; a results file committed in
benchmarks/results is written over only where the user names it. The checks are
``benchmarks/bench_cli.py``'s, shared with ``mvs_cli`` (whose ``--json=PATH`` form is checked
now too). CPU only, no benchmark runs."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
RESULTS = BENCH / "results"
MESH = ROOT / "resources" / "samples" / "dumbbell.ply"


def _run(script, *args, tmp_path):
    return subprocess.run([sys.executable, str(BENCH / script), *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                                       "GPULAB_SHARED_DATA": str(tmp_path / "no-data")})


def _fake_bsds(root: Path) -> Path:
    """A folder laid out as the shared bsds500 (the checks look at the layout, not the images)."""
    for d in (root / "train", root):
        (d / "images").mkdir(parents=True, exist_ok=True)
        (d / "groundTruth").mkdir(exist_ok=True)
        (d / "images" / "1.jpg").write_bytes(b"")
    return root


def _rows(path: Path) -> Path:
    path.write_text(json.dumps({"config": "defaults s1", "mesh": "1.off", "category": "a", "RI_auto": 0.1,
                                "RI": 0.1, "in_range": True}) + "\n")
    return path


def _digests():
    return {p.name: hashlib.sha1(p.read_bytes()).hexdigest() for p in RESULTS.glob("*.json")}


CASES = [
    # a wrong --data: was a silent run from the /tmp cache that wrote over the committed JSON, rc 0
    ("imseg_session8_quality.py", ["--data", "{tmp}/nope", "--cache", "{tmp}/cache"], "--data: no such folder: {tmp}/nope"),
    ("imseg_session8_quality.py", ["--data", "{tmp}/empty", "--cache", "{tmp}/cache"], "holds no BSDS500 images"),
    ("imseg_session8_quality.py", ["--data", "{bsds}", "--cache", "{tmp}/cache", "--out", "{tmp}/missing/q.json"],
     "--out {tmp}/missing/q.json: the folder {tmp}/missing does not exist"),
    ("imseg_session8_quality.py", ["--data", "{bsds}", "--cache", "{tmp}/afile/c"], "afile is a file, not a folder"),
    ("imseg_session8_hist.py", ["--data", "{tmp}/nope", "--cache", "{tmp}/cache"], "--data: no such folder"),
    ("imseg_session8_hist.py", ["--data", "{bsds}", "--cache", "{tmp}/cache", "--out", "{tmp}/afile"],
     "not a benchmark's JSON"),
    # was a ZeroDivisionError traceback
    ("imseg_session8_boundary.py", ["screen", "--data", "{tmp}/empty", "--out", "{tmp}"], "holds no BSDS500 images"),
    ("imseg_session8_boundary.py", ["full", "--data", "{bsds}", "--out", "{tmp}"],
     "no such file: {tmp}/imseg_boundary_session8_screen.json"),
    ("imseg_session8_boundary.py", ["screen", "--data", "{bsds}", "--out", "{tmp}/nope"], "--out: no such folder"),
    # were MeshIOError / FileNotFoundError tracebacks, the latter after all the timing
    ("mesh_speed8.py", ["{tmp}/nope.off", "--device", "cpu"], "mesh: no such file: {tmp}/nope.off"),
    ("mesh_speed8.py", [str(MESH), "--device", "cpu", "--json", "{tmp}/missing/x.json"],
     "--json {tmp}/missing/x.json: the folder {tmp}/missing does not exist"),
    ("mesh_speed8.py", [str(MESH), "--device", "cpu", "--root", "{tmp}"], "no gpulab tree there"),
    ("mesh_quality_session8_judge.py", ["{tmp}/nope.jsonl"], "rows: no such file: {tmp}/nope.jsonl"),
    ("mesh_quality_session8_judge.py", ["{tmp}/afile"], "is not a benchmark's JSON"),
    ("mesh_quality_session8_judge.py", ["{rows}", "--timing", "{tmp}/t.json"], "--timing: no such file"),
    ("mesh_quality_session8_judge.py", ["{rows}", "--json", "{tmp}/missing/j.json"], "the folder {tmp}/missing does not"),
    # the =-form and an abbreviation of --json went unchecked: the whole benchmark ran first
    ("mvs.py", ["queue", "--json={tmp}/missing/x.json"], "--json {tmp}/missing/x.json: the folder"),
    ("mvs_session7.py", ["--label", "x", "--js", "{tmp}/missing/x.json"], "--json {tmp}/missing/x.json: the folder"),
]


@pytest.mark.parametrize("script,args,says", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_a_bad_path_is_one_line_status_2_and_writes_nothing(tmp_path, script, args, says):
    (tmp_path / "empty").mkdir()
    (tmp_path / "afile").write_text("not json\n")
    subs = {"{tmp}": str(tmp_path), "{bsds}": str(_fake_bsds(tmp_path / "bsds")),
            "{rows}": str(_rows(tmp_path / "rows.jsonl"))}

    def sub(s):
        for k, v in subs.items():
            s = s.replace(k, v)
        return s

    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    committed = _digests()
    r = _run(script, *map(sub, args), tmp_path=tmp_path)
    assert r.returncode == 2, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert lines[0].startswith(f"{script}: error: ") and sub(says) in lines[0], lines[0]
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before   # nothing written
    assert _digests() == committed


@pytest.mark.parametrize("script,args,name", [
    ("imseg_session8_quality.py", [], "imseg_quality_session8.json"),
    ("imseg_session8_hist.py", [], "imseg_quality_session8_hist.json"),
    ("imseg_session8_boundary.py", ["screen"], "imseg_boundary_session8_screen.json"),
])
def test_the_committed_results_are_not_written_over_unnamed(tmp_path, script, args, name):
    """Good data and no --out: the default results file exists (committed), so the run stops before
    anything, rather than replacing it (reviewer B replaced two of them by accident)."""
    target = RESULTS / name
    assert target.is_file(), f"{target} is committed"
    committed = _digests()
    r = _run(script, *args, "--data", str(_fake_bsds(tmp_path / "bsds")), "--cache", str(tmp_path / "c"),
             tmp_path=tmp_path) if script != "imseg_session8_boundary.py" else \
        _run(script, *args, "--data", str(_fake_bsds(tmp_path / "bsds")), tmp_path=tmp_path)
    assert r.returncode == 2, r.stderr[-2000:]
    line = r.stderr.strip()
    assert "\n" not in line and f"{target} exists (committed results); name it with --out" in line, line
    assert _digests() == committed
    assert not (tmp_path / "c").exists()


def test_the_shared_checks_in_process(tmp_path):
    sys.path.insert(0, str(BENCH))
    try:
        import bench_cli
    finally:
        sys.path.remove(str(BENCH))
    v = bench_cli.option_value
    assert v(["--json", "a"], "--json") == "a"
    assert v(["--json=b"], "--json") == "b"
    assert v(["--js", "c"], "--json") == "c"                  # argparse takes a unique abbreviation
    assert v(["--json-dir", "d"], "--json") is None
    assert v(["--", "--json", "e"], "--json") is None
    with pytest.raises(bench_cli.BadInput, match="--json needs a value"):
        v(["--json"], "--json")
    old = tmp_path / "old.json"
    old.write_text("{}")
    with pytest.raises(bench_cli.BadInput, match="exists"):
        bench_cli.check_results_file("--out", None, old)     # the default: never over an existing file
    assert bench_cli.check_results_file("--out", str(old), old) == old   # named: the user's choice
    assert bench_cli.check_results_file("--out", None, tmp_path / "new.json") == tmp_path / "new.json"
    bench_cli.write_json(tmp_path / "w.json", {"a": 1})
    assert json.loads((tmp_path / "w.json").read_text()) == {"a": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json", "w.json"]   # no temporary left
    import doctest

    res = doctest.testmod(bench_cli)
    assert res.attempted > 0 and res.failed == 0


def test_a_cache_made_from_other_data_does_not_stand_in_for_data(tmp_path):
    """A valid but different --data with the cache of an earlier run: refused in one line (the
    cache would have been scored in its place), in both scripts that share the cache."""
    sys.path.insert(0, str(BENCH))
    try:
        import bench_cli
    finally:
        sys.path.remove(str(BENCH))
    a, b, cache = _fake_bsds(tmp_path / "a"), _fake_bsds(tmp_path / "b"), tmp_path / "cache"
    bench_cli.check_cache_source("--cache", cache, a)             # a new cache: marked with its data
    assert (cache / bench_cli.CACHE_SOURCE).read_text().strip() == str(a.resolve())
    bench_cli.check_cache_source("--cache", cache, a)             # the same data again: fine
    old = tmp_path / "old-cache"
    old.mkdir()
    bench_cli.check_cache_source("--cache", old, b)               # a cache from before the marker: taken
    for script in ("imseg_session8_quality.py", "imseg_session8_hist.py"):
        r = _run(script, "--data", str(b), "--cache", str(cache), "--out", str(tmp_path / "new.json"),
                 tmp_path=tmp_path)
        assert r.returncode == 2, r.stderr[-2000:]
        line = r.stderr.strip()
        assert "\n" not in line and f"--cache {cache} was made from {a.resolve()}, not --data {b.resolve()}" in line
        assert not (tmp_path / "new.json").exists()
