"""Issue 22, session 12 (helper mesh-q): why the worst meshes fail under the learned merges (descriptive).

    python benchmarks/mesh_session12_q_fail.py REC.pkl [REC.pkl ...] --models DIR [--data D] [--json out.json]
    python benchmarks/mesh_session12_q_fail.py --human-floor [--data D] [--json out.json]

``REC.pkl``: a record of ``benchmarks/mesh_session12_q.py record`` (one mesh, one draw). For every row of every human
k the merges are replayed with the learned policy under the mesh's own category's fold model (``DIR/<category>.npz``,
a model that never saw the category), and each round is looked at: the pair merged, its true chance of lying in
different human segments (the training target), and the best pair that was available (the lowest target). A
"wrong merge" joins two parts the humans keep apart (target > 0.5) while a pair inside one human part was still
there (target < 0.5). Printed: the wrong merges' share, the mean features of the wrongly merged pairs against
the pairs that should have been merged instead, and which parts (the humans' segments, by their share of the
mesh) were swallowed. Also, per human, whether the starts hold each human part at all (its recall under the
majority mapping of the best row).
``--human-floor``: each human's own segmentation scored as the protocol scores an algorithm (at that human's k,
against every human of the mesh, itself included), the mean over the humans: how far the humans themselves are
from the protocol's zero, per mesh.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_psb as mp  # noqa: E402
import mesh_session12_q as q12  # noqa: E402

from gpu_kernels.mesh import boundary as _bd  # noqa: E402
from gpu_kernels.mesh import learned as _ln  # noqa: E402
from gpu_kernels.mesh import segment as _segment  # noqa: E402


def analyse(path: Path, data: Path, models: Path) -> dict:
    with open(path, "rb") as fh:
        rec = pickle.load(fh)
    humans = mp.load_human(data, rec["mesh"])
    comp = q12._comp_tables(rec, humans)
    gs = rec["gs"]
    gk = _segment.k_merge_graph(gs)
    model = _ln.TreeModel.from_npz(models / f"{rec['category']}.npz")
    rounds, wrong_X, right_X = 0, [], []
    wrong_share = []
    for x in rec["per_k"].values():
        for r in x["rows"]:
            if r["pre"] is None:
                continue
            lab, _ = _bd.merge_islands(gs, r["pre"])
            lc = np.repeat(np.arange(len(r["kused"])), r["kused"])
            cmp_ = [np.stack([np.bincount(lab, weights=C[:, s], minlength=lc.size) for s in range(C.shape[1])], 1)
                    for C in comp]
            tg = {c: int(t) for c, t in enumerate(r["targets"])}
            rc = {"comp": cmp_}
            _ln.learned_merge(gk, lab, tg, lc, min_area=_segment.MIN_PART_AREA, policy="learned", model=model,
                              record=rc, record_top=1 << 30)
            for Xr, yr in zip(rc.get("X", []), rc.get("y", []), strict=True):
                if yr.size < 2:
                    continue
                rounds += 1
                p = model.predict(Xr.astype(np.float64))
                j = int(np.argmin(p))
                b = int(np.argmin(yr))
                if yr[j] > 0.5 and yr[b] < 0.5:
                    wrong_X.append(Xr[j])
                    right_X.append(Xr[b])
                    wrong_share.append(float(Xr[j][q12.SHARE_SMALL]))
    fe = list(_ln.FEATURES)
    out = {"mesh": rec["mesh"], "category": rec["category"], "rounds": rounds, "wrong": len(wrong_X),
           "wrong_rate": len(wrong_X) / max(rounds, 1)}
    if wrong_X:
        W, R = np.array(wrong_X), np.array(right_X)
        out["wrong_mean"] = dict(zip(fe, np.round(W.mean(0), 3).tolist(), strict=True))
        out["instead_mean"] = dict(zip(fe, np.round(R.mean(0), 3).tolist(), strict=True))
        out["wrong_share_small_median"] = float(np.median(wrong_share))
    # do the starts hold the humans' parts? per human (at its k, the best row by the majority mapping), each human
    # segment's share of the faces and its recall: the share of its faces in start clusters whose majority it is
    # (0: no start cluster is mostly this part, so no merge can give it back)
    recall = []
    for h, k in zip(humans, rec["hk"], strict=True):
        best = None
        for r in rec["per_k"][k]["rows"]:
            start = r["pre"] if r["pre"] is not None else r["final"]
            lab = _bd.merge_islands(gs, start)[0][rec["in2w"]]
            n = np.zeros((int(lab.max()) + 1, int(h.max()) + 1))
            np.add.at(n, (lab, h), 1.0)
            maj = np.argmax(n, axis=1)
            seg_tot = np.maximum(n.sum(axis=0), 1)
            rc = np.array([n[maj == s_, s_].sum() for s_ in range(n.shape[1])]) / seg_tot
            err = q12._oracle_err(lab, h)
            if best is None or err < best[0]:
                best = (err, rc, n.sum(axis=0) / h.size)
        order = np.argsort(best[2])
        recall.append({"oracle": round(float(best[0]), 3),
                       "parts": [(round(float(best[2][i]), 3), round(float(best[1][i]), 2)) for i in order
                                 if best[2][i] > 0]})
    out["start_recall"] = recall
    out["parts_lost"] = sum(sum(1 for sh, rc in x["parts"] if rc < 0.5) for x in recall)
    out["parts_total"] = sum(len(x["parts"]) for x in recall)
    # the humans' part sizes (share of the faces), the smallest first
    out["human_part_shares"] = [sorted(np.round(np.bincount(h) / h.size, 3).tolist())[:6] for h in humans[:4]]
    return out


def human_floor(data: Path) -> dict:
    from gpu_kernels.mesh.metrics import rand_index_error

    out = {}
    for i in mp.mesh_ids(data):
        H = mp.load_human(data, i)
        out[str(i)] = float(np.mean([np.mean([rand_index_error(h, g) for g in H]) for h in H]))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("recs", nargs="*", type=Path)
    ap.add_argument("--models", type=Path, default=None)
    ap.add_argument("--human-floor", action="store_true")
    ap.add_argument("--data", type=Path, default=mp.DEFAULT_DATA)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    if a.human_floor:
        fl = human_floor(a.data)
        v = np.array(list(fl.values()))
        print(f"humans as the algorithm: protocol mean {v.mean():.4f}, meshes over 0.30: {int((v > 0.30).sum())}, "
              f"highest: {sorted(((round(x, 3), k) for k, x in fl.items()), reverse=True)[:6]}")
        if a.json:
            a.json.write_text(json.dumps(fl, indent=1))
        return 0
    if not a.recs or a.models is None:
        ap.error("records and --models are needed (or --human-floor)")
    res = [analyse(p, a.data, a.models) for p in a.recs]
    for r in res:
        print(f"{r['category']} {r['mesh']}: {r['wrong']} wrong merges in {r['rounds']} rounds ({r['wrong_rate']:.1%})")
        if "wrong_mean" in r:
            print("   feature: wrongly merged / should have merged instead")
            for f in r["wrong_mean"]:
                print(f"   {f:22s} {r['wrong_mean'][f]:8.3f} {r['instead_mean'][f]:8.3f}")
        print(f"   humans' smallest part shares: {r['human_part_shares']}")
        print(f"   starts: {r['parts_lost']} of {r['parts_total']} human parts (all humans) with recall < 0.5 in the best "
              f"row; per human (share, recall), the smallest first: "
              + " | ".join(f"oracle {x['oracle']}: " + " ".join(f"{a}/{b}" for a, b in x["parts"][:5])
                           for x in r["start_recall"][:3]))
    if a.json:
        a.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
