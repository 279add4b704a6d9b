"""Issue 22 (session 18, helper mesh-q10): the ONE driver of a mesh quality round, with its arms as data. Sessions
16-17 wrote it four times (``mesh_speed16w.py``, ``mesh_session17_q.py``, ``mesh_session17_q9.py``,
``mesh_session17_auto.py``: records of what ran); a round is now a thin script that declares its arms and its rule
and calls :func:`run_round` / :func:`judge_rows` / :func:`timing` here.

A round (each phase in its own pool of spawned processes: a forked child cannot use a CUDA context):

1. **stores**: ``mesh_speed16w.make_stores`` at the working resolution (``FACES``) for the training and the judging
   draws (candidate ``pf3n0s<seed>``: the library's fast + pymeshlab path on the mesh in the seed's random order);
2. **record** (training draws, ONCE, every arm trains on the same examples): ``mesh_session15_q.record_mesh`` (the
   hand-made integer-k merges replayed, each round's 12 weakest candidates with every column of
   ``learned.FEATURES`` and the humans' target);
3. **train** per arm, per held-out category and ``ALL`` (leave one category out): :class:`Arm`'s ``recipe``
   (``(target column, number of columns)`` for ``mesh_session15_q.train_fold``: recipe S is ``("y", 21)``: 64 trees,
   depth <= 4, rate 0.1, seed 0, the seeded 200,000-example subsample) or its own ``train`` function;
4. **confirm** (judging draws): ``mesh_session13_q.confirm_mesh``, the REAL pipeline (``prepare_mesh`` +
   ``segment_prepared``, the full-resolution re-cut) at every human k and at k = "auto", every arm in one job per
   mesh-draw (one ``prepare_mesh``), each mesh under its own category's fold model of each arm; k = "auto" under the
   given per-category auto models or, without them, the SHIPPED k = "auto" model for every category (then k = "auto"
   is only a harness check: equal in every arm unless an arm changes what the auto model reads); the judging draws in
   batches, the largest meshes first, a batch only while ``judge_end`` seconds after the round's start are not
   reached (draws not run are missing, never re-run).

An arm's ``switches`` (``{"module.attr": value}``) are set in every worker before it records, trains or confirms.
Arms that differ in a switch form **switch sets** (session 18, mesh-q11): each set records the training draws on
its own (``work/rec/<set>/``; one set alone: ``work/rec/`` as before) and its arms train on its own records; when
judging, every mesh-draw gets one ``prepare_mesh`` per switch set, each running its set's arms, and the rows of a
mesh-draw are joined into one (an error in any set makes the joined row an error row). Every set states every
switch path of the round (a path a set leaves out takes the library's value, read before the round), since a pool's
worker runs the jobs of every set in turn.

Since session 22 the library simplifies in the canonical order (``simplify.CANONICAL_ORDER`` on, round canon22c):
a control "as shipped" now draws salts of it (``Arm(store="pf3n0c")``), where the rounds before drew shuffled listings
(``pf3n0``, still :class:`Arm`'s default, so that their scripts mean what they meant). The shipped models were
trained on listed working meshes (``pf3n0``); canon22c judged the canonical ones under those very models.

    python benchmarks/mesh_round.py judge OUT/rows.jsonl --base C --cand Q [--min-draws 12] [--over-margin 3]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import shutil
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_psb as mp  # noqa: E402
import mesh_speed16w as w16  # noqa: E402

#: the shipped working resolution (``defaults.WORKING_FACES``)
FACES = 3500
OVER = 0.30
#: the meshes whose figures every judgement prints
WATCH = (303, 305, 381, 185, 104, 225, 45)


@dataclass
class Arm:
    """One arm of a round. ``recipe``: ``(target column, columns)`` of ``mesh_session15_q.train_fold`` (recipe S =
    ``("y", 21)``); ``train``: ``"module:function"`` called as ``f(rec_dir, models_dir, category) -> dict`` instead
    (e.g. a weighted fit); ``folds``: a folder of ready fold models (``<category>.npz``) used for the categories
    instead of training them (``ALL`` is still trained and compared); ``switches``: library attributes set in every
    worker of this arm; ``policy``: the integer-k merge order; ``store`` (session 22): the stores' candidate
    (``mesh_simplify_session7_stores``: ``pf3n0`` the seed's shuffled listing, ``pf3n0c`` the canonical order salted by
    the seed) of the arm's training and judging draws; ``models_auto``: a folder of k = "auto" models per category
    (and ALL) for this arm's rows instead of the round's; ``cap_seed`` (session 29, round seeds29): the seed of the
    recipe's 200,000-example training subsample (``mesh_session15_q.train_fold``; 0 as every round before);
    ``gain_beta`` (session 30, round beta30): ``learned.GAIN_BETA`` while this arm's integer k runs (None: the
    library's; a judging-time setting, as ``policy``: no switch set of its own, so the arms share one
    ``prepare_mesh`` and their records)."""

    name: str
    recipe: tuple = ("y", 21)
    train: str = ""
    folds: str = ""
    switches: dict = field(default_factory=dict)
    policy: str = "gain"
    store: str = "pf3n0"
    models_auto: str = ""
    cap_seed: int = 0
    gain_beta: float | None = None

    def spec(self) -> dict:
        if self.cap_seed and self.train:
            raise ValueError(f"arm {self.name}: cap_seed is the recipe's; a train function ({self.train}) has its own")
        return {"name": self.name, "recipe": list(self.recipe), "train": self.train, "folds": self.folds,
                "switches": self.switches, "policy": self.policy, "store": self.store, "models_auto": self.models_auto,
                "cap_seed": int(self.cap_seed),
                "gain_beta": None if self.gain_beta is None else float(self.gain_beta)}


def add_round_args(sub) -> argparse.ArgumentParser:
    """The ``round`` sub-command's arguments, shared by every thin round script (session 18's three)."""
    r = sub.add_parser("round")
    r.add_argument("--data", type=Path, default=mp.DEFAULT_DATA)
    r.add_argument("--work", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--train", default="1421,1422")
    r.add_argument("--judge", required=True)
    r.add_argument("--jobs", type=int, default=os.cpu_count())
    r.add_argument("--device", default=None)
    r.add_argument("--judge-end", type=float, default=1e9, help="no batch of judging draws starts after this")
    r.add_argument("--batch", type=int, default=4)
    r.add_argument("--ids", default="", help="only these meshes (a smoke test; the rule's run uses all 76)")
    return r


def add_judge_args(sub, min_draws: int) -> argparse.ArgumentParser:
    """The ``judge`` sub-command's arguments (a round's rows file), shared by every thin round script."""
    j = sub.add_parser("judge")
    j.add_argument("rows", type=Path)
    j.add_argument("--json", default="")
    j.add_argument("--n-meshes", type=int, default=76)
    j.add_argument("--min-draws", type=int, default=min_draws)
    return j


def apply_switches(switches: dict) -> None:
    """Set ``{"package.module.attr": value}`` (in a worker, before the library runs). An attribute the library lacks
    is refused: a switch whose code is gone (e.g. session 24-25's ``learned.HULL_EXCESS``, ``HULL_EXACT`` and
    ``HULL_VOLUME``, removed in session 26; their rounds ran at the commits their records name) would otherwise
    set a name nothing reads, and the arm would run the control."""
    for path, value in switches.items():
        mod, attr = path.rsplit(".", 1)
        m = importlib.import_module(mod)
        if not hasattr(m, attr):
            raise SystemExit(f"mesh_round: switch {path}: {mod} has no {attr} (a round of an older commit?)")
        setattr(m, attr, value)


def sha(p) -> str:
    return hashlib.sha1(Path(p).read_bytes()).hexdigest()


def shipped_sha() -> str:
    """SHA-1 of the shipped integer-k model (``learned_model.NPZ_BASE64``)."""
    from gpu_kernels.mesh import learned_model

    return hashlib.sha1(base64.b64decode("".join(learned_model.NPZ_BASE64))).hexdigest()


def same_trees(a, b, rtol: float = 1e-9) -> bool:
    """Two tree models with the same trees (features, children) whose thresholds, leaf values and start agree to
    ``rtol`` (session 25: a model retrained on records whose hull column the compiled hull computed, Qhull's values to
    rounding, is the shipped one but for the last bits of a threshold)."""
    import numpy as np

    return (a.feature.shape == b.feature.shape and np.array_equal(a.feature, b.feature)
            and np.array_equal(a.left, b.left) and np.array_equal(a.right, b.right) and a.depth == b.depth
            and np.allclose(a.threshold, b.threshold, rtol=rtol, atol=1e-12)
            and np.allclose(a.value, b.value, rtol=rtol, atol=1e-12)
            and abs(a.init - b.init) <= rtol * max(abs(b.init), 1.0) and a.rate == b.rate)


def shipped_auto_dir(out: Path, cats: list) -> Path:
    """A folder with the SHIPPED k = "auto" model as every category's (and ALL's) model, for ``confirm_mesh``: NOT held
    out (optimistic by +0.0066 +- 0.0007 a draw, session 19's mesh-auto19). The held-out folds of the shipped model
    (session 11's recipe, every SHA-1 equal to session 11's): ``mesh_session19_auto.py folds --device cuda`` (~55 s
    on an H100; benchmarks/results/mesh_auto19_session19.md), then pass their folder as ``models_auto``."""
    from gpu_kernels.mesh import learned_model

    out.mkdir(parents=True, exist_ok=True)
    raw = base64.b64decode("".join(learned_model.NPZ_AUTO_BASE64))
    for c in list(cats) + ["ALL"]:
        (out / f"{c}.npz").write_bytes(raw)
    return out


# --------------------------------------------------------------------------- workers
def switch_sets(specs: list) -> tuple[list, dict]:
    """The arms grouped by their switches (and their ``store`` and ``models_auto``): ``([(set name, switches with
    every path of the round, [arm names])], {arm name: set name})``. The sets are named ``S0``, ``S1``, ... in the
    order of their first arm; a path a set leaves out takes the library's value (read here, before any worker sets
    it)."""
    paths = sorted({p for s in specs for p in s["switches"]})
    lib = {}
    for p in paths:
        mod, attr = p.rsplit(".", 1)
        lib[p] = getattr(importlib.import_module(mod), attr)
    sets: dict = {}
    for s in specs:
        full = {p: s["switches"].get(p, lib[p]) for p in paths}
        key = json.dumps([full, s.get("store", "pf3n0"), s.get("models_auto", "")], sort_keys=True)
        sets.setdefault(key, (full, []))[1].append(s["name"])
    out = [(f"S{i}", full, names) for i, (full, names) in enumerate(sets.values())]
    return out, {n: name for name, _, names in out for n in names}


def join_rows(parts: list) -> dict:
    """One mesh-draw's rows of every switch set joined into one row (an error in any: an error row)."""
    bad = [r for r in parts if "error" in r]
    if bad:
        return {"mesh": parts[0].get("mesh"), "draw": parts[0].get("draw"),
                "error": "; ".join(f"{r.get('switch_set', '?')}: {r['error']}" for r in bad)}
    row: dict = {}
    for r in parts:
        sec = r.pop("seconds", None)
        if sec is not None:
            row.setdefault("seconds_per_set", {})[r.get("switch_set", "S0")] = sec
        for k, x in r.items():
            if k in row and k not in ("switch_set",) and row[k] != x and k in ("mesh", "draw", "category", "hk"):
                raise RuntimeError(f"mesh-draw rows disagree on {k}: {row[k]} / {x}")
            row[k] = x
    row.pop("switch_set", None)
    if "seconds_per_set" in row:
        row["seconds"] = float(sum(row["seconds_per_set"].values()))
    return row


