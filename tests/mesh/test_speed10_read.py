"""Issue 22 (session 10): the text readers' compiled passes (``app/io/_text_numba.py``) give what
NumPy's give, bit for bit, or decline so that NumPy's run: the tokens per line, the integers, and the
decimal numbers on the exact fast path (≤ 15 significant digits, decimal exponent within ±22)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import numpy as np
import pytest

from app.io import mesh_formats as mf

numba = pytest.importorskip("numba")
from app.io import _text_numba as tn  # noqa: E402

PSB = pathlib.Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "psb" / "off"
ROOT = pathlib.Path(__file__).resolve().parents[2]


def _np_tokens(block: bytes, n: int, monkeypatch) -> np.ndarray:
    with monkeypatch.context() as m:
        m.setattr(mf, "COMPILED_TEXT", False)
        return mf._tokens_per_line(block, n)


def _blocks(seed: int, count: int):
    rng = np.random.default_rng(seed)
    alphabet = [b" ", b"\t", b"\n", b"\r", b"\x0b", b"\x0c", b"1", b"22", b"-3.5", b"x", b"\n\n", b"  "]
    for _ in range(count):
        parts = rng.choice(len(alphabet), size=rng.integers(0, 40))
        yield b"".join(alphabet[i] for i in parts)


def test_a_read_never_waits_for_a_compile(monkeypatch):
    # numba loaded but the passes not compiled: NumPy's passes, and the compile starts aside once
    started = []
    monkeypatch.setattr(tn, "ready", lambda: False)
    monkeypatch.setattr(tn, "warm_up_in_background", lambda: started.append(1))
    assert mf._compiled() is None
    assert np.array_equal(mf._tokens_per_line(b"1 2\n3\n", 2), [2, 1])
    assert started


def test_the_warm_up_compiles_once_in_a_thread():
    tn.warm_up_in_background()
    if tn._warming is not None:
        tn._warming.join(120)
    assert tn.ready()
    t = tn._warming
    tn.warm_up_in_background()
    assert tn._warming is t   # once per process


def test_tokens_per_line_equal_numpys(monkeypatch):
    tn.warm_up()
    assert mf._compiled() is tn
    for block in _blocks(3, 400):
        n_lf = block.count(b"\n")
        for n in {0, 1, n_lf, n_lf + 1, n_lf + 3}:
            got = tn.tokens_per_line(np.frombuffer(block, np.uint8), n)
            want = _np_tokens(block, n, monkeypatch)
            assert got.dtype == want.dtype and np.array_equal(got, want), (block, n)


INT_OK = [b"0", b"7", b"-12", b"+5", b"007", b"-0", b"123456789012345678", b"-999999999999999999"]
INT_NO = [b"1.0", b"1e3", b"--1", b"+", b"-", b"1234567890123456789", b"0x10", b"1-2", b"3,4"]
FLOAT_OK = [b"0", b"-0", b"1.", b".5", b"-.25", b"+3.25", b"1e5", b"1E-05", b"2.5e+22", b"9e-22",
            b"0.000123", b"123456789012345", b"0.123456789012345", b"-6.02214076e+21", b"000001.5000",
            b"1e0", b"0e99", b"0.0e-400", b"7", b"12345.678901234e-13"]
FLOAT_NO = [b"nan", b"inf", b"-Infinity", b"1.0000000000000001", b"1234567890123456", b"1e23", b"1e-23",
            b"1e", b"1e+", b".", b"-", b"1.2.3", b"1e1000000", b"0x1p3", b"1,5", b"e5", b"1.5f", b"12345.678901234e-20"]


@pytest.mark.parametrize("tok", INT_OK)
def test_a_plain_integer_is_numpys(tok):
    block = b"3 " + tok + b"\n" + tok + b" 4\n"
    ok, got = tn.parse_ints(np.frombuffer(block, np.uint8), 4)
    assert ok and np.array_equal(got, np.fromstring(block, dtype=np.int64, sep=" "))


@pytest.mark.parametrize("tok", INT_NO)
def test_any_other_integer_token_declines(tok):
    assert not tn.parse_ints(np.frombuffer(b"1 " + tok + b" 2\n", np.uint8), 3)[0]


@pytest.mark.parametrize("tok", FLOAT_OK)
def test_a_fast_path_decimal_is_strtods_value(tok):
    block = b"1.5 " + tok + b"\n\t" + tok + b" -2\n"
    ok, got = tn.parse_floats(np.frombuffer(block, np.uint8), 4, tn._P10)
    want = np.fromstring(block, dtype=np.float64, sep=" ")
    assert ok and np.array_equal(got.view(np.int64), want.view(np.int64)), (tok, got, want)
    assert got[1] == float(tok.decode())


@pytest.mark.parametrize("tok", FLOAT_NO)
def test_a_decimal_off_the_fast_path_declines(tok):
    assert not tn.parse_floats(np.frombuffer(b"1 " + tok + b" 2\n", np.uint8), 3, tn._P10)[0]


def test_a_wrong_count_declines():
    a = np.frombuffer(b"1 2 3\n", np.uint8)
    assert not tn.parse_ints(a, 2)[0] and not tn.parse_ints(a, 4)[0] and tn.parse_ints(a, 3)[0]
    assert not tn.parse_floats(a, 2, tn._P10)[0] and not tn.parse_floats(a, 4, tn._P10)[0]


def test_random_decimals_are_strtods_values():
    """60,000 random decimals in the forms mesh files use (fixed and exponent notation, 1-15
    significant digits, exponents -7..7: decimal exponents within ±22): every value equals Python's float()."""
    rng = np.random.default_rng(7)
    toks = []
    for _ in range(60000):
        nd = int(rng.integers(1, 16))
        digits = "".join(str(d) for d in rng.integers(0, 10, nd))
        point = int(rng.integers(0, nd + 1))
        s = digits[:point] + "." + digits[point:] if rng.random() < 0.8 else digits
        if rng.random() < 0.4:
            s += f"e{int(rng.integers(-7, 8)):+d}"
        toks.append(("-" if rng.random() < 0.3 else "") + s)
    block = " ".join(toks).encode() + b"\n"
    ok, got = tn.parse_floats(np.frombuffer(block, np.uint8), len(toks), tn._P10)
    assert ok
    want = np.array([float(t) for t in toks])
    assert np.array_equal(got.view(np.int64), want.view(np.int64))


