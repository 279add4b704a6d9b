"""Issue 22 (session 8): the text mesh readers' fast paths give what the per-line path gives.

``_lines`` skips its per-line strip/join when the text is already normalised
(``_clean_line_ends``), and ``_tokens_per_line`` counts tokens by a running sum instead of a
search per token. Both must return exactly what the old code returned, on every layout."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from app.io import mesh_formats as mf

PSB = pathlib.Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "psb" / "off"

TEXTS = [
    b"OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n",
    b"OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2",            # no final LF
    b"OFF\r\n3 1 0\r\n0 0 0\r\n1 0 0\r\n0 1 0\r\n3 0 1 2\r\n",  # CRLF
    b"OFF\n\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n",        # a blank line
    b"OFF\n3 1 0 \n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n",         # a trailing blank
    b"OFF\n 3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n",         # a leading blank
    b"OFF\n3 1 0\n0 0 0\t\n1 0 0\n0 1 0\n3 0 1 2\n",        # a trailing tab
    b" OFF\n3 1 0\n",                                        # blank first byte
    b"OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n\n\n",      # blank lines at the end
    b"OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2 \n",         # the last line ends with a blank
    b"OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\x0c",         # a form feed at the end
    b"OFF # comment\n3 1 0\n0 0 0 # c\n1 0 0\n0 1 0\n3 0 1 2\n",  # comments leave blanks
    b"OFF\n3\t1  0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n",        # inner tabs and double blanks
    b"x",
    b"\n",
    b"\r",
    b"",
]


def _lines_slow(data: bytes, comments: bool, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(mf, "_clean_line_ends", lambda d: None)
        return mf._lines(data, comments)


def _same(a, b) -> bool:
    return a[0] == b[0] and np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2]) \
        and a[1].dtype == b[1].dtype and a[2].dtype == b[2].dtype


@pytest.mark.parametrize("i", range(len(TEXTS)))
def test_lines_fast_path_equals_the_per_line_path(i, monkeypatch):
    for comments in (True, False):
        data = TEXTS[i]
        assert _same(mf._lines(data, comments), _lines_slow(data, comments, monkeypatch)), (i, comments)


def test_fast_path_taken_only_on_normalised_text():
    assert mf._clean_line_ends(TEXTS[0]) is not None
    assert mf._clean_line_ends(TEXTS[1]) is not None
    assert mf._clean_line_ends(TEXTS[12]) is not None        # inner blanks are fine
    for i in (2, 3, 4, 5, 6, 7, 8, 9, 10, 14, 15, 16):
        assert mf._clean_line_ends(TEXTS[i]) is None, i


def _tokens_reference(block: bytes, n_lines: int) -> np.ndarray:
    """The session-7 implementation: a search per token."""
    a = np.frombuffer(block, np.uint8)
    ws = mf._WS[a]
    first = ~ws
    first[1:] &= ws[:-1]
    line = np.searchsorted(np.flatnonzero(a == 10), np.flatnonzero(first))
    return np.bincount(line, minlength=n_lines)[:n_lines]


def test_tokens_per_line_equals_the_search():
    rng = np.random.default_rng(3)
    blocks = [b"1 2 3\n4 5\n6\n", b"1 2 3\n4 5\n6", b"a\n\nb c\n", b"  x  y \n z\n", b"\n\n", b"q", b""]
    for _ in range(40):
        parts = []
        for _ in range(int(rng.integers(1, 30))):
            toks = [b"%d" % int(t) for t in rng.integers(0, 999, int(rng.integers(0, 6)))]
            sep = [b" ", b"\t", b"  "][int(rng.integers(0, 3))]
            parts.append(sep.join(toks) + (b" " if rng.random() < 0.2 else b""))
        blocks.append(b"\n".join(parts) + (b"\n" if rng.random() < 0.7 else b""))
    for block in blocks:
        n_lines = block.count(b"\n")
        for n in {n_lines, max(n_lines - 1, 0), n_lines + 1, n_lines + 3}:
            got = mf._tokens_per_line(block, n)
            want = _tokens_reference(block, n)
            assert got.dtype == want.dtype and np.array_equal(got, want), (block, n)


def test_off_reader_same_arrays_as_the_per_line_path(monkeypatch, tmp_path):
    files = sorted(PSB.glob("*.off"))[:12] if PSB.is_dir() else []
    own = tmp_path / "own.off"
    own.write_bytes(b"OFF\n4 2 0\n0 0 0\n1 0 0\n1 1 0\n0 1 1.5e-05\n3 0 1 2\n4 0 2 3 1\n")
    crlf = tmp_path / "crlf.off"
    crlf.write_bytes(own.read_bytes().replace(b"\n", b"\r\n"))
    for p in [own, crlf, *files]:
        fast = mf.read_off(p)
        with monkeypatch.context() as m:
            m.setattr(mf, "_clean_line_ends", lambda d: None)
            m.setattr(mf, "_tokens_per_line", _tokens_reference)
            slow = mf.read_off(p)
        assert fast.vertices.dtype == slow.vertices.dtype and fast.faces.dtype == slow.faces.dtype
        assert fast.vertices.tobytes() == slow.vertices.tobytes(), p.name
        assert fast.faces.tobytes() == slow.faces.tobytes() and fast.skipped == slow.skipped, p.name
