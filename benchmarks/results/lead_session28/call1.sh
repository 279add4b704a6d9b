#!/bin/bash
# Lead, session 28, device call 1: memo_batches.py (history dependence of a mesh's result through the memo's batches)
# with segment.MEMO_FIXED_BATCHES off (sessions 20-27) and on, 76 PSB meshes x working resolutions default/3000,
# 8 processes per setting on one GPU, stopped after T_DIAG s (rows so far kept). carry: .carry-mm23.
# (The first try, 4 processes per setting x 3 resolutions, ran past the call's 600 s, and its 17 files were more than
# the 8 a call brings back: nothing came back. The second try hung in a bare `wait`, which also waits for the log's tee.
# Now two files: log.txt and rows.jsonl.)
#   bash benchmarks/results/lead_session28/call1.sh      (on the device; $OUT collects the rows)
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
T0=$(date +%s); M=$PWD/.carry-mm23; W=/tmp/w28; D=${OUT:-/tmp/out}/call1; mkdir -p "$D" "$W"
exec > >(tee "$D/log.txt") 2>&1
source benchmarks/mesh_round_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc --all
python3 -c "from gpu_kernels.mesh import segment; print('MEMO_FIXED_BATCHES', segment.MEMO_FIXED_BATCHES, 'K_STARTS', segment.K_STARTS, 'AUTO_K_STARTS', segment.AUTO_K_STARTS)"
echo "== memo_batches [$(( $(date +%s) - T0 )) s]"
R=$W/rows; mkdir -p "$R"; pids=()
for fx in 0 1; do for p in 0 1 2 3 4 5 6 7; do
  extra=""; [ "$fx" = 0 ] && extra="--clusters"
  timeout ${T_DIAG:-330} python3 benchmarks/results/lead_session28/memo_batches.py "$W/psb.npz" --fixed $fx --part $p/8 \
    --faces default,3000 --device cuda $extra > "$R/rows_f${fx}_p${p}.jsonl" 2> "$R/err_f${fx}_p${p}.txt" &
  pids+=($!)
done; done
wait "${pids[@]}"   # (not a bare wait: bash 5.1's also waits for the log's tee, a process substitution: the tries hung)
echo "== rows [$(( $(date +%s) - T0 )) s]"; wc -l "$R"/rows_*.jsonl | tail -1; tail -n 3 "$R"/err_*.txt | grep -v "^$" | tail -20
cat "$R"/rows_*.jsonl > "$D/rows.jsonl"
python3 - "$R" <<'PY'
import json, pathlib, sys
import numpy as np
D = pathlib.Path(sys.argv[1])
for fx in (0, 1):
    rows = [json.loads(l) for p in sorted(D.glob(f"rows_f{fx}_p*.jsonl")) for l in p.read_text().splitlines() if l.strip()]
    if not rows:
        print("fixed", fx, "no rows"); continue
    ad = [r for r in rows if not r["auto_same"]]
    kd = [(r["mesh"], r["faces"], k) for r in rows for k, s in r["k_same"].items() if not s]
    nk = sum(len(r["k_same"]) for r in rows)
    print(f"fixed {fx}: {len(rows)} cases; k=auto A!=B {len(ad)} {[(r['mesh'], r['faces']) for r in ad]}; "
          f"integer k A!=B {len(kd)} of {nk} {kd[:20]}")
    both = [{(r["mesh"], r["faces"]) for r in (json.loads(l) for p in sorted(D.glob(f"rows_f{x}_p*.jsonl"))
                                                for l in p.read_text().splitlines() if l.strip())} for x in (0, 1)]
    common = both[0] & both[1]
    for fs in ("default", "3000"):
        rr = [r for r in rows if r["faces"] == fs and (r["mesh"], fs) in common]  # (the cases both settings ran)
        if rr:
            print(f"  {fs}: {len(rr)} meshes, protocol RI {np.mean([r['RI'] for r in rr]):.5f}, after auto "
                  f"{np.mean([r['RI_after_auto'] for r in rr]):.5f}, k=auto RI {np.mean([r['RI_auto'] for r in rr]):.5f}"
                  f" / B {np.mean([r['RI_auto_b'] for r in rr]):.5f}, over 0.30 {sum(r['RI'] > 0.30 for r in rr)}")
    cl = [r for r in rows if r.get("cl_checked")]
    if cl:
        print(f"  clusterings: the auto starts alone vs in the seven-batch differ on {sum(bool(r['cl_differ']) for r in cl)}"
              f" of {len(cl)} cases ({sum(len(r['cl_differ']) for r in cl)} of {3 * len(cl)} clusterings)")
PY
echo "done after $(( $(date +%s) - T0 )) s"; date -u
