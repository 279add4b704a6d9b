"""Stable part colours (app.tools.mesh_colors, Qt-free): a part keeps its colour across results."""

import numpy as np

from app.tools.mesh_colors import stable_colors
from gpu_kernels.mesh.colors import palette


def test_renumbered_parts_keep_their_colours_and_new_parts_get_unused_ones():
    rng = np.random.default_rng(0)
    old = rng.integers(0, 5, 2000)
    old_colors = palette(5)
    perm = np.array([3, 0, 4, 1, 2])
    new = perm[old]
    new[old == 2] = np.where(rng.random((old == 2).sum()) < 0.7, perm[2], 5)   # part 2 split 70/30
    cols = stable_colors(new, [(old, old_colors)])
    assert cols.shape == (6, 3) and cols.dtype == np.uint8
    for j in range(5):
        assert tuple(cols[perm[j]]) == tuple(old_colors[j])          # the larger half keeps the colour
    assert tuple(cols[5]) not in {tuple(c) for c in old_colors}     # the new piece: an unused colour
    # without the reference: the kernels' colours
    np.testing.assert_array_equal(stable_colors(new, []), palette(6))


def test_a_part_that_only_touches_an_old_one_does_not_take_its_colour_and_weights_count():
    old = np.array([0] * 10 + [1] * 10)
    new = np.array([0] * 18 + [1] * 2)      # part 1 overlaps old part 1 by 2 faces of 10: IoU 0.2
    cols = stable_colors(new, [(old, palette(2))], min_iou=0.25)
    assert tuple(cols[0]) == tuple(palette(2)[0]) and tuple(cols[1]) not in {tuple(c) for c in palette(2)}
    # measured in area: the two faces carry almost all of it
    w = np.ones(20)
    w[18:] = 100.0
    cols = stable_colors(new, [(old, palette(2))], w, min_iou=0.25)
    assert tuple(cols[1]) == tuple(palette(2)[1])


def test_the_first_reference_wins_and_the_second_fills_in():
    pinned = np.array([0, 0, 1, 1, 2, 2])
    pinned_colors = np.array([[1, 1, 1], [2, 2, 2], [3, 3, 3]], np.uint8)
    previous = np.array([0, 0, 0, 0, 1, 1])
    previous_colors = np.array([[9, 9, 9], [3, 3, 3]], np.uint8)
    new = np.array([1, 1, 1, 1, 0, 0])
    cols = stable_colors(new, [(pinned, pinned_colors), (previous, previous_colors)])
    assert cols.tolist() == [[3, 3, 3], [1, 1, 1]]      # the pinned result's colours first
    # a reference over other faces is skipped
    assert stable_colors(new, [(np.zeros(3, int), pinned_colors)]).tolist() == palette(2).tolist()


def test_the_module_example_runs():
    import doctest

    import app.tools.mesh_colors as m

    assert doctest.testmod(m).failed == 0
