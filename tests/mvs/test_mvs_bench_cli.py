"""The MVS benchmark scripts (benchmarks/mvs*.py) on bad paths: one line on stderr, exit status 2,
no traceback, before anything is timed (session 7's review: they gave tracebacks, one after the
whole run for an output folder that did not exist). CPU only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"


def _run(script, *args, env=None, tmp_path):
    e = {k: v for k, v in os.environ.items() if k not in ("MVS4_CODE_ROOT", "MVS5_CODE_ROOT")}
    e.update({"GPULAB_SHARED_DATA": str(tmp_path / "no-data"), **(env or {})})
    return subprocess.run([sys.executable, str(BENCH / script), *args], cwd=ROOT, capture_output=True, text=True,
                          env=e, timeout=120)


@pytest.mark.parametrize("script,args,env,says", [
    ("mvs_session7.py", ["--compare", "{tmp}/a.json", "{tmp}/b.json"], None, "no such file: {tmp}/a.json"),
    ("mvs_session7.py", ["--label", "x", "--json", "{tmp}/missing/x.json"], None,
     "the folder {tmp}/missing does not exist"),
    ("mvs_session5.py", ["--json", "{tmp}/x.json"], {"MVS5_CODE_ROOT": "{tmp}/old"}, "no gpu_kernels folder"),
    ("mvs_session4.py", ["--json", "{tmp}/x.json"], None, "no MVS scene at {tmp}/no-data/middlebury-mvs"),
    ("mvs.py", ["queue", "--json", "{tmp}/x.json"], None, "no MVS scene at {tmp}/no-data/middlebury-mvs"),
], ids=["compare-missing", "json-folder-missing", "code-root-missing", "scene-missing", "queue-scene-missing"])
def test_a_bad_path_is_one_line_and_status_2(tmp_path, script, args, env, says):
    sub = {k: v.replace("{tmp}", str(tmp_path)) for k, v in (env or {}).items()}
    r = _run(script, *[a.replace("{tmp}", str(tmp_path)) for a in args], env=sub, tmp_path=tmp_path)
    assert r.returncode == 2, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert lines[0].startswith(f"{script}: error: ") and says.replace("{tmp}", str(tmp_path)) in lines[0]
    assert not list(tmp_path.glob("*.json"))  # nothing half-written


def test_the_checks_in_process(tmp_path):
    sys.path.insert(0, str(BENCH))
    try:
        import mvs_cli
    finally:
        sys.path.remove(str(BENCH))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    good = tmp_path / "good.json"
    good.write_text("{}")
    for argv, msg in ([["--compare", str(good)], "needs two JSON files"],
                      [["--compare", str(good), str(bad)], "is not a benchmark's JSON"],
                      [["--json", str(tmp_path)], "is a folder; give a file name"],
                      [["--json"], "--json needs a value"]):
        with pytest.raises(mvs_cli.BadInput, match=msg):
            mvs_cli.check_paths(argv)
    mvs_cli.check_paths(["--compare", str(good), str(good)])
    mvs_cli.check_paths(["--json", str(tmp_path / "out.json")])
    import doctest

    res = doctest.testmod(mvs_cli)
    assert res.attempted > 0 and res.failed == 0
