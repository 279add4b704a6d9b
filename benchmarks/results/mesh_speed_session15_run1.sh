#!/bin/bash
# mesh-speed3, session 15, device call 1 (H100): (1) the pre-registered complete re-judgement of nearN
# (segment.NEAREST_BESIDE, a search thread per 9,000 faces) against base: 17k 41 + 50k 15 rounds in ONE process,
# then 2 host cores (CPU path, 50k); (2) the diagnosis of the host's slow phases: the host's topology, the 64 MB
# gather per core, and the 17k pipeline under four core sets (affinity changed inside one process, interleaved).
# carry: .carry-msp10 (pymeshlab cp312 slim, the fast-simplification wheel, PSB 101.off / 281.off; 22 MB, read only).
# Writes $OUT/mesh-speed3/{log.txt,device.txt,host.txt,ab.json,ab_cpu2.json,pin.json}.
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s); R=$PWD; M=$R/.carry-msp10; D=$OUT/mesh-speed3; mkdir -p $D
exec > >(tee $D/log.txt) 2>&1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc; git log --oneline -1; } | tee $D/device.txt
{ echo "== lscpu"; lscpu; echo "== numactl --hardware"; numactl --hardware 2>&1 || echo "(numactl: not there)"
  echo "== nodes"; for n in /sys/devices/system/node/node*; do echo "$n $(cat $n/cpulist)"; done
  echo "== package / core / L3 per cpu"; for c in /sys/devices/system/cpu/cpu[0-9]*; do
    echo "$(basename $c) pkg $(cat $c/topology/physical_package_id 2>/dev/null) core $(cat $c/topology/core_id 2>/dev/null) die $(cat $c/topology/die_id 2>/dev/null) L3 $(cat $c/cache/index3/shared_cpu_list 2>/dev/null)"; done
  echo "== MHz"; grep MHz /proc/cpuinfo | tr -s ' ' | sort | uniq -c
  echo "== governor"; cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>&1
  echo "== cgroup"; cat /proc/self/cgroup; cat /sys/fs/cgroup/cpu.max /sys/fs/cgroup/cpu.stat /sys/fs/cgroup/cpuset.cpus.effective 2>&1
  echo "== pressure"; cat /proc/pressure/cpu /proc/pressure/memory 2>&1
  echo "== load"; cat /proc/loadavg; head -1 /proc/stat; ps -eo pid,pcpu,comm --sort=-pcpu | head -8
  echo "== thp"; cat /sys/kernel/mm/transparent_hugepage/enabled; cat /proc/sys/kernel/numa_balancing 2>&1
  echo "== virt"; systemd-detect-virt 2>&1; dmesg 2>/dev/null | grep -i -m3 hypervisor; } > $D/host.txt 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-ms3 $M/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
P=/tmp/pml-ms3; mkdir -p $P && tar -xJf $M/pml.tar.xz -C $P
for x in $P/lib/*.so*; do n=$(basename $x); if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f $x; fi; done
export PYTHONPATH=/tmp/site-ms3:$P/site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "== A/B nearN 17k (41) + 50k (15), one process [$(( $(date +%s) - T0 )) s]"
timeout ${T_AB:-130} python3 benchmarks/mesh_speed15_ab.py $M/101.off $M/281.off --device cuda --rounds 41 --rounds-rest 15 \
  --configs base,nearN --judge nearN --json $D/ab.json 2>&1 | grep -v Warn
echo "== 2 host cores, CPU path, 50k [$(( $(date +%s) - T0 )) s]"
timeout ${T_CPU:-40} taskset -c 0,1 python3 benchmarks/mesh_speed15_ab.py $M/281.off --device cpu --rounds 1 \
  --configs base,nearN --json $D/ab_cpu2.json 2>&1 | grep -v Warn
echo "== diagnosis: gather per core, 17k under four core sets [$(( $(date +%s) - T0 )) s]"
head -1 /proc/stat; cat /sys/fs/cgroup/cpu.stat 2>/dev/null | head -6
timeout ${T_PIN:-60} python3 benchmarks/mesh_speed15_ab.py $M/101.off --device cuda --rounds 0 --gather-cores --pin 21 \
  --pin-sets "all=0-15;a8=0-7;b8=8-15;q4=4-7" --json $D/pin.json 2>&1 | grep -v Warn
head -1 /proc/stat; cat /sys/fs/cgroup/cpu.stat 2>/dev/null | head -6
echo "done after $(( $(date +%s) - T0 )) s"; date -u
