"""bvh.builders.placement: world boxes of placed objects, the same to the last bit as transforming corners."""

import numpy as np
import pytest

from bvh.builders.placement import transformed_boxes


def corner_boxes(matrices, boxes, which):
    """The reference: each box's eight corners transformed (``x * m0 + y * m1 + z * m2`` summed in
    that order, plus the translation), their extremes over every box of the object."""
    out = np.empty((matrices.shape[0], 2, 3))
    for k, matrix in enumerate(matrices):
        corners = []
        for box in boxes[which[k]]:
            for code in range(8):
                x, y, z = (box[3 + axis] if (code >> axis) & 1 else box[axis] for axis in range(3))
                corners.append([((matrix[j, 0] * x + matrix[j, 1] * y) + matrix[j, 2] * z) + matrix[j, 3]
                                for j in range(3)])
        corners = np.array(corners)
        out[k] = corners.min(axis=0), corners.max(axis=0)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_boxes_are_the_extremes_of_the_transformed_corners(seed):
    rng = np.random.default_rng(seed)
    owners, per_owner, count = 3, 5, 40
    lo = rng.normal(size=(owners, per_owner, 3)) * 10.0 ** rng.integers(-3, 4, size=(owners, per_owner, 1))
    boxes = np.concatenate([lo, lo + rng.random((owners, per_owner, 3))], axis=2)
    boxes[0, 0] = [0.0, -0.0, 0.0, 0.0, 0.0, 1.0]
    matrices = np.tile(np.eye(4), (count, 1, 1))
    matrices[:, :3, :] = rng.normal(size=(count, 3, 4)) * 10.0 ** rng.integers(-2, 3, size=(count, 1, 1))
    # Axis-aligned ones, mirrored ones and zeros in the matrix: the cases of exact answers.
    matrices[0, :3, :3] = np.diag([2.0, -1.0, 0.5])
    matrices[1, :3, :3] = [[0, 0, -1.0], [1.0, 0, 0], [0, 3.0, 0]]
    which = rng.integers(0, owners, count)
    np.testing.assert_array_equal(transformed_boxes(matrices, boxes, which), corner_boxes(matrices, boxes, which))
    own = boxes[which]
    np.testing.assert_array_equal(transformed_boxes(matrices, own), corner_boxes(matrices, own, np.arange(count)))


def test_no_objects_give_no_boxes():
    assert transformed_boxes(np.zeros((0, 4, 4)), np.zeros((2, 1, 6)), np.zeros(0, np.int64)).shape == (0, 2, 3)
