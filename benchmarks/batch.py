"""Batch throughput: items per second of ``gpulab batch`` for imseg (a folder of images) and mvs
(every view of the bundled synthetic scene), with 1 and 2 workers: GPUs where there are (one
worker per GPU), CPU worker processes otherwise. Scaling efficiency = (items/s with 2) / (2 x
items/s with 1). Cluster start-up is reported apart and not counted in the throughput.

Usage::

    python benchmarks/batch.py --gpus 1,2          # a two-GPU host
    python benchmarks/batch.py --cpu-workers 1,2   # a CPU machine
    python benchmarks/batch.py --tasks imseg --images 24 --size 1024x768 --json out.json
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.batch import run_batch  # noqa: E402
from app.io.image_io import write_image  # noqa: E402


def make_images(folder: Path, n: int, size: tuple[int, int]) -> Path:
    """``n`` natural images (scikit-image's data, resized and shifted so they differ)."""
    from skimage import data, transform

    bases = [data.astronaut(), data.coffee(), data.chelsea(), data.rocket()]
    folder.mkdir(parents=True, exist_ok=True)
    w, h = size
    for i in range(n):
        b = bases[i % len(bases)]
        img = transform.resize(b, (h, w), anti_aliasing=True, preserve_range=True)
        img = np.roll(img, shift=i * 7, axis=1).astype(np.uint8)
        write_image(folder / f"img{i:04d}.png", img)
    return folder


def one(task, inputs, out, workers, gpus, params) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    s = run_batch(task, inputs, out, params=params, workers=workers, gpus=gpus)
    per_item = [r["seconds"] for r in s.records if r.get("status") == "done" and r["key"] != "__finish__"]
    return {"task": task, "workers": s.workers, "gpus": gpus, "devices": s.devices, "items": s.done,
            "failed": s.failed, "seconds": round(s.seconds, 3), "startup_s": round(s.startup_seconds, 3),
            "items_per_s": round(s.items_per_second, 4),
            "item_s_median": round(float(np.median(per_item)), 4) if per_item else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default="imseg,mvs")
    ap.add_argument("--gpus", default="", help="comma-separated GPU counts to try (e.g. 1,2)")
    ap.add_argument("--cpu-workers", default="", help="comma-separated CPU worker counts (e.g. 1,2)")
    ap.add_argument("--images", type=int, default=24)
    ap.add_argument("--size", default="1024x768")
    ap.add_argument("--mvs-views", default="all")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    w, h = (int(x) for x in args.size.lower().split("x"))
    tmp = Path(tempfile.mkdtemp(prefix="gpulab-batch-bench-"))
    rows = []
    try:
        imgs = make_images(tmp / "images", args.images, (w, h)) if "imseg" in args.tasks else None
        scene = ROOT / "resources" / "samples" / "mvs" / "synth_par.txt"
        configs = [("gpu", int(g)) for g in args.gpus.split(",") if g] + \
                  [("cpu", int(c)) for c in args.cpu_workers.split(",") if c]
        if not configs:
            configs = [("cpu", 1), ("cpu", 2)]
        for task in args.tasks.split(","):
            inputs = [imgs] if task == "imseg" else [scene]
            for kind, n in configs:
                gpus = str(n) if kind == "gpu" else "none"
                r = one(task, inputs, tmp / f"out-{task}-{kind}{n}", n if kind == "cpu" else None, gpus, {})
                r["kind"] = kind
                rows.append(r)
                print(json.dumps(r), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n| task | workers | devices | items | median s/item | start-up s | items/s | scaling |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        base = next((b for b in rows if b["task"] == r["task"] and b["kind"] == r["kind"] and b["workers"] == 1), None)
        eff = (r["items_per_s"] / (r["workers"] * base["items_per_s"])) if base and base["items_per_s"] else None
        print(f"| {r['task']} | {r['workers']} {r['kind']} | {', '.join(r['devices'])} | {r['items']} | "
              f"{r['item_s_median']} | {r['startup_s']} | {r['items_per_s']} | "
              f"{'' if eff is None or r['workers'] == 1 else f'{eff:.2f}'} |")
    if args.json:
        meta = {"date": _dt.date.today().isoformat(), "host": platform.node(), "cpus": os.cpu_count()}
        Path(args.json).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
