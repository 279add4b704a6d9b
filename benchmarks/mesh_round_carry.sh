#!/bin/bash
# Issue 22 (session 18, mesh-q10): the carry a mesh quality round needs on the device, built reproducibly from
# ../shared and PyPI (the old carries were lost with their machine). Usage:
#
#     bash benchmarks/mesh_round_carry.sh .carry-NAME        # then source benchmarks/mesh_round_env.sh there
#
# It writes into the folder (kept <= 26 MiB: the device takes the tracked tree plus the carry, 64 MiB in all):
#   pml.tar.xz            pymeshlab 2025.7.post1 cp312 (the dev venv's version), unpacked as site/ (the pymeshlab
#                         package with the libfilter_meshing plugin only) + lib/ (the bundled libraries it needs, the
#                         host's libGL / libOpenGL for a device without them); ICU's 24 MB locale data
#                         libicudata.so.56 replaced by ICU's empty stub data (``icudt56_dat`` with no entries, as
#                         ICU's own stubdata: the decimation never reads locale data; session 17's mesh-auto8 checked
#                         the same decimations bit for bit with and without it)
#   fast_simplification-0.2.0-cp312-*.whl
#   psb_int.npz.xz        the 76 PSB meshes, lossless: vertices as the OFF decimals x 1e6 in int32 (each checked:
#                         vi / 1e6 is bit for bit what mesh_psb.load_off parses), faces int32; the assembled arrays'
#                         SHA-1 must be b3f72461791bc2b154ad8ee90acfce6f2f4851cc (checked here and on the device)
#   humans.npzx           every human segmentation (mesh_simplify_session7_pack.py pack of the s_<id>_<j> arrays)
#   101.off               PSB 101 (16,998 faces), the 17k timing mesh, as in ../shared
#   carry.sha1            the files' SHA-1s
# PML_PLUGINS (session 32): the pymeshlab plugins carried, default "libfilter_meshing" (the decimation's); the whole
# suite on the device also needs the io plugins that gpulab's mesh importer reaches:
#   PML_PLUGINS="libfilter_meshing libio_base libio_3mf libio_collada libio_x3d" (benchmarks/results/lead_session32.md)
# Needs: the dev venv (.venv: numpy), pip with PyPI reachable (or its wheel cache WHEELS=dir), gcc, xz.
set -euo pipefail
C=${1:?usage: mesh_round_carry.sh CARRY_DIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-$ROOT/.venv/bin/python}
DATA=${DATA:-$ROOT/../shared/data/psb}
WHEELS=${WHEELS:-/tmp/mesh_round_wheels}
PML_VERSION=2025.7.post1
FS_VERSION=0.2.0
mkdir -p "$C" "$WHEELS"
C=$(cd "$C" && pwd)
T=$(mktemp -d /tmp/mesh_round_carry.XXXXXX)
trap 'rm -rf "$T"' EXIT

# --- wheels (cp312, linux x86_64)
if ! ls "$WHEELS"/pymeshlab-$PML_VERSION-cp312-*.whl >/dev/null 2>&1; then
  "$PY" -m pip download -q --only-binary=:all: --python-version 3.12 --platform manylinux_2_35_x86_64 --no-deps \
    "pymeshlab==$PML_VERSION" -d "$WHEELS"
fi
if ! ls "$WHEELS"/fast_simplification-$FS_VERSION-cp312-*.whl >/dev/null 2>&1; then
  "$PY" -m pip download -q --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 --no-deps \
    "fast-simplification==$FS_VERSION" -d "$WHEELS"
fi
cp "$WHEELS"/fast_simplification-$FS_VERSION-cp312-*.whl "$C"/

# --- pymeshlab: site/ + lib/, the meshing plugin only, the libraries it reaches, ICU's stub data
mkdir -p "$T/whl" "$T/pml/site/pymeshlab/lib/plugins" "$T/pml/lib"
(cd "$T/whl" && unzip -q "$WHEELS"/pymeshlab-$PML_VERSION-cp312-*.whl)
S=$(echo "$T"/whl/pymeshlab-*.data/purelib/pymeshlab)
cp "$S"/__init__.py "$S"/replacer.py "$S"/polyscope_functions.py "$S"/keys.txt "$S"/pmeshlab.cpython-312-*.so \
  "$T/pml/site/pymeshlab/"
for plugin in ${PML_PLUGINS:-libfilter_meshing}; do
  cp "$S/lib/plugins/$plugin.so" "$T/pml/site/pymeshlab/lib/plugins/"
done
"$PY" - "$S/lib" "$T/pml/lib" "$T/pml/site/pymeshlab" <<'PY'
# the bundled libraries reached (NEEDED, transitively) from the module and the carried plugins
import pathlib, shutil, subprocess, sys
src, dst, site = map(pathlib.Path, sys.argv[1:])
def needed(p):
    out = subprocess.run(["readelf", "-d", str(p)], capture_output=True, text=True, check=True).stdout
    return [ln.split("[")[1].split("]")[0] for ln in out.splitlines() if "(NEEDED)" in ln]
