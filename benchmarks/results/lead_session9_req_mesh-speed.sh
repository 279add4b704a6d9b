# lead: mesh 17k/50k end to end with pymeshlab, final code, defaults vs auto_layout concave (mesh-q's run6 A/B)
mkdir -p $OUT/mesh-speed
SKIP_TESTS=1 OUT=$OUT/mesh-speed timeout 70 bash benchmarks/results/mesh_quality_session9_run6.sh 2>&1 | tee $OUT/mesh-speed/log.txt
