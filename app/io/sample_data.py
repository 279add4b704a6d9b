"""Where the shared sample data is: PSB meshes, Middlebury flow and MVS, BSDS500, the cardiac
MRI study (``../shared/README.md``). Qt-free.

Looked up in this order:

1. the ``GPULAB_DATA_DIR`` environment variable (``GPULAB_SHARED_DATA``, the benchmarks'
   older name, is read too);
2. the setting ``paths/data_dir`` in gpulab's settings file (the window's
   ``gpulab.ini``: ``$GPULAB_SETTINGS_DIR/gpulab.ini``, else
   ``$XDG_CONFIG_HOME/gpulab/gpulab.ini``, else ``~/.config/gpulab/gpulab.ini``), or what
   :func:`set_data_dir` was given;
3. ``<checkout>/../shared/data``, where the data sits beside a source checkout.

Example
-------
>>> import os
>>> from app.io.sample_data import data_dir, DATA_DIR_ENV
>>> os.environ[DATA_DIR_ENV] = "/tmp"
>>> str(data_dir())
'/tmp'
>>> del os.environ[DATA_DIR_ENV]
"""

from __future__ import annotations

import configparser
import os
from pathlib import Path

__all__ = ["DATA_DIR_ENV", "SETTING_KEY", "data_dir", "data_path", "set_data_dir", "settings_file"]

DATA_DIR_ENV = "GPULAB_DATA_DIR"
_OLD_ENV = "GPULAB_SHARED_DATA"
#: the key in gpulab.ini (QSettings group "paths")
SETTING_KEY = "paths/data_dir"
_CHECKOUT_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"

_override: Path | None = None


def settings_file() -> Path:
    """The window's settings file (the one :func:`app.ui.settings.make_settings` uses)."""
    d = os.environ.get("GPULAB_SETTINGS_DIR")
    if d:
        return Path(d) / "gpulab.ini"
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "gpulab" / "gpulab.ini"


def _from_settings() -> Path | None:
    f = settings_file()
    if not f.is_file():
        return None
    cp = configparser.ConfigParser(interpolation=None)
    try:
        cp.read(f, encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    group, key = SETTING_KEY.split("/")
    value = cp.get(group, key, fallback="").strip().strip('"')
    return Path(value).expanduser() if value else None


def set_data_dir(path: str | os.PathLike | None) -> None:
    """Use ``path`` (the window's setting) when the environment variable is not set; None
    goes back to the settings file and the default."""
    global _override
    _override = Path(path).expanduser() if path else None


def data_dir() -> Path | None:
    """The shared data folder, or None when none of the places above holds one. The
    environment variable wins even when its folder does not exist (so a test or a user can
    point it away from the default)."""
    env = os.environ.get(DATA_DIR_ENV) or os.environ.get(_OLD_ENV)
    if env:
        return Path(env).expanduser()
    for cand in (_override, _from_settings(), _CHECKOUT_DATA):
        if cand is not None and cand.is_dir():
            return cand
    return None


def data_path(*parts: str) -> Path | None:
    """``data_dir() / parts...`` if it exists, else None."""
    d = data_dir()
    if d is None:
        return None
    p = d.joinpath(*parts)
    return p if p.exists() else None