todo = [*site.glob("pmeshlab*.so"), *(site / "lib" / "plugins").glob("*.so")]
seen = set()
while todo:
    for n in needed(todo.pop()):
        if n not in seen and (src / n).exists():
            seen.add(n)
            shutil.copyfile(src / n, dst / n)
            todo.append(dst / n)
print("pymeshlab: bundled libraries carried:", len(seen), sorted(seen))
PY
# the host's GL libraries (Qt's Gui needs libGL / libOpenGL; the device may have none: the env script drops any the
# device has)
for n in libGL.so.1 libGLX.so.0 libGLdispatch.so.0 libOpenGL.so.0; do
  p=$(ldconfig -p | awk -v n="$n" '$1 == n && /x86-64/ {print $NF; exit}')
  if [ -n "$p" ]; then cp -L "$p" "$T/pml/lib/$n"; else echo "note: $n not on this host"; fi
done
# ICU's empty stub data in place of the 24 MB locale data (the symbol libicuuc.so.56 needs, no entries)
if [ -f "$T/pml/lib/libicudata.so.56" ]; then
  cat > "$T/icustub.c" <<'CC'
/* ICU's stubdata (icu4c/source/stubdata/stubdata.cpp): a common data package with no entries */
#include <stdint.h>
typedef struct { uint16_t size, reserved; uint8_t isBigEndian, charsetFamily, sizeofUChar, reservedByte;
                 uint8_t dataFormat[4], formatVersion[4], dataVersion[4]; } UDataInfo;
typedef struct { uint16_t headerSize; uint8_t magic1, magic2; UDataInfo info; char padding[8];
                 uint32_t count, reserved; struct { uint32_t nameOffset, dataOffset; } toc[1]; } ICU_Data_Header;
__attribute__((visibility("default"))) const ICU_Data_Header icudt56_dat = {
    32, 0xda, 0x27, {sizeof(UDataInfo), 0, 0, 0, 2, 0, {0x54, 0x6f, 0x43, 0x50}, {1, 0, 0, 0}, {0, 0, 0, 0}},
    {0, 0, 0, 0, 0, 0, 0, 0}, 0, 0, {{0, 0}}};
CC
  gcc -shared -fPIC -O2 -Wl,-soname,libicudata.so.56 -o "$T/pml/lib/libicudata.so.56" "$T/icustub.c"
  strip "$T/pml/lib/libicudata.so.56"
fi
strip --strip-unneeded "$T"/pml/lib/*.so* "$T"/pml/site/pymeshlab/*.so "$T"/pml/site/pymeshlab/lib/plugins/*.so \
  2>/dev/null || true
tar -C "$T/pml" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - site lib | xz -T2 -9e > "$C/pml.tar.xz"

# --- the PSB meshes (lossless int packing) and the humans
cp "$DATA/off/101.off" "$C/101.off"
PYTHONPATH="$ROOT/benchmarks" "$PY" - "$DATA" "$T" <<'PY'
import hashlib, sys, pathlib, numpy as np
import mesh_psb as mp
data, T = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
ints, humans, store = {}, {}, {}
for i in mp.mesh_ids(data):
    v, f = mp.load_off(data / "off" / f"{i}.off")
    vi = np.rint(v * 1e6)
    if not (np.abs(vi) < 2 ** 31).all() or not np.array_equal(vi.astype(np.int32).astype(np.float64) / 1e6, v):
        raise SystemExit(f"mesh {i}: its vertices are not decimals of at most 6 places in int32")
    ints[f"vi_{i}"], ints[f"f_{i}"] = vi.astype(np.int32), f.astype(np.int32)
    store[f"v_{i}"], store[f"f_{i}"] = ints[f"vi_{i}"].astype(np.float64) / 1e6, f.astype(np.int32)
    for j, h in enumerate(mp.load_human(data, i)):
        humans[f"s_{i}_{j}"] = h.astype(np.int16)
sha = hashlib.sha1()
for k in sorted(store):
    sha.update(np.ascontiguousarray(store[k]).tobytes())
ok = sha.hexdigest() == "b3f72461791bc2b154ad8ee90acfce6f2f4851cc"
print("PSB meshes:", len(store) // 2, "SHA-1 of the assembled arrays", sha.hexdigest(), "OK" if ok else "DIFFERENT")
if not ok:
    raise SystemExit(1)
np.savez(T / "psb_int.npz", **ints)
np.savez(T / "humans.npz", **humans)
PY
xz -T2 -9e -c "$T/psb_int.npz" > "$C/psb_int.npz.xz"
"$PY" "$ROOT/benchmarks/mesh_simplify_session7_pack.py" pack "$T/humans.npz" "$C/humans.npzx"
(cd "$C" && sha1sum pml.tar.xz fast_simplification-*.whl psb_int.npz.xz humans.npzx 101.off > carry.sha1)
du -b "$C"/* | awk '{s += $1; print} END {printf "carry %.1f MiB\n", s / 1048576; if (s > 26 * 1048576) exit 1}'
