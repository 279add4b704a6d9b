"""Connected components: the CPU path against scikit-image, the union-find and label
equivalence CUDA kernels (through the host emulator) against scipy.ndimage.label on random
and adversarial masks, and the union-find's seam schedule."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_emu import available, emu_backend
from imseg_masks import adversarial, random_mask, random_values
from scipy import ndimage as ndi
from skimage.measure import label as sk_label

from gpu_kernels.imseg import ImsegInputError, label_components
from gpu_kernels.imseg.label import TILE, seam_schedule

needs_emu = pytest.mark.skipif(bool(available()), reason=f"CUDA emulator unavailable: {available()}")
STRUCT = {4: ndi.generate_binary_structure(2, 1), 8: ndi.generate_binary_structure(2, 2)}


def same_partition(a, b) -> bool:
    """Equal up to renumbering (a bijection between the label sets)."""
    a, b = np.asarray(a).ravel(), np.asarray(b).ravel()
    pairs = np.unique(np.stack([a, b]), axis=1)
    return len(np.unique(pairs[0])) == pairs.shape[1] == len(np.unique(pairs[1]))


def raster_numbered(labels) -> bool:
    """Labels 1..n, first pixels in increasing raster order."""
    flat = labels.ravel()
    vals, first = np.unique(flat[flat > 0], return_index=True)
    return vals.tolist() == list(range(1, len(vals) + 1)) and np.all(np.diff(np.flatnonzero(flat > 0)[first]) > 0)


@pytest.mark.parametrize("conn", [4, 8])
def test_cpu_multivalue_matches_skimage(conn):
    rng = np.random.default_rng(conn)
    img = random_values(rng, 47, 61, k=3)
    labels, n = label_components(img, connectivity=conn, device="cpu")
    ref = sk_label(img + 1, background=0, connectivity=1 if conn == 4 else 2)
    assert n == ref.max()
    np.testing.assert_array_equal(labels, ref)  # same raster numbering, not only the same partition


@pytest.mark.parametrize("conn", [4, 8])
def test_cpu_binary_matches_scipy_exactly(conn):
    rng = np.random.default_rng(10 + conn)
    m = random_mask(rng, 50, 70, 0.55)
    labels, n = label_components(m, connectivity=conn, background=0, device="cpu")
    ref, nr = ndi.label(m, structure=STRUCT[conn])
    assert n == nr
    np.testing.assert_array_equal(labels, ref)


@pytest.mark.parametrize("extent", [1, 2, 31, 32, 33, 64, 65, 100, 1000, 4097])
@pytest.mark.parametrize("global_step", ["levels", "single"])
def test_seam_schedule_covers_every_seam_once(extent, global_step):
    # the local step handles seams inside a tile (x + 1 not a multiple of TILE)
    seen = [x for x in range(extent - 1) if (x + 1) % TILE != 0]
    for first, step, ns in seam_schedule(extent, TILE, global_step):
        xs = [first + s * step for s in range(ns)]
        assert all(x <= extent - 2 for x in xs)
        seen += xs
    assert sorted(seen) == list(range(extent - 1))


def test_seam_schedule_levels_double():
    sched = seam_schedule(3840, TILE, "levels")
    assert [s[1] for s in sched] == [64, 128, 256, 512, 1024, 2048, 4096]
    assert [s[0] for s in sched] == [31, 63, 127, 255, 511, 1023, 2047]


def test_bad_connectivity_and_method():
    with pytest.raises(ImsegInputError, match="connectivity"):
        label_components(np.zeros((3, 3), np.uint8), connectivity=6, device="cpu")
    with pytest.raises(ImsegInputError, match="GPU"):
        label_components(np.zeros((3, 3), np.uint8), method="unionfind", device="cpu")
    with pytest.raises(ImsegInputError, match="2-D"):
        label_components(np.zeros((0, 3), np.uint8), device="cpu")


# --------------------------------------------------------------------------- CUDA kernels
@needs_emu
@pytest.mark.parametrize("method,global_step,n", [
    ("unionfind", "single", 40), ("unionfind", "levels", 40), ("equivalence", "levels", 40),
    pytest.param("unionfind", "levels", 70, marks=pytest.mark.slow),  # two levels of the global step
    pytest.param("unionfind", "single", 70, marks=pytest.mark.slow),
])
def test_cuda_labelling_matches_scipy_on_adversarial_masks(method, global_step, n):
    be = emu_backend()
    masks = adversarial(n)
    masks["random"] = random_mask(np.random.default_rng(0), n - 3, n + 5, 0.5)
    for name, m in masks.items():
        for conn in (4, 8):
            labels, n = label_components(m, connectivity=conn, background=0, method=method,
                                         global_step=global_step, device=be)
            ref, nr = ndi.label(m > 0 if name != "double_comb" else m == 1, structure=STRUCT[conn]) \
                if name != "double_comb" else (None, None)
            if name == "double_comb":
                cpu, nr = label_components(m, connectivity=conn, background=0, device="cpu")
                np.testing.assert_array_equal(labels, cpu, err_msg=f"{name} conn {conn}")
                continue
            assert n == nr, f"{name} conn {conn}: {n} components, scipy {nr}"
            assert same_partition(labels, ref), f"{name} conn {conn}"
            np.testing.assert_array_equal(labels, ref, err_msg=f"{name} conn {conn}: numbering")


@needs_emu
def test_cuda_unionfind_multivalue_and_raster_numbering():
    be = emu_backend()
    rng = np.random.default_rng(1)
    img = random_values(rng, 70, 66, k=3)
    for conn in (4, 8):
        labels, n = label_components(img, connectivity=conn, method="unionfind", device=be)
        cpu, nc = label_components(img, connectivity=conn, device="cpu")
        assert n == nc
        np.testing.assert_array_equal(labels, cpu)
        assert raster_numbered(labels)
    # one-row and one-column images, a constant image
    for shape in ((1, 77), (77, 1)):
        row = random_values(rng, *shape, k=2)
        a, na = label_components(row, connectivity=4, method="unionfind", device=be)
        b, nb = label_components(row, connectivity=4, device="cpu")
        assert na == nb and np.array_equal(a, b)
    a, na = label_components(np.full((40, 35), 7, np.int32), device=be, method="unionfind")
    assert na == 1 and np.all(a == 1)
