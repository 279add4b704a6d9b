"""Environment variables of the compute layer (standard library only, so the CLI's help can
name them without importing NumPy)."""

import os
import warnings

__all__ = ["ENV_VAR", "flag"]

#: the default device (``cpu``, ``cuda``, ``cuda:N``, ``auto``) where none is given
ENV_VAR = "GPULAB_DEVICE"

_YES = ("1", "true", "yes", "on")
_NO = ("0", "false", "no", "off")
_warned: set = set()


def flag(name: str, default: bool) -> bool:
    """The yes / no environment variable ``name`` (the ``GPULAB_*`` switches): ``1``, ``true``, ``yes`` or ``on``
    is True, ``0``, ``false``, ``no`` or ``off`` False (any case, spaces ignored); unset or empty, ``default``. Any
    other value gives ``default`` with a :class:`RuntimeWarning` (once per variable), rather than a silent guess.

    Example
    -------
    >>> import os
    >>> os.environ["GPULAB_EXAMPLE"] = " Off "
    >>> flag("GPULAB_EXAMPLE", True)
    False
    >>> del os.environ["GPULAB_EXAMPLE"]
    >>> flag("GPULAB_EXAMPLE", True)
    True
    """
    raw = os.environ.get(name, "")
    v = raw.strip().lower()
    if v in _YES:
        return True
    if v in _NO:
        return False
    if v and name not in _warned:
        _warned.add(name)
        warnings.warn(f"{name}={raw!r} is not a yes/no value (1/0, true/false, yes/no, on/off): "
                      f"{'on' if default else 'off'}, its default, is used", RuntimeWarning, stacklevel=2)
    return bool(default)