def _record_job(a):
    switches, faces, data, store, mesh_id, out, device = a
    try:
        apply_switches(switches)
        w16._set_faces(faces)
        import mesh_session15_q as q15

        return q15.record_mesh(data, store, mesh_id, out, device)
    except Exception as e:  # noqa: BLE001 - reported as a row
        return {"mesh": mesh_id, "store": str(store), "error": repr(e)}


def _train_job(a):
    spec, rec, models, cat = a
    try:
        apply_switches(spec["switches"])
        if spec["train"]:
            mod, fn = spec["train"].split(":")
            r = getattr(importlib.import_module(mod), fn)(rec, models, cat)
        else:
            import mesh_session15_q as q15

            q15.RECIPES[spec["name"]] = tuple(spec["recipe"])
            r = q15.train_fold(rec, models, cat, spec["name"], cap_seed=spec.get("cap_seed", 0))
        from gpu_kernels.mesh import learned as _ln

        m = _ln.TreeModel.from_npz(models / f"{cat}.npz")
        used = m.feature[m.feature >= 0]
        r.update(arm=spec["name"], splits=int(used.size),
                 splits_per_col={int(c): int(n) for c, n in zip(*np.unique(used, return_counts=True), strict=True)})
        return r
    except Exception as e:  # noqa: BLE001
        return {"arm": spec["name"], "fold": cat, "error": repr(e)}


def _confirm_job(a):
    """Every arm of one switch set in ONE ``confirm_mesh`` (one ``prepare_mesh``; the arms share their switches), as
    session 17's rounds. ``a``'s last item: ``(set name, its switches)``."""
    data, store, mesh_id, specs, models, models_auto, device, draw, faces, (set_name, switches) = a
    try:
        apply_switches(switches)
        w16._set_faces(faces)
        import mesh_session13_q as q13

        sets = {s["name"]: (models / s["name"], s["policy"], s.get("gain_beta")) for s in specs}
        r = q13.confirm_mesh(data, store, mesh_id, sets, models_auto, device, draw)
        r["switch_set"] = set_name
        return r
    except Exception as e:  # noqa: BLE001
        return {"mesh": mesh_id, "draw": draw, "switch_set": set_name, "error": repr(e)}


