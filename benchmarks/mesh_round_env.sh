# Issue 22 (session 18, mesh-q10): SOURCED by a device run script of a mesh quality round, with M = the carry folder
# that benchmarks/mesh_round_carry.sh built and W = a work folder:
#
#     M=$PWD/.carry-NAME W=/tmp/NAME; source benchmarks/mesh_round_env.sh
#
# It checks the carry's SHA-1s, installs the fast_simplification wheel and unpacks pymeshlab (site/ + lib/; the
# carried libraries the device already has are dropped, so its own are used) onto PYTHONPATH / LD_LIBRARY_PATH,
# unpacks the humans and assembles $W/psb.npz (the 76 PSB meshes from the lossless int packing: v = vi / 1e6; the
# assembled arrays' SHA-1 must be b3f72461791bc2b154ad8ee90acfce6f2f4851cc: MESH_ROUND_PSB_OK=1 where it is).
# LOCAL=1 (a development-CPU smoke test): the venv's own pymeshlab and fast_simplification are used instead.
: "${M:?M: the carry folder}" "${W:?W: a work folder}"
mkdir -p "$W"
(cd "$M" && sha1sum -c --quiet carry.sha1) && echo "carry.sha1 OK" || echo "carry.sha1 DIFFERENT"
if [ -z "${LOCAL:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$W/site-fs" \
    "$M"/fast_simplification-*.whl 2>&1 | grep -v WARN | tail -1
  mkdir -p "$W/pml" && tar -xJf "$M/pml.tar.xz" -C "$W/pml"
  for _x in "$W"/pml/lib/*.so*; do
    _n=$(basename "$_x")
    if ldconfig -p | grep -q "^[[:space:]]*$_n "; then rm -f "$_x"; fi
  done
  # a python built with a shared libpython has its own loaded already (the carried one first on LD_LIBRARY_PATH
  # would replace the interpreter's own: a crash on a patch-version mismatch); a static one exports its symbols
  if [ "$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("Py_ENABLE_SHARED"))')" = "1" ]; then
    rm -f "$W"/pml/lib/libpython3*.so*
  fi
  export PYTHONPATH="$W/site-fs:$W/pml/site${PYTHONPATH:+:$PYTHONPATH}"
  export LD_LIBRARY_PATH="$W/pml/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
unset GPULAB_PYMESHLAB_CLOCK
python3 -c "import pymeshlab, fast_simplification; print('pymeshlab', pymeshlab.__file__, '+ fast_simplification import')" \
  2>&1 | tail -1
python3 benchmarks/mesh_simplify_session7_pack.py unpack "$M/humans.npzx" "$W/humans.npz"
xz -dc "$M/psb_int.npz.xz" > "$W/psb_int.npz"
MESH_ROUND_PSB_OK=0
if python3 - "$W" <<'PY'
# the 76 PSB meshes: v = vi / 1e6 (bit for bit what mesh_psb.load_off parses), faces as in the OFF files, the humans
import hashlib, pathlib, sys, numpy as np
W = pathlib.Path(sys.argv[1])
h = np.load(W / "humans.npz")
store = {k: h[k] for k in h.files}
z = np.load(W / "psb_int.npz")
for k in z.files:
    if k.startswith("vi_"):
        store["v_" + k[3:]] = z[k].astype(np.float64) / 1e6
    else:
        store[k] = z[k].astype(np.int32)
sha = hashlib.sha1()
for k in sorted(store):
    if k.startswith(("v_", "f_")):
        sha.update(np.ascontiguousarray(store[k]).tobytes())
np.savez(W / "psb.npz", **store)
ok = sha.hexdigest() == "b3f72461791bc2b154ad8ee90acfce6f2f4851cc"
print("psb.npz assembled:", len(store), "arrays; meshes' sha1", sha.hexdigest(), "OK" if ok else "DIFFERENT")
sys.exit(0 if ok else 1)
PY
then MESH_ROUND_PSB_OK=1; fi
rm -f "$W/psb_int.npz"
export MESH_ROUND_PSB_OK
