"""``benchmarks/bench_cli.run`` (session 8's review): an OSError raised while a benchmark ran was
turned into one line, so a real bug of that kind lost its traceback. Now only the path checks made
before anything is timed (BadInput, an OSError of ``check``) and gpulab's own user errors are one
line with status 2; anything else keeps Python's traceback and status 1. CPU only."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def bench_cli():
    sys.path.insert(0, str(BENCH))
    try:
        import bench_cli
    finally:
        sys.path.remove(str(BENCH))
    return bench_cli


def _script(tmp_path, body: str) -> subprocess.CompletedProcess:
    p = tmp_path / "bench_x.py"
    p.write_text(textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(BENCH)!r}, {str(ROOT)!r}]
        import bench_cli
        from bench_cli import BadInput

        def load_frames(path):
            return open(path, "rb").read()

        {body}
        sys.exit(bench_cli.run(main, check=globals().get("check")))
    """))
    return subprocess.run([sys.executable, str(p)], cwd=tmp_path, capture_output=True, text=True, timeout=60)


def test_an_oserror_inside_the_benchmark_keeps_its_traceback(tmp_path):
    r = _script(tmp_path, "def main(argv):\n            load_frames('/no/such/frame.png')")
    assert r.returncode == 1
    assert "Traceback (most recent call last)" in r.stderr
    assert "in load_frames" in r.stderr and "FileNotFoundError" in r.stderr


def test_a_path_check_before_timing_is_one_line(tmp_path):
    r = _script(tmp_path, "def check(argv):\n            open('/no/such/input.json')\n"
                          "        def main(argv):\n            raise AssertionError('never timed')")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == "bench_x.py: error: No such file or directory: /no/such/input.json"


def test_bad_input_and_gpulab_user_errors_inside_main_are_one_line(tmp_path):
    r = _script(tmp_path, "def main(argv):\n            raise BadInput('--data: no such folder: x')")
    assert (r.returncode, r.stderr.strip()) == (2, "bench_x.py: error: --data: no such folder: x")
    r = _script(tmp_path, "from gpu_kernels.errors import InputError\n"
                          "        def main(argv):\n            raise InputError('a.off: not a mesh')")
    assert (r.returncode, r.stderr.strip()) == (2, "bench_x.py: error: a.off: not a mesh")


def test_in_process_the_oserror_propagates(bench_cli):
    def main(argv):
        raise PermissionError(13, "Permission denied", "/results/x.json")

    with pytest.raises(PermissionError):
        bench_cli.run(main, [])

    def check(argv):
        raise NotADirectoryError(20, "Not a directory", "/a/file/x")

    assert bench_cli.run(lambda argv: 0, [], check=check) == 2


def test_a_cache_folder_that_cannot_be_made_is_one_line(bench_cli, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(bench_cli.BadInput, match=r"--cache .*afile/c: Not a directory"):
        bench_cli.check_cache_source("--cache", afile / "c", tmp_path)
