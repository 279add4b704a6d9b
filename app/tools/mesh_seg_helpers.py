"""The mesh tool's checks and its summary's layout line (split from :mod:`app.tools.mesh_seg`, which
re-exports them)."""

from __future__ import annotations

from gpu_kernels.errors import InputError

#: a part needs at least this many faces of the clustered mesh on average
MIN_FACES_PER_PART = 10


def check_k(params: dict, n_faces: int) -> None:
    """k must leave the parts a few faces each (of the mesh actually clustered)."""
    k = params.get("k", "auto")
    if k == "auto":
        return
    mf = params.get("max_faces")
    n = min(n_faces, mf) if isinstance(mf, int) and not isinstance(mf, bool) else n_faces
    if k * MIN_FACES_PER_PART > n:
        raise InputError(f"k = {k} asks for more parts than make sense for {n:,} faces (at most "
                         f"{max(1, n // MIN_FACES_PER_PART):,}, {MIN_FACES_PER_PART} faces per part)")



def layout_line(seg) -> str | None:
    """The summary's line on k = "auto"'s layout (``info["auto_layout"]``, ``auto_layout="concave"``): which
    of the two layouts was kept, and why; None where none was compared."""
    note = (getattr(seg, "info", {}) or {}).get("auto_layout")
    if not note:
        return None
    kept = note.get("kept")
    what = "the fixed-k layout at the same k" if kept == "integer k" else "k = auto's own layout"
    ca, ck = note.get("concavity_auto"), note.get("concavity_k")
    if ca is not None and ck is not None:
        how = "more" if kept == "integer k" else "not less"
        why = f"{how} concave boundaries: {float(ck if kept == 'integer k' else ca):.3f} against " \
              f"{float(ca if kept == 'integer k' else ck):.3f}"
    else:
        why = str(note.get("why", ""))
    return f"  auto-k layout: {what} ({why})" if why else f"  auto-k layout: {what}"


def with_layout_line(lines: list[str], seg) -> list[str]:
    """``lines`` (the summary) with :func:`layout_line` after the parts line (at the end if there is none)."""
    extra = layout_line(seg)
    if extra is None:
        return lines
    at = next((i + 1 for i, line in enumerate(lines) if line.lstrip().startswith("parts (k):")), len(lines))
    return [*lines[:at], extra, *lines[at:]]