# --------------------------------------------------------------------------- the round
def run_round(arms: list, *, data: Path, work: Path, out: Path, train: list, judge: list, models_auto: Path | None,
              jobs: int, device, faces: int = FACES, batch: int = 4, judge_end: float = 1e9, draw_min: float = 12.0,
              ids: list | None = None, check_shipped: str = "") -> dict:
    """Stores -> record -> train -> confirm (see the module's docstring). ``check_shipped``: the arm whose retrained
    ``ALL`` must equal the shipped integer-k model (printed, and returned as ``shipped_equal``). Writes
    ``out/{stores.sha1.json, record.jsonl, train.jsonl, models.sha1, rows.jsonl}``."""
    t0 = time.perf_counter()
    w16.IDS[:] = list(ids or [])
    out.mkdir(parents=True, exist_ok=True)

    def el():
        return f"[{time.perf_counter() - t0:.0f} s]"

    ids = w16.IDS or mp.mesh_ids(data)
    cats = sorted({mp.category_of(i) for i in ids})
    cost = {i: mp._cost(data, i) for i in ids}
    specs = [a.spec() for a in arms]
    sets, set_of = switch_sets(specs)
    for s in specs:
        if s["folds"] and len(sets) > 1 and train:
            raise SystemExit(f"arm {s['name']}: ready folds with several switch sets (whose records?): not written")
        if not train and not s["folds"]:
            raise SystemExit(f"arm {s['name']}: no training draws and no ready folds")

    def rec_dir(set_name):  # one set alone: work/rec as before the sets
        return work / "rec" if len(sets) == 1 else work / "rec" / set_name

    first = {n: next(x for x in specs if x["name"] == names[0]) for n, _, names in sets}
    set_store = {n: first[n].get("store", "pf3n0") for n in first}
    set_ma = {n: Path(first[n]["models_auto"]) if first[n].get("models_auto") else None for n in first}

    def store_of(set_name, seed):
        return str(work / "stores" / "X" / f"{set_store[set_name]}s{seed}.npz")

    res: dict = {"switch_sets": [{"set": n, "switches": sw, "arms": a} for n, sw, a in sets]}
    print(f"== stores {faces} faces, train {train} judge {judge}, arms {[s['name'] for s in specs]}, switch sets "
          f"{res['switch_sets']} {el()}", flush=True)
    st: dict = {}
    for cand in sorted(set(set_store.values())):
        st |= w16.make_stores(data, {"X": faces}, train + judge, work / "stores", jobs, cand=cand)
    (out / "stores.sha1.json").write_text(json.dumps(st, indent=1))

    print(f"== record {el()}", flush=True)
    tasks = []
    for set_name, switches, _ in sets:
        for s in train:
            d = rec_dir(set_name) / f"s{s}"
            d.mkdir(parents=True, exist_ok=True)
            tasks += [(switches, faces, data, store_of(set_name, s), i, d, device) for i in ids]
    tasks.sort(key=lambda t: -cost[t[4]])
    with w16._spawn_pool(jobs) as ex, open(out / "record.jsonl", "a") as fh:
        for t, r in zip(tasks, ex.map(_record_job, tasks), strict=True):
            if len(sets) > 1:
                r["switch_set"] = Path(t[5]).parent.name
            fh.write(json.dumps(r) + "\n")
    recs = [json.loads(x) for x in (out / "record.jsonl").read_text().splitlines() if x.strip()]
    res["records"], res["record_errors"] = len(recs), sum("error" in r for r in recs)
    res["examples"] = sum(r.get("examples", 0) for r in recs)
    if len(sets) > 1:
        res["examples_per_set"] = {n: sum(r.get("examples", 0) for r in recs if r.get("switch_set") == n)
                                   for n, _, _ in sets}
    print(f"records {res['records']}, errors {res['record_errors']}, examples {res['examples']} "
          f"{res.get('examples_per_set', '')} {el()}", flush=True)

    print(f"== train {el()}", flush=True)
    tasks = []
    for s in specs:
        (work / "models" / s["name"]).mkdir(parents=True, exist_ok=True)
        folds = ["ALL"] + ([] if s["folds"] else cats)
        tasks += [(s, rec_dir(set_of[s["name"]]), work / "models" / s["name"], c) for c in folds]
    if not train:  # (session 22: no training draws: every arm takes its ready folds, ALL included, as they are)
        tasks = []
        for s in specs:
            for c in ["ALL", *cats]:
                shutil.copyfile(Path(s["folds"]) / f"{c}.npz", work / "models" / s["name"] / f"{c}.npz")
        res["folds"] = res["folds_ready"] = len(specs) * (1 + len(cats))
        res["fold_errors"] = 0
    with w16._spawn_pool(jobs) as ex, open(out / "train.jsonl", "a") as fh:
        for r in ex.map(_train_job, tasks):
            fh.write(json.dumps(r) + "\n")
    if train:
        tr = [json.loads(x) for x in (out / "train.jsonl").read_text().splitlines() if x.strip()]
        res["folds"], res["fold_errors"] = len(tr), sum("error" in r for r in tr)
    print(f"folds {res['folds']}{' (ready)' if not train else ''}, errors {res['fold_errors']} {el()}", flush=True)
    for s in specs:
        if s["folds"] and train:
            for c in cats:
                shutil.copyfile(Path(s["folds"]) / f"{c}.npz", work / "models" / s["name"] / f"{c}.npz")
    from gpu_kernels.mesh import learned as _ln

    with open(out / "models.sha1", "w") as fh:
        for s in specs:
            for p in sorted((work / "models" / s["name"]).glob("*.npz")):
                fh.write(f"{sha(p)}  {s['name']}/{p.name}\n")
            a = work / "models" / s["name"] / "ALL.npz"
            if a.exists():
                m = _ln.TreeModel.from_npz(a)
                print(f"model {s['name']} ALL sha1 {sha(a)} trees {m.feature.shape[0]} depth {m.depth} max feature "
                      f"{int(m.feature.max())}", flush=True)
    if check_shipped:
        a = work / "models" / check_shipped / "ALL.npz"
        res["shipped_equal"] = a.exists() and sha(a) == shipped_sha()
        print(f"{check_shipped} ALL retrained == the shipped model ({shipped_sha()[:8]}...): {res['shipped_equal']}",
              flush=True)
        if a.exists() and not res["shipped_equal"]:
            res["shipped_close"] = same_trees(_ln.TreeModel.from_npz(a), _ln.shipped_model())
            print(f"{check_shipped} ALL retrained: the shipped model's trees, thresholds and values to rounding: "
                  f"{res['shipped_close']}", flush=True)

    for n, ma in set_ma.items():
        if ma is not None:
            print(f"k = 'auto' of switch set {n}: {ma} (ALL {sha(ma / 'ALL.npz')[:8]}...)", flush=True)
    if models_auto is None and any(ma is None for ma in set_ma.values()):
        models_auto = shipped_auto_dir(work / "models_auto_shipped", cats)
        print(f"k = 'auto': the SHIPPED auto model for every category ({sha(models_auto / 'ALL.npz')[:8]}...)",
              flush=True)
    n: dict = {}
    res["draws_not_run"] = []
    for b in range(0, len(judge), batch):
        bt = judge[b:b + batch]
        left = judge_end - (time.perf_counter() - t0)
        if left < draw_min:
            print(f"== judging draws {judge[b:]} not run: {left:.0f} s left {el()}", flush=True)
            res["draws_not_run"] = judge[b:]
            break
        print(f"== confirm {bt} ({left:.0f} s before the judging end) {el()}", flush=True)
        tasks = [(data, store_of(sn, s), i, [x for x in specs if x["name"] in an],
                  work / "models", set_ma[sn] or models_auto, device, f"s{s}", faces, (sn, sw))
                 for s in bt for i in ids for sn, sw, an in sets]
        tasks.sort(key=lambda t: -cost[t[2]])
        parts: dict = {}
        with w16._spawn_pool(jobs) as ex, open(out / "rows.jsonl", "a") as fh:
            for r in ex.map(_confirm_job, tasks):
                key = (r.get("draw"), r.get("mesh"))
                parts.setdefault(key, []).append(r)
                if len(parts[key]) < len(sets):
                    continue
                r = join_rows(parts.pop(key)) if len(sets) > 1 else parts.pop(key)[0]
                r.pop("switch_set", None)
                fh.write(json.dumps(r) + "\n")
                fh.flush()
                if "error" not in r:
                    n[r["draw"]] = n.get(r["draw"], 0) + 1
        print(f"   batch {bt} done; rows without error per draw: {n} {el()}", flush=True)
    res["rows_per_draw"] = n
    res["seconds"] = time.perf_counter() - t0
    print(f"round done {el()}", flush=True)
    return res


