"""The coherent order of point batches (``bvh.queries.point_order``)."""

import numpy as np

from bvh.queries.point_order import MIN_SORTED, coherent_order


def test_the_order_is_a_permutation_along_which_neighbours_are_near():
    points = np.random.default_rng(1).uniform(-2.0, 3.0, (5000, 3))
    order = coherent_order(points)
    assert order.dtype == np.int64
    np.testing.assert_array_equal(np.sort(order), np.arange(5000))
    steps = np.linalg.norm(np.diff(points[order], axis=0), axis=1)
    shuffled = np.linalg.norm(np.diff(points, axis=0), axis=1)
    # Along a Z-order curve most steps stay within a cell's neighbours.
    assert np.median(steps) < 0.2 * np.median(shuffled)


def test_the_order_follows_the_z_curve_over_the_box():
    # The eight corners of a cube come in Morton order: x is the lowest bit.
    corners = np.array([[x, y, z] for z in (0.0, 1.0) for y in (0.0, 1.0) for x in (0.0, 1.0)])
    points = np.repeat(corners, MIN_SORTED // 8, axis=0)[::-1]
    order = coherent_order(points)
    np.testing.assert_array_equal(points[order][::MIN_SORTED // 8], corners)


def test_small_batches_and_boxes_too_large_to_divide_keep_the_callers_order():
    few = np.random.default_rng(2).uniform(0.0, 1.0, (MIN_SORTED - 1, 3))
    np.testing.assert_array_equal(coherent_order(few), np.arange(MIN_SORTED - 1))
    huge = np.random.default_rng(3).uniform(-1.0, 1.0, (MIN_SORTED, 3)) * 1.7e308
    np.testing.assert_array_equal(coherent_order(huge), np.arange(MIN_SORTED))


def test_points_on_a_line_come_cell_by_cell_in_the_callers_order_within_a_cell():
    # 256 points: 2^ceil(8 / 3) = 8 cells a side, 32 points in each along x.
    flat = np.zeros((MIN_SORTED, 3))
    flat[:, 0] = np.arange(MIN_SORTED)[::-1]
    order = coherent_order(flat)
    cells = (flat[order, 0] * 7 / 255).astype(int)
    assert np.all(np.diff(cells) >= 0) and cells[0] == 0 and cells[-1] == 7
    within = np.diff(order)[np.diff(cells) == 0]
    assert np.all(within > 0)