@pytest.mark.skipif(not PSB.is_dir(), reason="the shared PSB data is not here")
def test_psb_files_read_the_same_compiled(monkeypatch):
    from app.io.mesh_io import read_mesh

    files = sorted(PSB.glob("*.off"))[::4]
    assert files
    tn.warm_up()
    monkeypatch.setattr(tn, "ready", lambda: True)   # the spy below has no compiled signatures
    for p in files:
        with monkeypatch.context() as m:
            m.setattr(mf, "COMPILED_TEXT", False)
            v0, f0 = read_mesh(str(p))
        calls = []
        real = tn.parse_floats

        def spy(*a, _real=real, calls=calls):
            out = _real(*a)
            calls.append(bool(out[0]))
            return out
        monkeypatch.setattr(tn, "parse_floats", spy)
        v1, f1 = read_mesh(str(p))
        monkeypatch.setattr(tn, "parse_floats", real)
        assert calls == [True], p                   # the compiled parse was taken
        assert v1.dtype == v0.dtype and np.array_equal(v1.view(np.int64), v0.view(np.int64)), p
        assert f1.dtype == f0.dtype and np.array_equal(f1, f0), p


def test_a_reader_does_not_import_numba(tmp_path):
    p = tmp_path / "t.off"
    p.write_bytes(b"OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n")
    code = ("import sys; from app.io.mesh_io import read_mesh; v, f = read_mesh(sys.argv[1]); "
            "assert f.shape == (1, 3); print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(p)], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