# --------------------------------------------------------------------------- judge
@dataclass
class Rule:
    """A round's pre-registered criteria (its md file says them in words)."""

    over_margin: int = 3           # (1) meshes over 0.30 summed: cand <= base - over_margin ...
    over_draws: bool = True        # ... and cand fewer than base on more draws than more
    mean_margin: float = 0.0005    # (2) protocol mean cand <= base + this ...
    draw_margin: float = 0.003     # ... and on every draw cand <= base + this
    auto: str = "equal"            # (3) "equal": k = "auto" the same on every row (a harness check); "criterion":
    auto_max: float = 0.13         #     every draw <= auto_max with >= auto_in_range % in range, and the mean
    auto_in_range: float = 80.0    #     cand <= base + auto_mean_margin where a row differs
    auto_mean_margin: float = 0.0005
    min_draws: int = 12            # (5) complete draws (76 rows, no error row) at least


def judge_rows(rows: list, bad: list, base: str, cand: str, rule: Rule, n_meshes: int = 76) -> dict:
    bad_draws = {r.get("draw") for r in bad}
    rows = [r for r in rows if base in r and cand in r]
    draws = sorted({r["draw"] for r in rows})
    complete = [d for d in draws if d not in bad_draws and sum(r["draw"] == d for r in rows) == n_meshes]
    rr = [r for r in rows if r["draw"] in complete]
    per = {}
    for d in complete:
        x = [r for r in rr if r["draw"] == d]
        per[d] = {"over_" + base: sorted(r["mesh"] for r in x if r[base] > OVER),
                  "over_" + cand: sorted(r["mesh"] for r in x if r[cand] > OVER)}
        for a in (base, cand):
            per[d][a] = float(np.mean([r[a] for r in x]))
            per[d][a + "_auto"] = float(np.mean([r[a + "_auto"] for r in x]))
            per[d][a + "_in_range"] = 100.0 * float(np.mean([r[a + "_in_range"] for r in x]))
    vals = list(per.values())
    mb = float(np.mean([v[base] for v in vals])) if vals else float("nan")
    mc = float(np.mean([v[cand] for v in vals])) if vals else float("nan")
    ab = float(np.mean([v[base + "_auto"] for v in vals])) if vals else float("nan")
    ac = float(np.mean([v[cand + "_auto"] for v in vals])) if vals else float("nan")
    o_b = sum(len(v["over_" + base]) for v in vals)
    o_c = sum(len(v["over_" + cand]) for v in vals)
    fewer = sum(len(v["over_" + cand]) < len(v["over_" + base]) for v in vals)
    more = sum(len(v["over_" + cand]) > len(v["over_" + base]) for v in vals)
    auto_same = all(r[base + "_auto"] == r[cand + "_auto"] and r[base + "_auto_k"] == r[cand + "_auto_k"] for r in rr)
    if rule.auto == "equal":
        c3 = bool(vals) and auto_same
    else:
        c3 = bool(vals) and all(v[cand + "_auto"] <= rule.auto_max and v[cand + "_in_range"] >= rule.auto_in_range
                                for v in vals) and (auto_same or ac <= ab + rule.auto_mean_margin)
    crit = {
        "1_over_030": bool(vals) and o_c <= o_b - rule.over_margin and (not rule.over_draws or fewer > more),
        "2_mean": bool(vals) and mc <= mb + rule.mean_margin,
        "2_every_draw": bool(vals) and all(v[cand] <= v[base] + rule.draw_margin for v in vals),
        "3_auto": c3,
        "5_complete": len(complete) >= rule.min_draws,
    }
    cats = sorted({r["category"] for r in rr})
    per_cat = {c: float(np.mean([r[cand] - r[base] for r in rr if r["category"] == c])) for c in cats}
    d = [r[cand] - r[base] for r in rr]
    # report-only (session 29, round seeds29): one category's fold can swing with the training alone (bearing's
    # held-out score 0.030-0.105 over five trainings of one recipe, the other categories <= 0.010), so the mean
    # difference is also given without the category that moves most
    top = max(per_cat, key=lambda c: abs(per_cat[c])) if per_cat else None
    without_top = [r[cand] - r[base] for r in rr if r["category"] != top]
    watch = {}
    for m in WATCH:
        x = [r for r in rr if r["mesh"] == m]
        if x:
            watch[m] = {base: [round(r[base], 4) for r in x], cand: [round(r[cand], 4) for r in x]}
    over_mesh: dict = {}
    for r in rr:
        for a in (base, cand):
            if r[a] > OVER:
                over_mesh.setdefault(r["mesh"], {base: 0, cand: 0})[a] += 1
    return {"base": base, "cand": cand, "rule": rule.__dict__, "draws": draws, "complete": complete,
            "error_rows": len(bad), "mean": {base: mb, cand: mc}, "auto_mean": {base: ab, cand: ac},
            "auto_equal_all_rows": auto_same, "over_030": {base: o_b, cand: o_c},
            "draws_fewer_more": [fewer, more], "over_by_mesh": over_mesh, "per_draw": per, "per_category": per_cat,
            "better_0.01": sum(x < -0.01 for x in d), "worse_0.01": sum(x > 0.01 for x in d),
            "rms_mesh_draw": float(np.sqrt(np.mean(np.square(d)))) if d else None, "watch": watch,
            "largest_category": top, "mean_diff_without_largest": float(np.mean(without_top)) if without_top else None,
            "criteria": crit, "pass": all(crit.values())}


