"""Compiled (numba) twins of the text mesh readers' two costly passes (issue 22, session 10: 36 of
the ~440 ms a 50k-face OFF file takes end to end on the H100 host were the read): the tokens on
each line, and the numbers of a block when every token is a plain decimal number.

Each gives exactly what the NumPy code of :mod:`app.io.mesh_formats` gives, or declines (returns
a flag) so that the NumPy code runs:

- :func:`tokens_per_line` counts runs of non-blank bytes (the blanks of ``bytes.split()``) per
  LF-ended line, as ``_tokens_per_line`` does: integer counting, the same counts;
- :func:`parse_ints` reads tokens ``[+-]?[0-9]{1,18}`` (exact in int64) and declines any other
  token;
- :func:`parse_floats` reads ``[+-]?digits[.digits][(e|E)[+-]?digits]`` tokens whose significant
  digits fit 15 (an exact double ``m``) and whose decimal exponent ``q`` is within ±22 (an exact
  power of ten): ``m * 10^q`` or ``m / 10^-q`` is then one correctly rounded operation, the value
  ``strtod`` (and ``np.fromstring``) gives for the token (Clinger's fast path). Any other token
  (more digits, a larger exponent, ``nan``, ``inf``) declines.

The readers use these only once numba is loaded in the process (the mesh tool loads it for its
cuts) and the three are compiled (:func:`ready`): a reader never pays numba's import, a compile or
the disk cache's load. The first read that finds numba loaded starts :func:`warm_up_in_background`.
Compiled code is cached on disk.
"""

from __future__ import annotations

import threading

import numpy as np
from numba import njit

_P10 = np.array([1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22])


@njit(cache=True, nogil=True, inline="always")
def _blank(c):  # pragma: no cover - compiled
    return c == 32 or (9 <= c <= 13)


@njit(cache=True, nogil=True, inline="always")
def _token_start(a, i, m):  # pragma: no cover - compiled
    """The scan's prologue shared by :func:`parse_ints` and :func:`parse_floats`: from byte ``i``, past the
    blanks and an optional sign. ``(i, neg, more)``: the token's first byte after its sign, whether the
    sign was ``-``, and False when only blanks were left (the end of ``a``)."""
    while i < m and _blank(a[i]):
        i += 1
    if i >= m:
        return i, False, False
    neg = False
    c = a[i]
    if c == 43 or c == 45:  # + -
        neg = c == 45
        i += 1
    return i, neg, True


@njit(cache=True, nogil=True)
def tokens_per_line(a, n_lines):  # pragma: no cover - compiled
    """(n_lines,) int64: the tokens started on each LF-ended line of ``a`` (uint8); tokens after
    the last LF count for the line after it, lines beyond ``n_lines`` are not counted."""
    out = np.zeros(n_lines, dtype=np.int64)
    line = 0
    prev_blank = True
    for i in range(a.size):
        c = a[i]
        b = _blank(c)
        if not b and prev_blank and line < n_lines:
            out[line] += 1
        prev_blank = b
        if c == 10:
            line += 1
    return out


@njit(cache=True, nogil=True)
def parse_ints(a, n):  # pragma: no cover - compiled
    """``(ok, values)``: the ``n`` integer tokens of ``a``; ok False when a token is not
    ``[+-]?[0-9]{1,18}`` or there are not ``n`` tokens."""
    out = np.empty(n, dtype=np.int64)
    k = 0
    i = 0
    m = a.size
    while True:
        i, neg, more = _token_start(a, i, m)
        if not more:
            break
        v = np.int64(0)
        nd = 0
        while i < m and 48 <= a[i] <= 57:
            v = v * 10 + (np.int64(a[i]) - 48)
            nd += 1
            i += 1
        if nd == 0 or nd > 18 or (i < m and not _blank(a[i])) or k >= n:
            return False, out
        out[k] = -v if neg else v
        k += 1
    return k == n, out


@njit(cache=True, nogil=True)
def parse_floats(a, n, p10):  # pragma: no cover - compiled
    """``(ok, values)``: the ``n`` decimal tokens of ``a`` as float64, correctly rounded (see the
    module docstring); ok False when a token is outside the exact fast path or there are not
    ``n`` tokens."""
    out = np.empty(n, dtype=np.float64)
    k = 0
    i = 0
    m = a.size
    while True:
        i, neg, more = _token_start(a, i, m)
        if not more:
            break
        mant = np.int64(0)
        e = np.int64(0)
        sig = 0          # significant digits in mant (leading zeros not counted)
        digits = 0       # digits of the mantissa, leading zeros included
        scale = 0        # decimal exponent contributed by the fraction
        while i < m and 48 <= a[i] <= 57:
            d = np.int64(a[i]) - 48
            digits += 1
            if sig > 0 or d != 0:
                sig += 1
                mant = mant * 10 + d
                if sig > 15:
                    return False, out
            i += 1
        if i < m and a[i] == 46:  # .
            i += 1
            while i < m and 48 <= a[i] <= 57:
                d = np.int64(a[i]) - 48
                digits += 1
                scale -= 1
                if sig > 0 or d != 0:
                    sig += 1
                    mant = mant * 10 + d
                    if sig > 15:
                        return False, out
                i += 1
        if digits == 0:
            return False, out
        if i < m and (a[i] == 101 or a[i] == 69):  # e E
            i += 1
            eneg = False
            if i < m and (a[i] == 43 or a[i] == 45):
                eneg = a[i] == 45
                i += 1
            ed = 0
            while i < m and 48 <= a[i] <= 57:
                if ed < 6:
                    e = e * 10 + (np.int64(a[i]) - 48)
                ed += 1
                i += 1
            if ed == 0 or ed >= 6:
                return False, out
            if eneg:
                e = -e
        if (i < m and not _blank(a[i])) or k >= n:
            return False, out
        q = scale + e
        if mant == 0:
            x = 0.0
        elif 0 <= q <= 22:
            x = np.float64(mant) * p10[q]
        elif -22 <= q < 0:
            x = np.float64(mant) / p10[-q]
        else:
            return False, out
        out[k] = -x if neg else x
        k += 1
    return k == n, out


_WARM_LOCK = threading.Lock()
_warming: threading.Thread | None = None


def ready() -> bool:
    """True once the three passes are compiled in this process (no compile or cache load left)."""
    return bool(tokens_per_line.signatures and parse_ints.signatures and parse_floats.signatures)


def warm_up() -> None:
    """Compile (or load from numba's disk cache) the three passes for the readers' argument types.

    >>> warm_up(); ready()
    True
    """
    a = np.frombuffer(b"1 2.5\n3 4\n", np.uint8)
    tokens_per_line(a, 2)
    parse_ints(np.frombuffer(b"1 2", np.uint8), 2)
    parse_floats(a, 4, _P10)


def warm_up_in_background() -> None:
    """:func:`warm_up` in a thread of its own, once per process (later calls return at once). Not a
    daemon: the exit waits for it (a daemon thread still inside LLVM's C++ at finalization can abort
    the exit, see :class:`gpu_kernels.jobs.BackgroundCall`); with numba's disk cache it takes ~0.7 s."""
    global _warming
    with _WARM_LOCK:
        if _warming is not None or ready():
            return
        _warming = threading.Thread(target=warm_up, name="gpulab-text-numba-warm-up", daemon=False)
        _warming.start()
