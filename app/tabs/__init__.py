"""The window's tabs: one per tool in :data:`app.tools.TOOLS`, in that order.

A tool names its tab class (``Tool(tab="app.tabs.echo_tab:EchoTab")``); the class is imported
only when the window is built. Tools that have not landed yet show a placeholder
(:data:`PLANNED`) after the real tabs.
"""

from __future__ import annotations

from ..tools import TOOLS
from .base import ToolTab
from .placeholder import PLANNED, PlaceholderTab

__all__ = ["tab_classes", "tab_class", "ToolTab", "PlaceholderTab"]


def tab_class(tool) -> type[ToolTab]:
    """The tab class ``tool`` names (imported now)."""
    cls = tool.tab_class()
    if cls is None:
        raise RuntimeError(f"the tool {tool.name} names no tab (Tool(tab='package.module:TabClass'))")
    if not (isinstance(cls, type) and issubclass(cls, ToolTab)):
        raise RuntimeError(f"the tab of {tool.name}, {tool.tab!r}, is not a ToolTab")
    return cls


def tab_classes() -> list[type]:
    """The tab classes in window order: one per tool, then placeholders for planned tools."""
    have = {t.name for t in TOOLS}
    return [tab_class(t) for t in TOOLS] + [p for p in PLANNED if p.planned_tool not in have]