def print_judgement(j: dict, label: str) -> None:
    b, c = j["base"], j["cand"]
    print(f"complete draws {len(j['complete'])}: {j['complete']}; error rows {j['error_rows']}")
    for d, v in j["per_draw"].items():
        print(f"  {d}: {b} {v[b]:.4f} {c} {v[c]:.4f} ({v[c] - v[b]:+.4f})  >0.30 {b} {v['over_' + b]} {c} "
              f"{v['over_' + c]}  auto {b} {v[b + '_auto']:.4f} / {v[b + '_in_range']:.1f} %  {c} "
              f"{v[c + '_auto']:.4f} / {v[c + '_in_range']:.1f} %")
    if j["per_draw"]:
        print(f"  all: {b} {j['mean'][b]:.4f} {c} {j['mean'][c]:.4f} ({j['mean'][c] - j['mean'][b]:+.4f}); >0.30 {b} "
              f"{j['over_030'][b]} {c} {j['over_030'][c]} (draws with fewer / more: {j['draws_fewer_more']}); by mesh "
              f"{j['over_by_mesh']}; auto {b} {j['auto_mean'][b]:.4f} {c} {j['auto_mean'][c]:.4f} (equal on every "
              f"row: {j['auto_equal_all_rows']}); mesh-draws better / worse by > 0.01: {j['better_0.01']} / "
              f"{j['worse_0.01']}; RMS |{c} - {b}| {j['rms_mesh_draw']:.4f}")
        print(f"  per category {c} - {b}: " + ", ".join(
            f"{k} {x:+.4f}" for k, x in sorted(j["per_category"].items(), key=lambda t: t[1])))
        top = j.get("largest_category")
        if top is not None and j.get("mean_diff_without_largest") is not None:
            print(f"  report-only: the category that moves most is {top} ({j['per_category'][top]:+.4f}); {c} - {b} "
                  f"without it {j['mean_diff_without_largest']:+.4f} (one fold can swing with the training alone: "
                  "round seeds29)")
        for m, v in j["watch"].items():
            print(f"  mesh {m}: {b} {v[b]}  {c} {v[c]}")
    print(f"RULE {label} (1)-(3), (5): {'PASS' if j['pass'] else 'FAIL'} {j['criteria']}", flush=True)


def average_arms(rows: list, groups: dict) -> list:
    """Rows with one column set per group of arms (session 29, round seeds29: one recipe's training alone moves a
    held-out mean by 0.002-0.003, so a round can train each arm over several subsample seeds and judge the means):
    ``groups`` maps a new name to the arms trained the same way but for the seed (e.g. ``{"C": ["C0", "C1", "C2",
    "C3"]}``). Per row and group: the protocol score and k = "auto"'s score and in-range flag are the arms' means;
    k = "auto"'s k is kept where every arm has the same, else None (the judge's "equal on every row" then compares
    the means). Rows lacking one of a group's arms are left out. A group's name must not be the name of an arm outside
    it; it may be one of its own arms' (session 30: the control "C" and its sister trainings, so that the judge's
    control is their mean), whose columns then hold the group's means."""
    names = [a for g in groups.values() for a in g]
    out = []
    for r in rows:
        if not all(a in r for a in names):
            continue
        clash = [g for g, arms in groups.items() if g in r and g not in arms]
        if clash:
            raise ValueError(f"average_arms: group name(s) {clash} are also the names of arms outside them")
        x = dict(r)
        for g, arms in groups.items():
            x[g] = float(np.mean([r[a] for a in arms]))
            x[g + "_auto"] = float(np.mean([r[a + "_auto"] for a in arms]))
            x[g + "_in_range"] = float(np.mean([r[a + "_in_range"] for a in arms]))
            ks = {r[a + "_auto_k"] for a in arms}
            x[g + "_auto_k"] = ks.pop() if len(ks) == 1 else None
        out.append(x)
    return out


def read_rows(path) -> tuple[list, list]:
    """A round's rows file (one JSON object a line): ``(rows, error rows)``; the error rows' count and first two are
    printed."""
    raw = [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]
    bad = [r for r in raw if "error" in r]
    if bad:
        print(f"error rows {len(bad)}: {bad[:2]}")
    return [r for r in raw if "error" not in r], bad


def judge_file(rows_path: Path, base: str, cand: str, rule: Rule, n_meshes: int = 76, label: str = "",
               json_out: str = "") -> dict:
    rows, bad = read_rows(rows_path)
    j = judge_rows(rows, bad, base, cand, rule, n_meshes)
    print_judgement(j, label or cand)
    if json_out:
        Path(json_out).write_text(json.dumps(j, indent=1))
    return j


# --------------------------------------------------------------------------- timing: 17k end to end, old vs new
def load_old_loop(path: Path, nf: int):
    """The compiled merge loop as shipped before a candidate (its file, with its column count fixed at ``nf``: the
    library's FEATURES may have more now), as a module of its own."""
    src = Path(path).read_text()
    if "NF = len(FEATURES)" not in src or f"if NF != {nf}" not in src:
        raise SystemExit(f"{path} is not the {nf}-column _numba_merge.py")
    d = Path("/tmp/mesh_round_oldloop")
    d.mkdir(exist_ok=True)
    f = d / "mesh_round_old_numba_merge.py"
    new = src.replace("NF = len(FEATURES)", f"NF = {nf}")
    if not f.exists() or f.read_text() != new:
        f.write_text(new)
    spec = importlib.util.spec_from_file_location("mesh_round_old_numba_merge", f)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["mesh_round_old_numba_merge"] = mod
    spec.loader.exec_module(mod)
    return mod


