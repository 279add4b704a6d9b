# Sourced (bash) by the calls that use a carry built by mesh_live8_session19_carry.sh (mesh-live8's call 1, the lead's
# final calls of sessions 19 and 20), with C (the carry folder) and O (the output folder) set, from the repo root:
# unpacks the old / new revisions to /tmp/old, /tmp/new, installs the default path's simplifiers (fast_simplification,
# pymeshlab with the device's own copies of shared libraries preferred) and pytest-xdist (/tmp/xd), writes
# /tmp/281.off, and defines e2e ARM NAME: the default path end to end in that arm (mesh_e2e_session10.py, 101.off
# 17k and 281.off 50k, 5 rounds), its summary lines and labels' SHA-1s.
for a in old new; do mkdir -p /tmp/$a && tar -xJf $C/$a.tar.xz -C /tmp/$a && ln -sfn $PWD/resources /tmp/$a/resources; done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-fs $C/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
mkdir -p /tmp/pml && tar -xJf $C/pml.tar.xz -C /tmp/pml
for x in /tmp/pml/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
mkdir -p /tmp/xd && tar -xJf $C/xdist.tar.xz -C /tmp/xd
export PYTHONPATH="/tmp/site-fs:/tmp/pml/site${PYTHONPATH:+:$PYTHONPATH}" LD_LIBRARY_PATH="/tmp/pml/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
xz -dc $C/data/281.off.xz > /tmp/281.off
e2e() {  # arm, name
  local t=$(date +%s)
  (cd /tmp/$1 && timeout 60 python3 benchmarks/mesh_e2e_session10.py $C/data/psb/off/101.off /tmp/281.off \
     --rounds 5 --json $O/e2e_$2.json > $O/e2e_$2.txt 2>&1)
  echo "e2e $2 rc=$? $(( $(date +%s) - t )) s"; grep -E "min .* median|same labels|sha" $O/e2e_$2.txt | cut -c1-200
}
