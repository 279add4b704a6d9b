"""lead s17: the mesh k edit at full resolution through the stage cache, with the simplifiers blocked ("block") or
not ("keep"), with or without a first run at the default working resolution ("pre" / "nopre"); prints the cluster
and segment stages of six k edits (ms). Usage: cache_exp.py block|keep pre|nopre MESH [cpu|cuda]"""

import importlib
import sys


def main(argv):
    arm, pre, path = argv[0], argv[1], argv[2]
    if arm == "block":
        s = importlib.import_module("gpu_kernels.mesh.simplify")
        s._MODULES = {k: "nonexistent_" + k.replace("+", "_") for k in s._MODULES}
    from app.tools import mesh_seg
    from app.tools.stage_cache import StageCache
    from gpu_kernels.backend import get_backend

    tool = mesh_seg.TOOL
    data = mesh_seg.load(path)
    be = get_backend(argv[3] if len(argv) > 3 else "cpu")
    cache = StageCache()
    p0 = tool.params.defaults()
    if pre == "pre":
        tool.run_staged(data, dict(p0), device=be, cache=cache)
    base = dict(p0, k=3, max_faces=None)
    tool.run_staged(data, base, device=be, cache=cache)
    out = []
    for k in (5, 6, 7, 4, 8, 9):
        _, rep = tool.run_staged(data, dict(base, k=k), device=be, cache=cache)
        out.append({n: round(v * 1e3, 1) for n, v in rep.seconds.items()})
    print(arm, pre, "cluster", [o.get("cluster") for o in out], "segment", [o.get("segment") for o in out])


if __name__ == "__main__":
    main(sys.argv[1:])
