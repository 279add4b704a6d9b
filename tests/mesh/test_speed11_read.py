"""Issue 22 (session 11): the readers' line-end check compiled (``app.io._text_numba.line_ends``) gives
``mesh_formats._clean_line_ends``' NumPy answer on every text: the same LF positions, or None."""

from __future__ import annotations

import numpy as np
import pytest

from app.io import mesh_formats as mf

tn = pytest.importorskip("app.io._text_numba")


def _numpy(data, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(mf, "COMPILED_TEXT", False)
        return mf._clean_line_ends(data)


TEXTS = [b"", b"\n", b"a", b"a\n", b"a\nb", b"a\nb\n", b" a\n", b"a \n", b"a\n b\n", b"a\n\nb\n", b"a\r\nb\n",
         b"a\rb", b"a\n\n", b"\na\n", b"a\tb\nc d\n", b"a\nb\t", b"a\nb\x0b\n", b"1 2 3\n4 5 6\n7 8 9",
         b"\x0ca\n", b"a\n\x0c", b"x"]


def test_the_compiled_line_ends_are_numpys(monkeypatch):
    tn.warm_up()
    monkeypatch.setattr(tn, "ready", lambda: True)
    rng = np.random.default_rng(1104)
    alphabet = np.frombuffer(b"ab12 \n\t\r\x0b\x0c.-", np.uint8)
    texts = list(TEXTS)
    for n in (1, 2, 3, 5, 8, 20, 200):
        for _ in range(300):
            texts.append(rng.choice(alphabet, n).tobytes())
    for _ in range(200):   # mostly clean texts: lines of tokens
        lines = [b" ".join(rng.choice([b"1", b"-2.5", b"x"], rng.integers(1, 4))) for _ in range(rng.integers(1, 6))]
        texts.append(b"\n".join(lines) + (b"\n" if rng.random() < 0.7 else b""))
    seen_clean = 0
    for t in texts:
        want = _numpy(t, monkeypatch)
        assert mf._compiled() is tn
        got = mf._clean_line_ends(t)
        assert (want is None) == (got is None), t
        if want is not None:
            seen_clean += 1
            assert got.dtype == np.int64 and np.array_equal(got, want), t
    assert seen_clean > 150
