export PYTHONUNBUFFERED=1
L=$OUT/check2; mkdir -p $L
echo "== imseg live, e8d27f4 first then HEAD"
for r in 3 4; do
  for v in base head; do
    if [ $v = head ]; then S=benchmarks/live.py; else S=.carry-lo8/base/benchmarks/live.py; fi
    ( source .carry-live/setup.sh && timeout 45 python3 $S --device cuda --tools imseg --data .carry-live/data --json $L/live_imseg_${v}_$r.json ) 2>&1 | grep "target" | sed "s/^/$v $r: /" | cut -c1-300
  done
done
echo "== leftovers A/B, longer timeouts"
timeout 140 bash .carry-lo8/lead_req2.sh 2>&1 | tail -12
tail -4 /tmp/lo8_base.txt; tail -4 /tmp/lo8_new.txt
