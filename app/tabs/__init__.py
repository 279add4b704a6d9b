"""The window's tabs: one per tool in :data:`app.tools.TOOLS`, in that order.

Each tab class names its tool (``tool = ...``); :func:`tab_classes` pairs them up. Tools that
have not landed yet show a placeholder (:data:`PLANNED`) after the real tabs.
"""

from __future__ import annotations

from ..tools import TOOLS
from .base import ToolTab
from .echo_tab import EchoTab
from .flow_tab import FlowTab
from .imseg_tab import ImsegTab
from .mesh_tab import MeshTab
from .mvs_tab import MvsTab
from .placeholder import PLANNED, PlaceholderTab

__all__ = ["TAB_CLASSES", "tab_classes", "ToolTab", "PlaceholderTab"]

#: the tab class of each tool, by tool name
TAB_CLASSES: dict[str, type[ToolTab]] = {cls.tool.name: cls for cls in (MeshTab, FlowTab, EchoTab, MvsTab, ImsegTab)}


def tab_classes() -> list[type]:
    """The tab classes in window order: one per tool, then placeholders for planned tools."""
    missing = [t.name for t in TOOLS if t.name not in TAB_CLASSES]
    if missing:
        raise RuntimeError(f"tools without a tab: {', '.join(missing)}")
    have = {t.name for t in TOOLS}
    return [TAB_CLASSES[t.name] for t in TOOLS] + [p for p in PLANNED if p.planned_tool not in have]
