"""The shared judge of the margin rounds (``benchmarks/mesh_round.MarginRound``, session 20) gives the verdicts its
rounds printed on the device: q14 (session 19: both candidates fail), q15 and q16 (session 20: the candidate passes
and ships), from the rows and round.json each call brought back."""

from __future__ import annotations

import gzip
import importlib
import io
import json
import sys
import tarfile
from contextlib import redirect_stdout
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
CASES = {  # script, its results folder, the verdicts the device printed
    "q14": ("mesh_session19_q14", "mesh_q14_session19_call1", {"G75": False, "T": False}, None),
    "q15": ("mesh_session20_q15", "mesh_q15_session20", {"S": True}, "S"),
    "q16": ("mesh_session20_q16", "mesh_q16_session20", {"F": True}, "F"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_shared_judge_gives_the_recorded_verdicts(name, tmp_path, monkeypatch):
    script, folder, verdicts, ships = CASES[name]
    src = RESULTS / folder
    (tmp_path / "rows.jsonl").write_bytes(gzip.decompress((src / "rows.jsonl.gz").read_bytes()))
    with tarfile.open(src / "meta.tar.gz") as t:
        (tmp_path / "round.json").write_bytes(t.extractfile("round.json").read())
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    out = io.StringIO()
    try:
        mod = importlib.import_module(script)
        with redirect_stdout(out):
            assert mod.main(["judge", str(tmp_path / "rows.jsonl"), "--json", str(tmp_path / "j.json")]) == 0
    finally:
        sys.modules.pop(script, None)
    rep = json.loads((tmp_path / "j.json").read_text())
    assert {c: rep[c][f"pass_{name}"] for c in verdicts} == verdicts
    assert rep["ships"] == ships
    assert rep["round_checks_ok"] is True
    recorded = json.loads((src / "judged.json").read_text())
    assert {c: recorded[c][f"pass_{name}"] for c in verdicts} == verdicts
    assert rep["per_arm"]["mean"] == pytest.approx(recorded["per_arm"]["mean"])
    assert f"SHIPS: {ships or 'none (C stays)'}" in out.getvalue()
