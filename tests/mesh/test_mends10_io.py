"""Review B #9 (session 10): an OFF vertex line with more numbers than the others (two vertices on one line, a
plain OFF header) is reported as such, not as a truncated file, by NumPy's passes and the compiled ones."""

from __future__ import annotations

import pytest

from app.io import mesh_formats as mf
from gpu_kernels.errors import InputError

WRAPPED = "OFF\n4 2 0\n0 0 0 1 0 0\n0 1 0\n1 1 0\n3 0 1 2\n3 0 2 3\n"   # vertices 1 and 2 on one line


@pytest.fixture(params=["numpy", "compiled"])
def passes(request, monkeypatch):
    if request.param == "numpy":
        monkeypatch.setattr(mf, "COMPILED_TEXT", False)
        assert mf._compiled() is None
    else:
        pytest.importorskip("numba")
        from app.io import _text_numba as tn
        tn.warm_up()
        assert mf._compiled() is tn
    return request.param


def _error(tmp_path, text):
    p = tmp_path / "bad.off"
    p.write_text(text)
    with pytest.raises(InputError) as e:
        mf.read_off(p)
    return str(e.value)


def test_a_vertex_line_with_extra_numbers(tmp_path, passes):
    assert _error(tmp_path, WRAPPED) == "bad.off: not a readable OFF mesh (vertex 1 has 6 numbers, 3 expected)"
    assert "(vertex 2 has 6 numbers, 3 expected)" in _error(tmp_path, "OFF\n4 1 0\n0 0 0\n0 1 0 1 1 0\n2 0 0\n3 0 1 2\n")


@pytest.mark.parametrize("text", [
    "COFF\n4 2 0\n0 0 0 1 0 0\n0 1 0\n1 1 0\n3 0 1 2\n3 0 2 3\n",      # the header declares extras
    "OFF\n3 2 0\n0 0 0 9 9 9\n1 0 0 9 9 9\n0 1 0 9 9 9\n3 0 1 2\n",    # an extra on every line: truncated
])
def test_a_truncated_file_stays_truncated(tmp_path, passes, text):
    assert _error(tmp_path, text).endswith("faces; it is truncated")


def test_a_complete_file_with_extras_reads(tmp_path, passes):
    p = tmp_path / "ok.off"
    p.write_text("OFF\n3 1 0\n0 0 0 9 9 9\n1 0 0 9 9 9\n0 1 0 9 9 9\n3 0 1 2\n")
    m = mf.read_off(p)
    assert m.vertices.shape == (3, 3) and m.faces.tolist() == [[0, 1, 2]]
