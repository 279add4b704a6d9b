"""The parameter form a tab shows, generated from the tool's :class:`~app.tools.params.ParamSet`.

One widget per parameter: a spin box (with an ``auto``/``off`` check box where the
parameter accepts it), a combo box for choices, a check box for flags, a line edit for
text. Labels, ranges, steps, units and tool tips come from the declaration, so the form,
the CLI and the library agree by construction (``tests/framework`` checks it for every tool).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..tools.params import Param, ParameterError, ParamSet

__all__ = ["ParamForm"]

log = logging.getLogger(__name__)

_INT_MAX = 2**31 - 1


def _decimals(p: Param) -> int:
    if p.decimals is not None:
        return p.decimals
    step = p.step or 0.01
    s = f"{step:.10f}".rstrip("0")
    return max(2, len(s.split(".")[1]) if "." in s else 0)


def _tooltip(p: Param) -> str:
    bits = [p.help]
    if p.type in (int, float):
        bits.append(f"Range {p.range_text()}{' ' + p.unit if p.unit else ''}.")
    if p.choices and p.choice_help:
        bits += [f"{c}: {p.choice_help[c]}" for c in p.choices if c in p.choice_help]
    bits.append(f"Default: {p.to_text(p.default)}. Command line: {p.option}")
    return "\n".join(bits)


class _Field:
    """The widgets of one parameter and how to read/write them."""

    def __init__(self, p: Param, on_change):
        self.p = p
        self.flag: QCheckBox | None = None  # the auto/off box
        self.off: QCheckBox | None = None   # a second, "off" box where the parameter takes both auto and None
        tip = _tooltip(p)
        if p.type is bool:
            self.editor = QCheckBox()
            self.editor.toggled.connect(on_change)
        elif p.choices:
            self.editor = QComboBox()
            for c in p.choices:
                self.editor.addItem(str(c), c)
                if c in p.choice_help:
                    self.editor.setItemData(self.editor.count() - 1, p.choice_help[c], Qt.ItemDataRole.ToolTipRole)
            self.editor.currentIndexChanged.connect(on_change)
        elif p.type is str:
            self.editor = QLineEdit()
            self.editor.editingFinished.connect(on_change)
        else:
            if p.type is int:
                self.editor = QSpinBox()
                lo = int(p.minimum) + (1 if p.min_open else 0) if p.minimum is not None else -_INT_MAX
                hi = int(p.maximum) - (1 if p.max_open else 0) if p.maximum is not None else _INT_MAX
                self.editor.setRange(lo, hi)
                self.editor.setSingleStep(int(p.step or 1))
                self.editor.setGroupSeparatorShown(hi >= 10_000)
            else:
                self.editor = QDoubleSpinBox()
                dec = _decimals(p)
                self.editor.setDecimals(dec)
                eps = 10.0 ** (-dec)
                lo = p.minimum + (eps if p.min_open else 0) if p.minimum is not None else -1e12
                hi = p.maximum - (eps if p.max_open else 0) if p.maximum is not None else 1e12
                self.editor.setRange(lo, hi)
                self.editor.setSingleStep(p.step or (0.1 if hi - lo > 2 else 0.01))
            if p.unit:
                self.editor.setSuffix(f" {p.unit}")
            self.editor.setKeyboardTracking(False)
            self.editor.valueChanged.connect(on_change)
            if p.auto or p.optional:
                self.flag = QCheckBox(p.none_text if p.optional and not p.auto else "auto")
                self.flag.toggled.connect(lambda on: self.editor.setEnabled(not on))
                self.flag.toggled.connect(self._show_special)
                self.flag.toggled.connect(on_change)
                self.flag.setToolTip("Let gpulab choose" if p.auto else f"{p.none_text}: {p.label} is not used")
            if p.auto and p.optional:
                # both 'auto' and None (the mesh tool's working resolution: auto / off = full resolution): one
                # box each, at most one checked (session 17: None had set the auto box, so 'off' from a preset or a
                # copied command came back as 'auto')
                self.off = QCheckBox(p.none_text)
                self.off.setToolTip(f"{p.none_text}: {p.label} is not used")
                self.off.toggled.connect(self._off_toggled)
                self.flag.toggled.connect(lambda on: on and self.off.setChecked(False))
                self.off.toggled.connect(on_change)
        self.editor.setToolTip(tip)
        self.editor.setObjectName(f"param-{p.name}")
        if self.flag is not None:
            self.flag.setObjectName(f"param-{p.name}-{self.flag.text()}")
            box = QWidget()
            lay = QHBoxLayout(box)
            lay.setContentsMargins(0, 0, 0, 0)
            lay.addWidget(self.editor, 1)
            lay.addWidget(self.flag)
            if self.off is not None:
                self.off.setObjectName(f"param-{p.name}-{p.none_text}")
                lay.addWidget(self.off)
            self.widget = box
        else:
            self.widget = self.editor

    # -- the auto/off display: the greyed box says "auto" (and, after a run, what auto chose),
    #    never a number that was not used
    chosen = None  # what auto chose in the last run

    def special_text(self) -> str:
        word = self.flag.text() if self.flag is not None else "auto"
        if self.chosen is None:
            return word
        c = self.chosen
        return f"{word} ({c:,})" if isinstance(c, int) else f"{word} ({c:.{max(self.editor.decimals(), 2)}g})" \
            if isinstance(c, float) else f"{word} ({c})"

    def _show_special(self, on: bool) -> None:
        self._show_word(on, self.special_text())

    def _show_word(self, on: bool, word: str) -> None:
        """The greyed box shows ``word`` at the spin box's minimum (on), or the number it had (off)."""
        e = self.editor
        if not isinstance(e, QSpinBox | QDoubleSpinBox):
            return
        e.blockSignals(True)
        try:
            if on:
                if e.specialValueText() == "" and e.value() != e.minimum():
                    self._manual = e.value()
                e.setSpecialValueText(word)
                e.setValue(e.minimum())
            else:
                e.setSpecialValueText("")
                back = self.chosen if self.chosen is not None else getattr(self, "_manual", None)
                e.setValue(back if back is not None else self.p.shown_value)
        finally:
            e.blockSignals(False)

    def _off_toggled(self, on: bool) -> None:
        if on:
            self.flag.setChecked(False)
        self.editor.setEnabled(not on and not self.flag.isChecked())
        self._show_off(on)

    def _show_off(self, on: bool) -> None:
        """The greyed box says "off" while the off box is checked (never a number that is not used)."""
        if self.flag.isChecked() or (not on and self.editor.specialValueText() != self.p.none_text):
            return
        self._show_word(on, self.p.none_text)

    def set_chosen(self, value) -> None:
        """What auto chose in the last run (None: forget it)."""
        self.chosen = value
        if self.flag is not None and self.flag.isChecked():
            self._show_special(True)

    def get(self):
        p, e = self.p, self.editor
        if self.off is not None and self.off.isChecked():
            return None
        if self.flag is not None and self.flag.isChecked():
            return p.auto_value if p.auto else None
        if isinstance(e, QCheckBox):
            return e.isChecked()
        if isinstance(e, QComboBox):
            return e.currentData()
        if isinstance(e, QLineEdit):
            return e.text()
        return e.value()

    def set(self, value) -> None:
        p, e = self.p, self.editor
        special = (p.auto and p.is_auto(value)) or (value is None and p.optional)
        if self.off is not None:  # None: the off box; auto: the auto box
            none = value is None
            self.off.setChecked(none)
            self.flag.setChecked(special and not none)
            e.setEnabled(not special)
            if none:
                self._show_off(True)
                return
            self._show_off(False)
        elif self.flag is not None:
            self.flag.setChecked(special)
            e.setEnabled(not special)
        if special:
            self._show_special(True)
            return
        if isinstance(e, QCheckBox):
            e.setChecked(bool(value))
        elif isinstance(e, QComboBox):
            i = e.findData(value)
            if i >= 0:
                e.setCurrentIndex(i)
        elif isinstance(e, QLineEdit):
            e.setText(str(value))
        else:
            e.setValue(value)


