"""Load a mesh with pymeshlab in a child process.

pymeshlab (MeshLab's C++ importers) can crash the process on a corrupt 3MF, glTF, COLLADA,
... file (a segmentation fault takes the whole window down, with any unsaved work). The
formats we do not parse ourselves are therefore read in a short-lived child process: a
crash there is one line (":func:`load` raises :class:`~app.io.mesh_formats.MeshIOError`"),
and the window lives on.

``python -m app.io.pymeshlab_child MESH OUT.npz`` is the child: it writes ``vertices``,
``faces`` and (when the file has them) ``face_colors`` to ``OUT.npz`` and prints one JSON
line, ``{"ok": true}`` or ``{"error": "..."}``.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile

import numpy as np

__all__ = ["load", "TIMEOUT_S"]

#: the module run as the child (a test replaces it with one that crashes)
_CHILD_MODULE = "app.io.pymeshlab_child"
#: a mesh that takes longer than this to import is refused (a child stuck in a parser)
TIMEOUT_S = 300.0


def _reason(exc: Exception) -> str:
    import re

    text = str(exc)
    m = re.search(r"Error details:\s*(.+)", text)
    if m:
        return m.group(1).strip()
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "") or "the file is corrupt"


def _child(path: str, out: str) -> int:
    import pymeshlab

    ms = pymeshlab.MeshSet()
    try:
        ms.load_new_mesh(path)
    except Exception as exc:  # noqa: BLE001 - reported to the parent as one line
        unknown = "unknown format" in str(exc).lower()
        print(json.dumps({"error": _reason(exc), "unknown_format": unknown}), flush=True)
        return 0
    m = ms.current_mesh()
    arrays = {
        "vertices": np.ascontiguousarray(m.vertex_matrix(), dtype=np.float64).reshape(-1, 3),
        "faces": np.ascontiguousarray(m.face_matrix(), dtype=np.int64).reshape(-1, 3),
    }
    if m.has_face_color():
        c = m.face_color_matrix()
        arrays["face_colors"] = np.clip(np.rint(c[:, :3] * 255), 0, 255).astype(np.uint8)
    with open(out, "wb") as fh:
        np.savez(fh, **arrays)
    print(json.dumps({"ok": True}), flush=True)
    return 0


def load(path: str | os.PathLike, name: str, error: type[Exception], *,
         timeout: float = TIMEOUT_S) -> dict:
    """``{"vertices", "faces", "face_colors"?}`` of ``path`` read by pymeshlab in a child
    process; any failure, a crash of the child included, raises ``error`` (one line naming
    ``name``). ``{"unknown_format": True}`` is returned when pymeshlab does not know the
    extension (the caller words that message)."""
    with tempfile.TemporaryDirectory(prefix="gpulab-mesh-") as d:
        out = pathlib.Path(d) / "mesh.npz"
        env = dict(os.environ)
        root = str(pathlib.Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        try:
            r = subprocess.run([sys.executable, "-m", _CHILD_MODULE, str(path), str(out)],
                               capture_output=True, text=True, timeout=timeout, env=env,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise error(f"{name}: reading the mesh took more than {timeout:.0f} s; the file is probably "
                        "corrupt") from None
        except OSError as exc:
            raise error(f"{name}: cannot start the mesh reader ({exc.strerror or exc})") from None
        if r.returncode < 0:
            try:
                sig = signal.Signals(-r.returncode).name
            except ValueError:
                sig = f"signal {-r.returncode}"
            raise error(f"{name}: the mesh importer (pymeshlab) crashed on this file ({sig}); the file is "
                        "corrupt or uses a variant of the format it cannot read")
        msg = next((json.loads(ln) for ln in reversed(r.stdout.splitlines()) if ln.startswith("{")), None)
        if msg is None or r.returncode != 0:
            tail = next((ln.strip() for ln in reversed(r.stderr.splitlines()) if ln.strip()), "")
            if "No module named 'pymeshlab'" in r.stderr:
                raise error(f"{name}: reading this format needs pymeshlab, which is not installed "
                            "(pip install pymeshlab)")
            raise error(f"{name}: the mesh importer failed ({tail[:160] or f'exit status {r.returncode}'})")
        if "error" in msg:
            if msg.get("unknown_format"):
                return {"unknown_format": True}
            raise error(f"{name}: {msg['error']}")
        with np.load(out, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1], sys.argv[2]))
