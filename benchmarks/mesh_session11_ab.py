"""Session 11 (mesh-q, issue 22): a one-process A/B, end to end from the file (read + ``segment_mesh``), of an
integer k's merges by the hand-made strength (``hand``, today's default) and by the learned score (``learned``:
:func:`gpu_kernels.mesh.learned.k_merge` with the shipped model, as ``defaults.DEFAULT_K_MERGE = "learned"``), at
k = "auto" (untouched by the switch: the labels must be equal) and integer k's; configurations interleaved round by
round (the order alternates), best and median of the rounds after a warm-up of each.

    python benchmarks/mesh_session11_ab.py A.off B.off --device cuda --k auto,6,12 --rounds 7 --json OUT.json
    python benchmarks/mesh_session11_ab.py A.off B.off --device cuda --k auto --switch DEFAULT_AUTO_MERGE --rounds 9
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from mesh_session11_learned import _learned_auto, _learned_merges  # noqa: E402

from app.io.mesh_io import read_mesh  # noqa: E402
from gpu_kernels.mesh import learned as _ln  # noqa: E402
from gpu_kernels.mesh import segment as sg  # noqa: E402

CONFIGS = ("hand", "learned")


AUTO_MODEL: list = []
SWITCH: list = []


def _switch(name: str, value: str):
    import contextlib

    from gpu_kernels.mesh import defaults

    @contextlib.contextmanager
    def ctx():
        old = getattr(defaults, name)
        setattr(defaults, name, value)
        try:
            yield
        finally:
            setattr(defaults, name, old)

    return ctx()


def once(path: str, cfg: str, k, device: str):
    import contextlib

    t0 = time.perf_counter()
    v, f = read_mesh(path)
    if SWITCH:  # the library's switch for the block: defaults.DEFAULT_K_MERGE or DEFAULT_AUTO_MERGE
        ctx = _switch(SWITCH[0], "learned" if cfg == "learned" else "hand")
    elif AUTO_MODEL:  # k = "auto"'s merges: the hand-made rule against the learned order and stop (round 2)
        ctx = _learned_auto(AUTO_MODEL[0]) if cfg == "learned" else contextlib.nullcontext()
    else:
        ctx = _learned_merges(cfg == "learned")
    with ctx:
        seg = sg.segment_mesh(v, f, k=k, device=device)
    return time.perf_counter() - t0, seg


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--k", default="auto,6,12")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--auto-model", type=Path, default=None,
                    help="A/B k = auto's merges (hand-made stop vs this learned model's order and stop) instead")
    ap.add_argument("--switch", choices=("DEFAULT_K_MERGE", "DEFAULT_AUTO_MERGE"), default=None,
                    help="A/B the library's switch itself ('hand' against 'learned', the shipped models)")
    args = ap.parse_args(argv)
    _ln.MODEL = None  # the shipped model
    if args.switch:
        SWITCH.append(args.switch)
    if args.auto_model:
        AUTO_MODEL.append(_ln.TreeModel.from_npz(args.auto_model))
    rows = []
    for path in args.files:
        for kk in args.k.split(","):
            k = kk if kk == "auto" else int(kk)
            times = {c: [] for c in CONFIGS}
            labels = {}
            for c in CONFIGS:  # warm-up
                labels[c] = once(path, c, k, args.device)[1].labels
            for r in range(args.rounds):
                for c in (CONFIGS if r % 2 == 0 else CONFIGS[::-1]):
                    times[c].append(once(path, c, k, args.device)[0])
            row = {"file": Path(path).name, "k": kk, "device": args.device,
                   "labels_equal": bool((labels["hand"] == labels["learned"]).all()),
                   **{f"{c}_best_ms": 1e3 * min(t) for c, t in times.items()},
                   **{f"{c}_median_ms": 1e3 * statistics.median(t) for c, t in times.items()}}
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
