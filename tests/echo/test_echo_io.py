"""Volume and displacement-field I/O: round trips with spacing, real data, bad files."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pytest

from app.io.volume_io import (
    VolumeIOError,
    read_displacement,
    read_volume,
    write_displacement,
    write_volume,
)

DATA = Path(os.environ.get("GPULAB_SHARED_DATA", Path(__file__).resolve().parents[2] / ".." / "shared" / "data"))
ACDC = DATA / "cardiac-mri" / "acdc"


@pytest.fixture
def vol():
    return np.random.default_rng(0).integers(0, 255, size=(5, 6, 7), dtype=np.uint8)


@pytest.mark.parametrize("name", ["v.nii", "v.nii.gz", pytest.param("v.mha", marks=pytest.mark.medical),
                                  pytest.param("v.nrrd", marks=pytest.mark.medical), "v.npz"])
def test_round_trip_keeps_voxels_order_and_spacing(tmp_path, vol, name):
    write_volume(tmp_path / name, vol, spacing=(2.5, 1.0, 0.5))
    r = read_volume(tmp_path / name)
    assert r.data.dtype == vol.dtype
    np.testing.assert_array_equal(r.data, vol)
    assert r.spacing == pytest.approx((2.5, 1.0, 0.5))
    assert [p.name for p in tmp_path.iterdir()] == [name], "no temporary files left behind"


def test_npy_has_unit_spacing(tmp_path, vol):
    write_volume(tmp_path / "v.npy", vol)
    r = read_volume(tmp_path / "v.npy")
    np.testing.assert_array_equal(r.data, vol)
    assert r.spacing == (1.0, 1.0, 1.0)


@pytest.mark.parametrize("name", ["s.nii.gz", pytest.param("s.mha", marks=pytest.mark.medical),
                                  pytest.param("s.nrrd", marks=pytest.mark.medical), "s.npz"])
def test_4d_sequences(tmp_path, name):
    s = np.random.default_rng(1).random((3, 4, 5, 6)).astype(np.float32)
    write_volume(tmp_path / name, s, spacing=(1.5, 1.0, 1.0), time_step=0.05)
    r = read_volume(tmp_path / name)
    assert r.is_sequence and r.frames == 3
    np.testing.assert_allclose(r.data, s)
    assert r.spacing == pytest.approx((1.5, 1.0, 1.0))
    assert r.time_step == pytest.approx(0.05)


def test_nifti_axis_order_is_the_files_own(tmp_path):
    import nibabel as nib

    arr = np.zeros((4, 5, 6), np.int16)      # NIfTI (i, j, k)
    arr[3, 0, 0] = 7                         # i = 3
    nib.save(nib.Nifti1Image(arr, np.diag([0.5, 1.0, 2.0, 1.0])), str(tmp_path / "o.nii"))
    r = read_volume(tmp_path / "o.nii")
    assert r.data.shape == (6, 5, 4) and r.data[0, 0, 3] == 7       # [k, j, i]
    assert r.spacing == pytest.approx((2.0, 1.0, 0.5))


@pytest.fixture
def keep_locale():
    """GDCM's DICOM *writer* sets the process's C locale to "C" (gpulab writes no DICOM): every
    later text file opened without an encoding would be read as ASCII. Put it back."""
    import locale

    saved = locale.setlocale(locale.LC_ALL)
    yield
    locale.setlocale(locale.LC_ALL, saved)


@pytest.mark.medical
def test_dicom_series(tmp_path, keep_locale):
    import SimpleITK as sitk

    v = np.random.default_rng(2).integers(0, 1000, size=(4, 8, 9)).astype(np.int16)
    folder = tmp_path / "dcm"
    folder.mkdir()
    writer = sitk.ImageFileWriter()
    writer.KeepOriginalImageUIDOn()
    series = "1.2.826.0.1.3680043.2.1125.1.123456"
    for z in range(v.shape[0]):
        sl = sitk.GetImageFromArray(v[z])
        sl.SetSpacing((0.7, 0.8))
        for tag, val in [("0020|000e", series), ("0020|0032", f"0\\0\\{3.0 * z}"), ("0020|0013", str(z + 1)),
                         ("0028|0030", "0.8\\0.7"), ("0018|0050", "3.0"), ("0020|0037", "1\\0\\0\\0\\1\\0"),
                         ("0008|0060", "MR")]:
            sl.SetMetaData(tag, val)
        writer.SetFileName(str(folder / f"s{z:03d}.dcm"))
        writer.Execute(sl)
    for target in (folder, folder / "s002.dcm"):
        r = read_volume(target)
        assert r.format == "dicom" and r.data.shape == v.shape
        np.testing.assert_array_equal(r.data, v)
        assert r.spacing == pytest.approx((3.0, 0.8, 0.7))


@pytest.mark.parametrize("name", ["u.npy", "u.npz", "u.nii", "u.nii.gz"])
def test_displacement_round_trip(tmp_path, name):
    u = np.random.default_rng(3).standard_normal((3, 4, 5, 6)).astype(np.float32)
    write_displacement(tmp_path / name, u, spacing=(2.0, 1.0, 0.5))
    np.testing.assert_allclose(read_displacement(tmp_path / name, shape=(4, 5, 6)), u, atol=1e-6)


def test_displacement_nifti_is_a_vector_image_in_mm(tmp_path):
    import nibabel as nib

    u = np.zeros((3, 4, 5, 6), np.float32)
    u[0] = 1.0        # one voxel along z (k), voxel size 2 mm
    write_displacement(tmp_path / "u.nii.gz", u, spacing=(2.0, 1.0, 0.5))
    img = nib.load(str(tmp_path / "u.nii.gz"))
    assert img.shape == (6, 5, 4, 1, 3) and int(img.header["intent_code"]) == 1007
    np.testing.assert_allclose(np.asarray(img.dataobj)[..., 0, 2], 2.0)    # k component, mm
    np.testing.assert_allclose(np.asarray(img.dataobj)[..., 0, :2], 0.0)


def test_real_acdc_volumes():
    if not ACDC.is_dir():
        pytest.skip(f"the ACDC sample is not at {ACDC} (set GPULAB_SHARED_DATA)")
    ed, es = read_volume(ACDC / "sax_ed.nii.gz"), read_volume(ACDC / "sax_es.nii.gz")
    assert ed.data.shape == es.data.shape == (10, 192, 192)
    assert ed.spacing == pytest.approx((10.0, 1.0, 1.0))
    assert ed.data.max() > 100 and not np.array_equal(ed.data, es.data)


def _truncated_nii(tmp_path, vol):
    write_volume(tmp_path / "t.nii", vol)
    b = (tmp_path / "t.nii").read_bytes()
    (tmp_path / "t.nii").write_bytes(b[: len(b) - 50])
    return tmp_path / "t.nii"


def _truncated_gz(tmp_path, vol):
    write_volume(tmp_path / "t.nii.gz", vol)
    raw = gzip.decompress((tmp_path / "t.nii.gz").read_bytes())
    (tmp_path / "t.nii.gz").write_bytes(gzip.compress(raw[:-60]))
    return tmp_path / "t.nii.gz"


def _truncated_npy(tmp_path, vol):
    np.save(tmp_path / "t.npy", vol)
    b = (tmp_path / "t.npy").read_bytes()
    (tmp_path / "t.npy").write_bytes(b[:-10])
    return tmp_path / "t.npy"


def _huge_mha(tmp_path, vol):
    write_volume(tmp_path / "h.mha", vol)
    b = (tmp_path / "h.mha").read_bytes().replace(b"DimSize = 7 6 5", b"DimSize = 70000 60000 50000")
    (tmp_path / "h.mha").write_bytes(b)
    return tmp_path / "h.mha"


def _file(name, data):
    def make(d, v):
        (d / name).write_bytes(data)
        return d / name

    return make


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda d, v: d / "missing.nii", "no such file"),
        (_file("e.nii.gz", b""), "empty"),
        (_file("g.nii", b"garbage" * 100), "NIfTI"),
        (_truncated_nii, "truncated"),
        (_truncated_gz, "truncated"),
        (_truncated_npy, "truncated"),
        pytest.param(_huge_mha, "more than gpulab reads|truncated", marks=pytest.mark.medical),
        (lambda d, v: np.save(d / "two.npy", np.zeros((4, 4))) or d / "two.npy", "3-D volume"),
        (lambda d, v: np.save(d / "nan.npy", np.full((4, 4, 4), np.nan)) or d / "nan.npy", "NaN"),
        (_file("x.tif", b"II*"), "unknown volume format"),
        (_file("z.npz", b"PK\x03\x04garbage"), "npz"),
    ],
)
def test_bad_files_give_one_line(tmp_path, vol, make, match):
    path = make(tmp_path, vol)
    with pytest.raises(VolumeIOError, match=match) as ei:
        read_volume(path)
    assert "\n" not in str(ei.value)


def test_bad_fields(tmp_path):
    np.save(tmp_path / "w.npy", np.zeros((2, 4, 4, 4), np.float32))
    with pytest.raises(VolumeIOError, match=r"\(3, Z, Y, X\)"):
        read_displacement(tmp_path / "w.npy")
    np.save(tmp_path / "s.npy", np.zeros((3, 4, 4, 4), np.float32))
    with pytest.raises(VolumeIOError, match="voxels but the volumes"):
        read_displacement(tmp_path / "s.npy", shape=(4, 4, 5))
    with pytest.raises(VolumeIOError, match=r"\(3, Z, Y, X\)"):
        write_displacement(tmp_path / "o.npy", np.zeros((4, 4, 4)))
    assert not (tmp_path / "o.npy").exists()


def test_writers_refuse_before_writing(tmp_path, vol):
    with pytest.raises(VolumeIOError, match="does not exist"):
        write_volume(tmp_path / "nope" / "v.nii", vol)
    with pytest.raises(VolumeIOError, match="unsupported output"):
        write_volume(tmp_path / "v.tif", vol)
    with pytest.raises(VolumeIOError, match="3-D or 4-D"):
        write_volume(tmp_path / "v.nii", np.zeros((4, 4)))
    assert list(tmp_path.iterdir()) == []
