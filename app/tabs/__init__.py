"""The window's tabs, in order.

:data:`TAB_CLASSES` names each tab as ``"module:Class"``. A tab whose module does not
exist yet is replaced by its entry in :data:`FALLBACKS` (a placeholder that says what
the tab will hold). When a tool's issue lands, replace its placeholder here.
"""

from __future__ import annotations

import logging
import traceback

from ..commands import import_optional

__all__ = ["TAB_CLASSES", "FALLBACKS", "load_tab_classes", "resolve_tab_class"]

log = logging.getLogger(__name__)

TAB_CLASSES: list[str] = [
    "app.tabs.mesh_tab:MeshTab",
    "app.tabs.placeholder:OpticalFlowTab",
    "app.tabs.placeholder:EchoMotionTab",
    "app.tabs.placeholder:MultiViewStereoTab",
    "app.tabs.placeholder:ImageSegmentationTab",
]

FALLBACKS: dict[str, str] = {
    "app.tabs.mesh_tab:MeshTab": "app.tabs.placeholder:MeshSegmentationPlaceholder",
}


def _load(spec: str):
    mod_name, _, cls_name = spec.partition(":")
    mod = import_optional(mod_name)
    if mod is None:
        return None
    return getattr(mod, cls_name)


def resolve_tab_class(spec: str):
    """The class for ``spec``, or its placeholder when the module does not exist.

    If the real tab exists but fails to import, the error is logged and the
    placeholder shows it, so one broken tab does not take the window down.
    """
    try:
        cls = _load(spec)
    except Exception as exc:  # a bug in a tab module: keep the other tabs usable
        log.error("could not load tab %s:\n%s", spec, traceback.format_exc().rstrip())
        fb = FALLBACKS.get(spec)
        if fb is None:
            raise
        base = _load(fb)
        return type(base.__name__, (base,), {"load_error": f"{type(exc).__name__}: {exc}"})
    if cls is None:
        fb = FALLBACKS.get(spec)
        if fb is None:
            raise ModuleNotFoundError(f"tab module for {spec} not found and no placeholder is registered")
        return _load(fb)
    return cls


def load_tab_classes(specs: list[str] | None = None) -> list[type]:
    """The tab classes in window order."""
    return [resolve_tab_class(s) for s in (TAB_CLASSES if specs is None else specs)]


