"""QSettings for gpulab, and helpers that persist parameter widgets.

Settings live in an INI file: ``$GPULAB_SETTINGS_DIR/gpulab.ini`` when that variable
is set (the tests point it at a temporary folder), else the platform's per-user
location for organisation "gpulab", application "gpulab".
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractSlider,
    QComboBox,
    QDoubleSpinBox,
    QLineEdit,
    QSpinBox,
    QWidget,
)

__all__ = [
    "ENV_SETTINGS_DIR",
    "make_settings",
    "widget_value",
    "set_widget_value",
    "save_widgets",
    "restore_widgets",
]

log = logging.getLogger(__name__)

ENV_SETTINGS_DIR = "GPULAB_SETTINGS_DIR"
ORGANIZATION = "gpulab"
APPLICATION = "gpulab"


def make_settings() -> QSettings:
    """The QSettings object every part of the window reads and writes."""
    d = os.environ.get(ENV_SETTINGS_DIR)
    if d:
        Path(d).mkdir(parents=True, exist_ok=True)
        return QSettings(str(Path(d) / "gpulab.ini"), QSettings.Format.IniFormat)
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANIZATION, APPLICATION)


# --------------------------------------------------------------------------- widgets
def widget_value(w: QWidget):
    """The value a parameter widget holds (int, float, bool or str)."""
    if isinstance(w, QDoubleSpinBox):
        return float(w.value())
    if isinstance(w, QSpinBox | QAbstractSlider):
        return int(w.value())
    if isinstance(w, QComboBox):
        return w.currentText()
    if isinstance(w, QAbstractButton) and w.isCheckable():
        return bool(w.isChecked())
    if isinstance(w, QLineEdit):
        return w.text()
    raise TypeError(f"cannot read a value from a {type(w).__name__}")


def _to_bool(v) -> bool:
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


def set_widget_value(w: QWidget, value) -> bool:
    """Put a stored ``value`` back into ``w``. Returns False (and leaves ``w`` as it
    is) when the value does not fit, e.g. a combo entry that no longer exists."""
    try:
        if isinstance(w, QDoubleSpinBox):
            w.setValue(float(value))
        elif isinstance(w, QSpinBox | QAbstractSlider):
            w.setValue(int(float(value)))
        elif isinstance(w, QComboBox):
            i = w.findText(str(value))
            if i < 0:
                return False
            w.setCurrentIndex(i)
        elif isinstance(w, QAbstractButton) and w.isCheckable():
            w.setChecked(_to_bool(value))
        elif isinstance(w, QLineEdit):
            w.setText(str(value))
        else:
            return False
    except (TypeError, ValueError):
        return False
    return True


def save_widgets(settings: QSettings, widgets: dict[str, QWidget]) -> None:
    """Store each widget's value under its key (in the current settings group)."""
    for key, w in widgets.items():
        try:
            settings.setValue(key, widget_value(w))
        except TypeError as exc:
            log.debug("not saving %s: %s", key, exc)


def restore_widgets(settings: QSettings, widgets: dict[str, QWidget]) -> None:
    """Restore the values :func:`save_widgets` stored; unknown keys are ignored."""
    for key, w in widgets.items():
        if settings.contains(key):
            if not set_widget_value(w, settings.value(key)):
                log.info("ignored stored value %r for %s", settings.value(key), key)