class ParamForm(QWidget):
    """A form for a :class:`ParamSet`; ``changed`` is emitted on every edit.

    ``values()`` returns the validated values (a :class:`ParameterError` says which one is
    wrong); ``set_values`` fills the form (unknown or invalid values are ignored, with a log
    line, so an old settings file never breaks the tab).
    """

    changed = Signal()

    def __init__(self, params: ParamSet, parent: QWidget | None = None):
        super().__init__(parent)
        self.params = params
        self.fields: dict[str, _Field] = {}
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        main = QFormLayout()
        main.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        outer.addLayout(main)
        adv = [p for p in params if p.advanced]
        adv_form = None
        if adv:
            self.advanced_button = QToolButton()
            self.advanced_button.setText("Advanced")
            self.advanced_button.setCheckable(True)
            self.advanced_button.setArrowType(Qt.ArrowType.RightArrow)
            self.advanced_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
            self.advanced_button.setAutoRaise(True)
            outer.addWidget(self.advanced_button)
            self.advanced_box = QWidget()
            adv_form = QFormLayout(self.advanced_box)
            adv_form.setContentsMargins(0, 0, 0, 0)
            adv_form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
            outer.addWidget(self.advanced_box)
            self.advanced_box.setVisible(False)

            def toggle(on):
                self.advanced_box.setVisible(on)
                self.advanced_button.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)

            self.advanced_button.toggled.connect(toggle)
        self._rows: dict[str, QFormLayout] = {}
        self._hidden: set[str] = set()
        # display-only parameters (Param.display) get their own form, which the tab shows in
        # its Display group: editing them redraws the result without a job
        self.display_widget: QWidget | None = None
        disp_form = None
        if any(p.display for p in params):
            self.display_widget = QWidget()
            disp_form = QFormLayout(self.display_widget)
            disp_form.setContentsMargins(0, 0, 0, 0)
            disp_form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        for p in params:
            f = _Field(p, self._emit)
            self.fields[p.name] = f
            label = QLabel(f"{p.label}:")
            label.setToolTip(f.editor.toolTip())
            lay = disp_form if p.display else adv_form if p.advanced and adv_form is not None else main
            lay.addRow(label, f.widget)
            self._rows[p.name] = lay
        self._muted = False
        self.changed.connect(self._update_used)
        self.set_values(params.defaults())

    def _update_used(self) -> None:
        """Hide the parameters the others make unused (Param.used_when: flow's block size
        under the refinement), and those a tab shows with its own widget (:meth:`hide`)."""
        unused = set(self.params.unused(self.raw_values())) if hasattr(self.params, "unused") else set()
        for name, lay in self._rows.items():
            lay.setRowVisible(self.fields[name].widget, name not in unused and name not in self._hidden)

    def hide(self, name: str) -> None:
        """Never show the row of ``name`` (a tab binds the parameter to a widget of its own)."""
        self._hidden.add(name)
        self._update_used()

    def is_shown(self, name: str) -> bool:
        """Whether the row of ``name`` is shown (not hidden as unused)."""
        lay = self._rows[name]
        return lay.isRowVisible(self.fields[name].widget)

    def _emit(self, *_a) -> None:
        if not self._muted:
            self.changed.emit()

    # -- values -----------------------------------------------------------------------
    def raw_values(self) -> dict[str, Any]:
        return {name: f.get() for name, f in self.fields.items()}

    def values(self) -> dict[str, Any]:
        """The form's values, validated (raises :class:`ParameterError`)."""
        return self.params.validate(self.raw_values())

    def set_values(self, values: dict[str, Any]) -> None:
        self._muted = True
        try:
            for name, v in values.items():
                f = self.fields.get(name)
                if f is None:
                    log.info("ignored unknown parameter %r", name)
                    continue
                try:
                    f.set(f.p.validate(v))
                except ParameterError as exc:
                    log.info("ignored %s = %r: %s", name, v, exc)
        finally:
            self._muted = False
        self.changed.emit()

    def set_value(self, name: str, value) -> None:
        self.set_values({name: value})

    def reset(self) -> None:
        self.set_values(self.params.defaults())

    def editor(self, name: str) -> QWidget:
        """The value widget of ``name`` (spin box, combo box, ...)."""
        return self.fields[name].editor

    def show_chosen(self, values: dict[str, Any]) -> None:
        """After a run: what each ``auto`` parameter chose, shown in its greyed box ("auto (7)")."""
        for name, v in values.items():
            f = self.fields.get(name)
            if f is not None and f.flag is not None:
                f.set_chosen(v)

    def clear_chosen(self) -> None:
        """Forget what auto chose (a new input: the boxes say "auto" again)."""
        for f in self.fields.values():
            if f.flag is not None and f.chosen is not None:
                f.set_chosen(None)

    def flag(self, name: str) -> QCheckBox | None:
        """The ``auto``/``off`` check box of ``name``, if it has one."""
        return self.fields[name].flag

    # -- settings ----------------------------------------------------------------------
    def save(self, settings) -> None:
        """Store every value (JSON text) in the current ``QSettings`` group."""
        try:
            vals = self.values()
        except ParameterError:
            vals = {}
            for name, f in self.fields.items():
                try:
                    vals[name] = f.p.validate(f.get())
                except ParameterError:
                    continue
        for name, v in vals.items():
            settings.setValue(name, json.dumps(self.params[name].to_json(v)))

    def restore(self, settings) -> None:
        vals = {}
        for name in self.fields:
            if settings.contains(name):
                raw = settings.value(name)
                try:
                    vals[name] = json.loads(raw) if isinstance(raw, str) else raw
                except (TypeError, ValueError):
                    vals[name] = raw
        if vals:
            self.set_values(vals)