def paired_rounds(once, names: list, what, n: int, warm: int) -> tuple[dict, dict, dict, list]:
    """``warm`` warm-up runs of each arm, then ``n`` rounds that run every arm of ``names`` (``["old", "new"]``), the
    order reversed every other round; ``once(arm, what)`` gives ``(ms, labels' SHA-1, k)``. Returns the runs, SHA-1s
    and k per arm, and the paired differences new - old."""
    runs = {a: [] for a in names}
    shas = {a: set() for a in names}
    ks = {a: set() for a in names}
    for a in names:
        for _ in range(warm):
            _, s, x = once(a, what)
            shas[a].add(s)
            ks[a].add(x)
    for r in range(n):
        for a in (names if r % 2 == 0 else names[::-1]):
            dt, s, x = once(a, what)
            runs[a].append(dt)
            shas[a].add(s)
            ks[a].add(x)
    pair = [b - a for a, b in zip(runs["old"], runs["new"], strict=True)]
    return runs, shas, ks, pair


def round_from_args(arms: list, a) -> dict:
    """A thin round script's ``round`` sub-command (:func:`add_round_args`): :func:`run_round` with the control "C"
    checked against the shipped model, no per-category k = "auto" models; writes OUT/round.json."""
    def ints(text: str) -> list:
        return [int(x) for x in text.split(",") if x]

    res = run_round(arms, data=a.data, work=a.work, out=a.out, train=ints(a.train), judge=ints(a.judge),
                    models_auto=None, jobs=a.jobs, device=a.device, batch=a.batch, judge_end=a.judge_end,
                    ids=ints(a.ids), check_shipped="C")
    (a.out / "round.json").write_text(json.dumps(res, indent=1))
    return res


