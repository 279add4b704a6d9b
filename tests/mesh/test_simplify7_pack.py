"""Issue 22, session 7 (second simplifier helper): the carry pack of benchmarks/mesh_simplify_session7_pack.py.

The working-mesh stores scored on the GPU host travel in this form, so what is unpacked there must be
bit-identical to what the CPU made (names, dtypes, shapes, bytes); the lossy ``--f32`` form must say so
by coming back close, not equal, and in the original dtypes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_simplify_session7_pack as pk  # noqa: E402


def _arrays():
    rng = np.random.default_rng(7)
    return {
        "v_a": rng.normal(size=(57, 3)) * 1e3,                  # float64 with noisy low mantissa bits
        "f_a": rng.integers(0, 57, size=(101, 3)).astype(np.int32),
        "s_1": rng.integers(-3, 9, size=(4, 101)).astype(np.int16),
        "big": rng.integers(-2**40, 2**40, size=5),             # int64 that does not fit int16
        "empty": np.zeros((0, 3), np.float64),
    }


def test_lossless_round_trip_is_bit_identical(tmp_path):
    a = _arrays()
    b = pk.unpack_arrays(pk.pack_arrays(a))
    assert list(b) == list(a)
    for k in a:
        assert b[k].dtype == a[k].dtype and b[k].shape == a[k].shape
        assert a[k].tobytes() == b[k].tobytes(), k
    # through files, as the device uses it (pack -> unpack -> np.load)
    np.savez(tmp_path / "in.npz", **a)
    pk.main(["pack", str(tmp_path / "in.npz"), str(tmp_path / "x.npzx")])
    pk.main(["unpack", str(tmp_path / "x.npzx"), str(tmp_path / "out.npz")])
    with np.load(tmp_path / "out.npz") as z:
        assert all(z[k].tobytes() == a[k].tobytes() and z[k].dtype == a[k].dtype for k in a)


def test_f32_form_is_close_not_exact_and_keeps_dtypes():
    a = _arrays()
    b = pk.unpack_arrays(pk.pack_arrays(a, f32=True))
    assert all(b[k].dtype == a[k].dtype and b[k].shape == a[k].shape for k in a)
    for k in ("f_a", "s_1", "big"):
        assert np.array_equal(a[k], b[k]), k
    np.testing.assert_allclose(b["v_a"], a["v_a"], rtol=1e-7)
    assert not np.array_equal(b["v_a"], a["v_a"])          # it is lossy, and must not pass for lossless


def test_not_a_pack_is_refused():
    with pytest.raises(ValueError, match="magic"):
        pk.unpack_arrays(b"PK\x03\x04 an ordinary npz")