def margin_main(doc: str, arms: list, judged, argv=None, *, min_draws: int = 12, reports=()) -> int:
    """A thin margin-round script's whole command line (sessions 23-24): ``round`` (:func:`round_from_args` on
    ``arms``) and ``judge`` (``judged``, a :class:`MarginRound`, then each of ``reports``: report-only MarginRounds on
    the same rows, their JSON beside ``--json`` as ``<stem>_<name>.json``); returns the judged round's exit code."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    add_round_args(sub)
    add_judge_args(sub, min_draws)
    a = ap.parse_args(argv)
    if a.cmd == "round":
        round_from_args(arms, a)
        return 0
    rc = judged.cmd_judge(a)
    out = a.json
    for rep in reports:
        print(f"\n== report-only: {rep.name}")
        if out:
            a.json = str(Path(out).with_name(f"{Path(out).stem}_{rep.name}.json"))
        rep.cmd_judge(a)
    return rc


def timing(mesh: str, old: Path, old_nf: int, model_new: Path | None, device, rounds: int, rounds_k: int, k: int,
           warm: int = 2, margin_ms: float = 3.0, label: str = "") -> dict:
    """17k end to end from the file with the defaults (k = "auto", pymeshlab), ONE process: arms ``old`` (the loop
    file ``old`` with its ``old_nf`` columns and the shipped models) and ``new`` (the library's loop and
    ``model_new`` as the integer-k model), a warm-up each, then ``rounds`` rounds, the order reversed every other
    round; the criterion: the paired median new - old <= ``margin_ms``. Then (reported) the same at integer ``k``."""
    from app.io.mesh_io import read_mesh
    from gpu_kernels.mesh import _numba_merge as nm
    from gpu_kernels.mesh import learned as _ln
    from gpu_kernels.mesh import segment

    oldm = load_old_loop(old, old_nf)
    mn = _ln.TreeModel.from_npz(model_new) if model_new else None
    old_fn = oldm.greedy_merge
    new_args = list(inspect.signature(nm.greedy_merge.py_func).parameters)
    old_args = list(inspect.signature(old_fn.py_func).parameters)
    extra = [i for i, a in enumerate(new_args) if a not in old_args]
    if extra:  # the library now passes arguments the old loop does not take: dropped for it
        if [a for i, a in enumerate(new_args) if i not in extra] != old_args:
            raise SystemExit(f"the old loop's arguments {old_args} are not the new ones {new_args} less some")
        keep = [i for i in range(len(new_args)) if i not in extra]
        gm = old_fn

        def old_fn(*a):
            return gm(*(a[i] for i in keep))
    arms = {"old": (old_fn, None), "new": (nm.greedy_merge, mn)}
    new_fn = nm.greedy_merge

    def once(arm, kk):
        fn, model = arms[arm]
        nm.greedy_merge, _ln.MODEL = fn, model
        try:
            t0 = time.perf_counter()
            v, f = read_mesh(mesh)
            seg = segment.segment_mesh(v, f, k=kk, device=device)
            dt = 1e3 * (time.perf_counter() - t0)
        finally:
            nm.greedy_merge, _ln.MODEL = new_fn, None
        return dt, hashlib.sha1(seg.labels.tobytes()).hexdigest()[:12], int(seg.k)

    report: dict = {}
    for lab, kk, n in (("auto", "auto", rounds), (f"k{k}", k, rounds_k)):
        if n <= 0:
            continue
        runs, shas, ks, pair = paired_rounds(once, list(arms), kk, n, warm)
        rep = {"rounds": n, "median_old": statistics.median(runs["old"]), "median_new": statistics.median(runs["new"]),
               "paired_median": statistics.median(pair), "new_faster": sum(p < 0 for p in pair), "runs": runs,
               "shas": {a: sorted(s) for a, s in shas.items()}, "k": {a: sorted(x) for a, x in ks.items()}}
        report[lab] = rep
        print(f"timing {Path(mesh).name} {lab}: {n} rounds, median old {rep['median_old']:.1f} ms, new "
              f"{rep['median_new']:.1f} ms, paired median new - old {rep['paired_median']:+.2f} ms (new faster in "
              f"{rep['new_faster']}/{n}); labels old {rep['shas']['old']} new {rep['shas']['new']}; k {rep['k']}",
              flush=True)
    if "auto" in report:
        ok = report["auto"]["paired_median"] <= margin_ms and report["auto"]["rounds"] == rounds
        report["criterion_4"] = ok
        print(f"RULE {label} (4): {'PASS' if ok else 'FAIL'} (17k end to end, k = auto, paired median "
              f"{report['auto']['paired_median']:+.2f} ms <= +{margin_ms} ms, {rounds} rounds)", flush=True)
    return report


def timing_switch(meshes: dict, old: dict, new: dict, device, rounds: dict, warm: int = 2, label: str = "") -> dict:
    """Arms that differ in library switches (session 18, mesh-q11): each mesh of ``meshes`` (``{name: (path,
    margin in ms)}``) read from its file and segmented with the defaults (k = "auto", the shipped models, pymeshlab),
    ONE process, arm ``old`` under the switches ``old`` and ``new`` under ``new``; ``warm`` warm-ups each, then
    ``rounds[name]`` rounds, each running both arms, the order reversed every other round. Criterion per mesh: the
    paired median new - old <= its margin, with every round run."""
    from app.io.mesh_io import read_mesh
    from gpu_kernels.mesh import segment

    arms = {"old": old, "new": new}

    def once(arm, path):
        apply_switches(arms[arm])
        try:
            t0 = time.perf_counter()
            v, f = read_mesh(path)
            seg = segment.segment_mesh(v, f, k="auto", device=device)
            dt = 1e3 * (time.perf_counter() - t0)
        finally:
            apply_switches(old)
        return dt, hashlib.sha1(seg.labels.tobytes()).hexdigest()[:12], int(seg.k)

    report: dict = {}
    ok = True
    for name, (path, margin) in meshes.items():
        n = int(rounds[name])
        runs, shas, ks, pair = paired_rounds(once, list(arms), path, n, warm)
        rep = {"rounds": n, "margin_ms": margin, "median_old": statistics.median(runs["old"]),
               "median_new": statistics.median(runs["new"]), "paired_median": statistics.median(pair),
               "new_faster": sum(p < 0 for p in pair), "runs": runs, "shas": {a: sorted(x) for a, x in shas.items()},
               "k": {a: sorted(x) for a, x in ks.items()}}
        rep["pass"] = rep["paired_median"] <= margin and len(pair) == n
        ok = ok and rep["pass"]
        report[name] = rep
        print(f"timing {name} ({Path(path).name}, k = auto): {n} rounds, median old {rep['median_old']:.1f} ms, new "
              f"{rep['median_new']:.1f} ms, paired median new - old {rep['paired_median']:+.2f} ms (<= +{margin} ms: "
              f"{rep['pass']}; new faster in {rep['new_faster']}/{n}); labels old {rep['shas']['old']} new "
              f"{rep['shas']['new']}; k {rep['k']}", flush=True)
    report["criterion_4"] = ok
    print(f"RULE {label} (4): {'PASS' if ok else 'FAIL'}", flush=True)
    return report


# --- margin rounds (sessions 19-20: mesh_session19_q14.py, mesh_session20_q15.py, mesh_session20_q16.py) ----------
@dataclass
class MarginRound:
    """A round judged by the "margin" rule of sessions 19-20, each candidate against the control C over the complete
    draws: (1) protocol mean cand <= C - ``mean_margin`` AND cand's per-draw mean lower than C's on more draws than
    higher; (2) meshes over 0.30 summed cand <= C; (3) k = "auto" report-only while equal to C's on every row, else
    >= ``auto_in_range`` % in range on every complete draw and mean cand <= C + ``auto_mean_margin``; (5) >= ``min_draws``
    complete draws, the records (switch sets x ``train_draws`` x meshes) and folds (arms x (categories + ALL)) without error,
    C's ALL = the shipped model. The per-arm report (meshes ``report_meshes``, categories ``report_categories``) and the
    rows' seconds per switch set are printed, never criteria. Passing candidates: the lowest protocol mean ships.

    A non-inferiority round (session 22) sets ``mean_margin`` negative (cand <= C + |margin|), ``need_better`` False
    (no draw count in (1)), ``over_allow`` (2: cand <= C + over_allow) and ``round_checks`` (keys of round.json that
    must be True for (5), besides C's ALL = the shipped model).

    Judged on means (session 30, round beta30): ``groups`` (``((name, (arm, ...)), ...)``) judges each group's mean
    (:func:`average_arms`; the control's group is named "C", the candidates are group names); ``without_largest_max``
    adds (6): cand - C without the category that moves most <= that value; ``pairs`` (``((cand, base arm, cand
    arm), ...)``) adds (7): over the complete draws, the cand arm's protocol mean is lower than its base arm's in
    more than half of the candidate's pairs (the arms themselves, not the means)."""

    name: str
    arms: list
    candidates: tuple
    mean_margin: float = 0.0010
    auto_in_range: float = 80.0
    auto_mean_margin: float = 0.002
    min_draws: int = 12
    train_draws: int = 2
    report_meshes: tuple = (303, 381, 305)
    report_categories: tuple = ("fish", "octopus")
    need_better: bool = True
    over_allow: int = 0
    round_checks: tuple = ()
    shipped_close_ok: bool = False  # (session 25) C's ALL = the shipped model's trees to rounding (same_trees) passes
    groups: tuple = ()
    without_largest_max: float | None = None
    pairs: tuple = ()

    def judge_one(self, rows: list, bad: list, cand: str, n_meshes: int, min_draws: int, complete_ok,
                  raw: list | None = None) -> dict:
        j = judge_rows(rows, bad, "C", cand, Rule(min_draws=min_draws), n_meshes)
        per = j["per_draw"]
        better = sum(v[cand] < v["C"] for v in per.values())
        worse = sum(v[cand] > v["C"] for v in per.values())
        ok = bool(per)
        if j["auto_equal_all_rows"]:
            c3, how3 = ok, "report-only (k = auto equal to C on every row)"
        else:
            c3 = ok and all(v[cand + "_in_range"] >= self.auto_in_range for v in per.values()) \
                and j["auto_mean"][cand] <= j["auto_mean"]["C"] + self.auto_mean_margin
            how3 = "criterion (a row differs from C at k = auto)"
        crit = {
            "1_mean": ok and j["mean"][cand] <= j["mean"]["C"] - self.mean_margin
            and (better > worse or not self.need_better),
            "2_over_030": ok and j["over_030"][cand] <= j["over_030"]["C"] + self.over_allow,
            "3_auto": c3,
            "5_complete": len(j["complete"]) >= min_draws and complete_ok is True,
        }
        if self.without_largest_max is not None:
            w = j.get("mean_diff_without_largest")
            crit["6_without_largest"] = ok and w is not None and w <= self.without_largest_max
        mine = [(b, c) for n, b, c in self.pairs if n == cand]
        if mine:
            rr = [r for r in (raw if raw is not None else rows) if r["draw"] in j["complete"]]
            diff = {f"{c}-{b}": float(np.mean([r[c] - r[b] for r in rr if b in r and c in r])) for b, c in mine}
            j["pairs"] = diff
            crit["7_pairs"] = ok and 2 * sum(x < 0 for x in diff.values()) > len(diff)
        j["draws_better_worse"] = [better, worse]
        j["auto_how"] = how3
        j[f"criteria_{self.name}"] = crit
        j[f"pass_{self.name}"] = all(crit.values())
        return j

    def per_arm(self, rows: list, complete: list, arms: list) -> dict:
        """The brief's per-arm report over the complete draws: meshes 303 / 381 / 305 (mean, draws over 0.30) and the
        fish / octopus categories (mean), plus every category's mean and the meshes over 0.30."""
        rr = [r for r in rows if r["draw"] in complete and all(a in r for a in arms)]
        out: dict = {"meshes": {}, "categories": {}, "over_030": {}, "mean": {}}
        for m in self.report_meshes:
            x = [r for r in rr if r["mesh"] == m]
            if x:
                out["meshes"][m] = {a: {"mean": float(np.mean([r[a] for r in x])),
                                        "over": sum(r[a] > OVER for r in x), "n": len(x)} for a in arms}
        for c in sorted({r["category"] for r in rr}):
            x = [r for r in rr if r["category"] == c]
            out["categories"][c] = {a: float(np.mean([r[a] for r in x])) for a in arms}
        for a in arms:
            out["over_030"][a] = sum(r[a] > OVER for r in rr)
            out["mean"][a] = float(np.mean([r[a] for r in rr])) if rr else None
        return out

    def print_per_arm(self, p: dict, arms: list) -> None:
        print("per arm (complete draws; report-only):")
        for m, v in p["meshes"].items():
            print(f"  mesh {m}: " + "; ".join(f"{a} {v[a]['mean']:.4f} ({v[a]['over']}/{v[a]['n']} over 0.30)"
                                              for a in arms))
        for c in self.report_categories:
            if c in p["categories"]:
                print(f"  category {c}: " + "; ".join(f"{a} {p['categories'][c][a]:.4f}" for a in arms))
        print("  every category: " + ", ".join(c + " " + "/".join(f"{v[a]:.4f}" for a in arms)
                                               for c, v in p["categories"].items()) + f" ({'/'.join(arms)})")

    def seconds_report(self, rows: list, complete: list, round_json: dict) -> dict:
        """(4), report-only: the rows' seconds per switch set (one prepare_mesh + every k and k = "auto" per set)."""
        name = {s["set"]: "+".join(s["arms"]) for s in round_json.get("switch_sets", [])}
        rr = [r for r in rows if r["draw"] in complete and "seconds_per_set" in r]
        tot: dict = {}
        for r in rr:
            for s, x in r["seconds_per_set"].items():
                tot[name.get(s, s)] = tot.get(name.get(s, s), 0.0) + x
        med = {}
        if name and rr:
            base = [s for s, n in name.items() if n == "C"]
            for s, n in name.items():
                if base and s != base[0]:
                    med[n + " - C"] = statistics.median(r["seconds_per_set"][s] - r["seconds_per_set"][base[0]]
                                                        for r in rr if s in r["seconds_per_set"])
        return {"seconds_sum": tot, "median_per_mesh_draw": med}

    def cmd_judge(self, a) -> int:
        raw, bad = read_rows(a.rows)
        rows = average_arms(raw, dict(self.groups)) if self.groups else raw
        if self.groups:
            print(f"judged on the means of {dict(self.groups)} ({len(rows)} of {len(raw)} rows have every arm)")
        rj = Path(a.rows).with_name("round.json")
        rnd = json.loads(rj.read_text()) if rj.exists() else {}
        n_arms = len(self.arms)
        n_cat = 19 if a.n_meshes == 76 else len({r["category"] for r in rows})
        # (records: once per switch set and training draw, as run_round records them; folds: per arm)
        n_sets = len(switch_sets([x.spec() for x in self.arms])[0])
        n_rec, n_fold = n_sets * self.train_draws * a.n_meshes, n_arms * (1 + n_cat)
        shipped_ok = rnd.get("shipped_equal") is True or (self.shipped_close_ok and rnd.get("shipped_close") is True)
        checks = {"shipped_equal": rnd.get("shipped_equal"), "shipped_close": rnd.get("shipped_close"),
                  "records": rnd.get("records"),
                  "record_errors": rnd.get("record_errors"), "folds": rnd.get("folds"),
                  "fold_errors": rnd.get("fold_errors"), "records_expected": n_rec, "folds_expected": n_fold}
        complete_ok = (shipped_ok and rnd.get("records") == n_rec and rnd.get("record_errors") == 0
                       and rnd.get("folds") == n_fold and rnd.get("fold_errors") == 0
                       and all(rnd.get(k) is True for k in self.round_checks))
        checks |= {k: rnd.get(k) for k in self.round_checks}
        print(f"(5) the round's checks (round.json): {checks} -> {complete_ok}; examples per set "
              f"{rnd.get('examples_per_set')}; draws not run {rnd.get('draws_not_run')}")
        rep: dict = {"round_checks": checks, "round_checks_ok": complete_ok}
        for cand in self.candidates:
            j = self.judge_one(rows, bad, cand, a.n_meshes, a.min_draws, complete_ok, raw)
            print_judgement(j, f"{cand} [mesh_round's default Rule, NOT this round's rule: ignore this verdict]")
            print(f"  draws better / worse (protocol mean) {j['draws_better_worse']}; mean {cand} - C "
                  f"{j['mean'][cand] - j['mean']['C']:+.4f} (<= {-self.mean_margin:+.4f}"
                  f"{', more draws better than worse' if self.need_better else ''}); over 0.30 C {j['over_030']['C']} "
                  f"{cand} {j['over_030'][cand]} (<= C + {self.over_allow}), draws fewer / more {j['draws_fewer_more']}; k = auto: "
                  f"{j['auto_how']}; mean C {j['auto_mean']['C']:.4f} {cand} {j['auto_mean'][cand]:.4f}, lowest % in "
                  f"range {min((v[cand + '_in_range'] for v in j['per_draw'].values()), default=float('nan')):.1f}")
            if "pairs" in j:
                print("  (7) per pair, cand arm - base arm over the complete draws: "
                      + ", ".join(f"{k} {x:+.4f}" for k, x in j["pairs"].items()))
            verdict = "PASS" if j[f"pass_{self.name}"] else "FAIL"
            print(f"RULE {self.name} {cand}: {verdict} {j[f'criteria_{self.name}']}", flush=True)
            rep[cand] = j
        complete = sorted(set.intersection(*(set(rep[c]["complete"]) for c in self.candidates)))
        arms = ["C", *self.candidates]
        rep["per_arm"] = self.per_arm(rows, complete, arms)
        self.print_per_arm(rep["per_arm"], arms)
        rep["seconds"] = self.seconds_report(rows, complete, rnd)
        print(f"(4) report-only, the rows' seconds per switch set: {rep['seconds']}")
        passed = [c for c in self.candidates if rep[c][f"pass_{self.name}"]]
        ship = min(passed, key=lambda c: rep[c]["mean"][c]) if passed else None
        rep["ships"] = ship
        print(f"SHIPS: {ship or 'none (C stays)'}", flush=True)
        if a.json:
            Path(a.json).write_text(json.dumps(rep, indent=1, default=str))
        return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    j = sub.add_parser("judge")
    j.add_argument("rows", type=Path)
    j.add_argument("--base", default="C")
    j.add_argument("--cand", required=True)
    j.add_argument("--json", default="")
    j.add_argument("--n-meshes", type=int, default=76)
    j.add_argument("--min-draws", type=int, default=Rule.min_draws)
    j.add_argument("--over-margin", type=int, default=Rule.over_margin)
    j.add_argument("--auto", default="equal", choices=("equal", "criterion"))
    a = ap.parse_args(argv)
    judge_file(a.rows, a.base, a.cand, Rule(over_margin=a.over_margin, min_draws=a.min_draws, auto=a.auto),
               a.n_meshes, json_out=a.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
