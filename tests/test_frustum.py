"""Tests of ``bvh.queries.frustum``: boxes, triangles and object-space planes.

Triangles *within* a region are checked against per-vertex plane tests in
float64, leaving out those with a vertex within ``MARGIN`` of a plane.

The triangle test is checked against an independent reference: a triangle
meets a convex region exactly when the polygon they share has a vertex, and
each vertex of that polygon is a triangle vertex, a point where a triangle
edge crosses a plane, or a point of the triangle's plane on two planes.
The reference enumerates those candidates in numpy. Near-touching cases, whose
answer rounding may decide, are recognised by asking the reference about the
region grown and shrunk by ``MARGIN``, and are left out of the comparison.
"""

import numpy as np
import pytest

from bvh.queries import frustum as F
from bvh.camera import Camera

MARGIN = 1e-6
TOLERANCE = 1e-9

UNIT_CUBE = np.array([
    [1.0, 0.0, 0.0, 0.0],
    [-1.0, 0.0, 0.0, 1.0],
    [0.0, 1.0, 0.0, 0.0],
    [0.0, -1.0, 0.0, 1.0],
    [0.0, 0.0, 1.0, 0.0],
    [0.0, 0.0, -1.0, 1.0],
])


# ---------------------------------------------------------------- reference


def reference_meets(triangles, planes, shift=0.0):
    """Whether each triangle ``(F, 3, 3)`` meets the region ``planes (P, 4)``
    (unit normals) moved outward by ``shift``; see the module notes."""
    planes = np.array(planes, float)
    planes[:, 3] += shift
    normals, offsets = planes[:, :3], planes[:, 3]
    a, b, c = triangles[:, 0], triangles[:, 1], triangles[:, 2]
    m = np.cross(b - a, c - a)
    mm = (m * m).sum(axis=1)
    assert (mm > 0).all(), "the reference wants non-degenerate triangles"

    def in_region(x):
        return (x @ normals.T + offsets >= -TOLERANCE).all(axis=1)

    def in_triangle(x):
        la = (np.cross(b - x, c - x) * m).sum(axis=1) / mm
        lb = (np.cross(c - x, a - x) * m).sum(axis=1) / mm
        return (la >= -TOLERANCE) & (lb >= -TOLERANCE) & (1.0 - la - lb >= -TOLERANCE)

    meets = in_region(a) | in_region(b) | in_region(c)
    with np.errstate(divide="ignore", invalid="ignore"):
        for p, q in ((a, b), (b, c), (c, a)):
            for n, d in zip(normals, offsets):
                dp = p @ n + d
                dq = q @ n + d
                s = dp / (dp - dq)
                ok = (dp - dq != 0) & (s >= 0) & (s <= 1)
                x = p + np.where(ok, s, 0.0)[:, None] * (q - p)
                meets |= ok & in_region(x)
        for i in range(len(planes)):
            for j in range(i + 1, len(planes)):
                system = np.stack([np.broadcast_to(normals[i], m.shape), np.broadcast_to(normals[j], m.shape), m],
                                  axis=1)
                solvable = np.abs(np.linalg.det(system)) > 1e-9 * np.sqrt(mm)
                system[~solvable] = np.eye(3)
                rhs = np.stack([np.full(len(m), -offsets[i]), np.full(len(m), -offsets[j]), (m * a).sum(axis=1)],
                               axis=1)
                x = np.linalg.solve(system, rhs[:, :, None])[:, :, 0]
                meets |= solvable & in_region(x) & in_triangle(x)
    return meets


def compare_with_reference(triangles, planes):
    """Kernel answers against the reference; returns (decided, kernel answers, truth)."""
    vertices = triangles.reshape(-1, 3)
    faces = np.arange(len(vertices)).reshape(-1, 3)
    got = F.triangles_in_frustum(vertices, faces, planes)
    unit = F.check_planes(planes)
    surely_in = reference_meets(triangles, unit, -MARGIN)
    maybe_in = reference_meets(triangles, unit, MARGIN)
    decided = surely_in | ~maybe_in
    assert (got[decided] == surely_in[decided]).all(), np.flatnonzero(decided & (got != surely_in))[:10]
    # A kernel answer never contradicts the region grown or shrunk by MARGIN.
    assert (got <= maybe_in).all() and (got >= surely_in).all()
    return decided, got, surely_in


def random_triangles(rng, n, centre, spread, sizes):
    centres = centre + rng.uniform(-spread, spread, (n, 1, 3))
    size = np.exp(rng.uniform(np.log(sizes[0]), np.log(sizes[1]), (n, 1, 1)))
    return centres + size * rng.normal(size=(n, 3, 3))


def random_region(rng):
    count = int(rng.integers(1, 9))
    normals = rng.normal(size=(count, 3))
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    # Origin inside by 0.3 to 1.5; normals of any length, to exercise the
    # wrappers' normalisation.
    return np.concatenate([normals, rng.uniform(0.3, 1.5, (count, 1))], axis=1) * rng.uniform(0.1, 10.0, (count, 1))


def random_camera_frustum(rng):
    direction = rng.normal(size=3)
    position = 5.0 * direction / np.linalg.norm(direction)
    far = None if rng.random() < 0.5 else float(rng.uniform(4.0, 9.0))
    camera = Camera.pinhole(position, rng.normal(size=3) * 0.3, rng.normal(size=3), rng.uniform(20, 100), 200, 150,
                            near=float(rng.uniform(0.05, 2.0)), far=far)
    corners = rng.uniform([-20, -20], [220, 170], (2, 2))
    return camera.frustum(corners.ravel())


def undecided_by_trivial_tests(triangles, planes):
    """Triangles neither inside every plane nor outside one: the clipped ones."""
    unit = F.check_planes(planes)
    values = triangles @ unit[:, :3].T + unit[:, 3]  # (F, 3 vertices, P)
    all_in = (values >= 0).all(axis=(1, 2))
    one_out = (values < 0).all(axis=1).any(axis=1)
    return ~all_in & ~one_out


# ---------------------------------------------------------------- triangles


def test_reference_knows_the_hand_cases():
    cases = triangle_cases()
    truth = reference_meets(np.array([c[0] for c in cases]), UNIT_CUBE)
    assert truth.tolist() == [c[1] for c in cases]


def triangle_cases():
    """(triangle, meets the unit cube) pairs, each name says why."""
    return [
        # inside: all three vertices in every half-space
        (np.array([[0.2, 0.2, 0.5], [0.8, 0.2, 0.5], [0.2, 0.8, 0.5]]), True),
        # outside one plane entirely
        (np.array([[2.2, 0.2, 0.5], [2.8, 0.2, 0.5], [2.2, 0.8, 0.5]]), False),
        # one vertex inside, two outside: crossing a face
        (np.array([[0.5, 0.5, 0.5], [3.0, 0.5, 0.5], [0.5, 0.5, 3.0]]), True),
        # every vertex outside a different plane, the triangle through the cube
        (np.array([[-5.0, -5.0, 0.5], [10.0, -5.0, 0.5], [-5.0, 10.0, 0.5]]), True),
        # every vertex outside a plane, none outside all: crossing an edge
        (np.array([[1.5, 0.5, -0.5], [0.5, 0.5, 1.5], [1.5, 0.5, 1.5]]), True),
        # vertices outside different planes, no plane holding all three, and
        # the triangle passes beside the cube's (1, 1) edge: what the trivial
        # tests cannot decide
        (np.array([[1.5, 0.9, 0.5], [0.9, 1.5, 0.5], [2.0, 2.0, 0.5]]), False),
        # the same around a corner of the cube in 3D
        (np.array([[1.6, 0.8, 0.8], [0.8, 1.6, 0.8], [0.8, 0.8, 1.6]]), False),
        # and cutting that corner off: the middle of the triangle is inside
        (np.array([[1.2, 0.9, 0.9], [0.9, 1.2, 0.9], [0.9, 0.9, 1.2]]), True),
        # touching a face at a vertex: points on a plane are inside
        (np.array([[1.0, 0.5, 0.5], [2.0, 0.5, 0.5], [2.0, 0.6, 0.5]]), True),
        # lying in a face of the cube
        (np.array([[1.0, -0.5, -0.5], [1.0, 0.5, -0.5], [1.0, 0.5, 0.5]]), True),
        # just beyond that face
        (np.array([[1.001, -0.5, -0.5], [1.001, 0.5, -0.5], [1.001, 0.5, 0.5]]), False),
        # touching a corner of the cube with a vertex
        (np.array([[1.0, 1.0, 1.0], [2.0, 1.0, 1.0], [1.0, 2.0, 3.0]]), True),
    ]


def test_hand_cases():
    cases = triangle_cases()
    vertices = np.concatenate([c[0] for c in cases])
    faces = np.arange(len(vertices)).reshape(-1, 3)
    got = F.triangles_in_frustum(vertices, faces, UNIT_CUBE)
    assert got.tolist() == [c[1] for c in cases]
    # The trivial tests decide neither of the beside-the-edge, beside-the-corner
    # and corner-cutting cases: clipping does.
    undecided = undecided_by_trivial_tests(np.array([c[0] for c in cases]), UNIT_CUBE)
    assert undecided[[3, 5, 6, 7]].all()


def test_degenerate_triangles_are_tested_as_what_they_are():
    vertices = np.array([[0.5, 0.5, 0.5], [2.0, 0.5, 0.5], [-1.0, 0.5, 0.5], [3.0, 3.0, 3.0]])
    faces = np.array([[0, 0, 0], [3, 3, 3], [1, 2, 1], [1, 3, 3]])
    # a point inside, a point outside, a segment across, a segment beside
    assert F.triangles_in_frustum(vertices, faces, UNIT_CUBE).tolist() == [True, False, True, False]


@pytest.mark.parametrize("seed", range(8))
def test_random_regions_against_reference(seed):
    rng = np.random.default_rng(seed)
    planes = random_region(rng)
    triangles = random_triangles(rng, 1500, 0.0, 2.5, (0.05, 6.0))
    decided, got, truth = compare_with_reference(triangles, planes)
    assert decided.mean() > 0.99
    clipped = undecided_by_trivial_tests(triangles, planes)
    # The random set exercises the clipping with both outcomes.
    assert (clipped & truth).sum() > 20
    assert len(planes) < 3 or (clipped & ~truth).sum() > 0


@pytest.mark.parametrize("seed", range(8))
def test_random_camera_frusta_against_reference(seed):
    rng = np.random.default_rng(100 + seed)
    planes = random_camera_frustum(rng)
    triangles = random_triangles(rng, 1500, 0.0, 4.0, (0.02, 5.0))
    decided, got, truth = compare_with_reference(triangles, planes)
    assert decided.mean() > 0.99
    assert 0 < truth.sum() < len(truth)


def test_corner_crossers_of_a_narrow_frustum():
    # Triangles whose vertices all fall outside different side planes of a
    # thin frustum: most of the region's triangles are decided by clipping.
    camera = Camera.pinhole([0, 0, 10], [0, 0, 0], [0, 1, 0], 40, 400, 400, near=1.0, far=20.0)
    planes = camera.frustum([195, 195, 205, 205])
    rng = np.random.default_rng(7)
    triangles = random_triangles(rng, 3000, 0.0, 0.6, (0.2, 1.0))
    decided, got, truth = compare_with_reference(triangles, planes)
    clipped = undecided_by_trivial_tests(triangles, planes)
    assert (clipped & truth).sum() > 50 and (clipped & ~truth).sum() > 50
    assert decided.mean() > 0.99


@pytest.mark.parametrize("test, region, seed, reach, sizes", [
    ("triangles_in_frustum", random_camera_frustum, 3, 4.0, (0.02, 5.0)),
    ("triangles_within_frustum", random_region, 5, 0.6, (0.02, 0.5)),
], ids=["meets", "within"])
def test_serial_and_parallel_kernels_agree(test, region, seed, reach, sizes):
    rng = np.random.default_rng(seed)
    planes = F.check_planes(region(rng))
    triangles = random_triangles(rng, 5 * F.BLOCK + 17, 0.0, reach, sizes)
    vertices = triangles.reshape(-1, 3)
    faces = np.arange(len(vertices)).reshape(-1, 3)
    serial = np.empty(len(faces), bool)
    parallel = np.empty(len(faces), bool)
    getattr(F, f"{test}_serial")(vertices, faces, planes, serial)
    getattr(F, f"{test}_parallel")(vertices, faces, planes, parallel)
    assert (serial == parallel).all()
    assert (getattr(F, test)(vertices, faces, planes) == serial).all()
    assert 0 < serial.sum() < len(serial)


def test_any_triangle():
    rng = np.random.default_rng(4)
    planes = random_camera_frustum(rng)
    triangles = random_triangles(rng, 3 * F.BLOCK, 0.0, 4.0, (0.02, 1.0))
    vertices = triangles.reshape(-1, 3)
    faces = np.arange(len(vertices)).reshape(-1, 3)
    inside = F.triangles_in_frustum(vertices, faces, planes)
    assert inside.any() and not inside.all()
    assert F.any_triangle_in_frustum(vertices, faces, planes)
    outside = faces[~inside]
    assert len(outside) > F.BLOCK  # the parallel path
    assert not F.any_triangle_in_frustum(vertices, outside, planes)
    only_last = np.concatenate([outside, faces[inside][:1]])
    assert F.any_triangle_in_frustum(vertices, only_last, planes)
    assert F.any_triangle_in_frustum(vertices, only_last[-10:], planes)
    assert not F.any_triangle_in_frustum(vertices, outside[:10], planes)
    assert not F.any_triangle_in_frustum(vertices, np.empty((0, 3), int), planes)


def test_planes_at_any_scale_and_empty_inputs():
    cases = triangle_cases()
    vertices = np.concatenate([c[0] for c in cases])
    faces = np.arange(len(vertices)).reshape(-1, 3)
    scaled = UNIT_CUBE * np.array([[1e-3], [7.0], [1e3], [0.5], [2.0], [1e-6]])
    assert (F.triangles_in_frustum(vertices, faces, scaled) == F.triangles_in_frustum(vertices, faces, UNIT_CUBE)).all()
    # no planes: all of space
    assert F.triangles_in_frustum(vertices, faces, np.empty((0, 4))).all()
    assert F.triangles_in_frustum(vertices, np.empty((0, 3), int), UNIT_CUBE).shape == (0,)
    # one (4,) plane, and faces of any integer type
    assert F.triangles_in_frustum(vertices, faces.astype(np.int32), [1.0, 0, 0, -1.5]).tolist() == [
        False, True, True, True, True, True, True, False, True, False, False, True]


# --------------------------------------------------------- triangles within


def reference_vertex_values(triangles, planes):
    """Signed distances ``(F, 3, P)`` of each triangle vertex to each plane, in
    float64 by elementwise products (no matrix product, whose rounding
    depends on the CPU's BLAS kernel)."""
    unit = F.check_planes(planes)
    return (triangles[:, :, None, :] * unit[None, None, :, :3]).sum(axis=3) + unit[:, 3]


def compare_within_with_reference(triangles, planes):
    """``triangles_within_frustum`` against per-vertex plane tests; returns
    (decided, kernel answers, truth). A triangle with a vertex within
    ``MARGIN`` of a plane, whose answer rounding may decide, is left out."""
    vertices = triangles.reshape(-1, 3)
    faces = np.arange(len(vertices)).reshape(-1, 3)
    got = F.triangles_within_frustum(vertices, faces, planes)
    values = reference_vertex_values(triangles, planes)
    surely_within = (values >= MARGIN).all(axis=(1, 2))
    surely_not = (values < -MARGIN).any(axis=(1, 2))
    decided = surely_within | surely_not
    assert (got[surely_within]).all() and not got[surely_not].any()
    return decided, got, surely_within


def test_within_hand_cases():
    cases = triangle_cases()
    vertices = np.concatenate([c[0] for c in cases])
    faces = np.arange(len(vertices)).reshape(-1, 3)
    # Only the first lies entirely inside; the cube's faces are exact planes,
    # so a triangle lying in one (the tenth) has every vertex on them, inside,
    # but two of its vertices are beyond another face.
    assert F.triangles_within_frustum(vertices, faces, UNIT_CUBE).tolist() == [True] + [False] * 11
    on_faces = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 1.0]])
    # Vertices on the region's boundary are inside: a triangle in a face, and one across the cube.
    assert F.triangles_within_frustum(on_faces, [[0, 1, 2], [0, 2, 3]], UNIT_CUBE).tolist() == [True, True]
    # A point inside, a point outside, a segment from inside to outside.
    points = np.array([[0.5, 0.5, 0.5], [2.0, 0.5, 0.5]])
    assert F.triangles_within_frustum(points, [[0, 0, 0], [1, 1, 1], [0, 1, 0]], UNIT_CUBE).tolist() == [
        True, False, False]


def test_within_is_meeting_with_every_vertex_inside():
    """A triangle through the whole cube meets it without being within it."""
    vertices = np.array([[-5.0, -5.0, 0.5], [10.0, -5.0, 0.5], [-5.0, 10.0, 0.5]])
    faces = [[0, 1, 2]]
    assert F.triangles_in_frustum(vertices, faces, UNIT_CUBE).tolist() == [True]
    assert F.triangles_within_frustum(vertices, faces, UNIT_CUBE).tolist() == [False]


@pytest.mark.parametrize("seed", range(4))
def test_within_random_regions_against_reference(seed):
    rng = np.random.default_rng(200 + seed)
    planes = random_region(rng)
    triangles = random_triangles(rng, 1500, 0.0, 1.0, (0.02, 1.0))
    decided, got, truth = compare_within_with_reference(triangles, planes)
    assert decided.mean() > 0.99
    assert 20 < truth.sum() < len(truth) - 20
    # Within implies meeting.
    vertices = triangles.reshape(-1, 3)
    faces = np.arange(len(vertices)).reshape(-1, 3)
    assert not (got & ~F.triangles_in_frustum(vertices, faces, planes)).any()


@pytest.mark.parametrize("seed", range(4))
def test_within_random_camera_frusta_against_reference(seed):
    rng = np.random.default_rng(300 + seed)
    planes = random_camera_frustum(rng)
    # Triangles about points inside the frustum, at sizes that leave some within it and some across it.
    points = rng.uniform(-6.0, 6.0, (200000, 3))
    inside = points[(reference_vertex_values(points[:, None, :], planes) >= 0).all(axis=(1, 2))]
    assert len(inside) >= 20
    centres = inside[rng.integers(len(inside), size=1500), None, :]
    sizes = np.exp(rng.uniform(np.log(0.002), np.log(1.0), (len(centres), 1, 1)))
    triangles = centres + sizes * rng.normal(size=(len(centres), 3, 3))
    decided, got, truth = compare_within_with_reference(triangles, planes)
    assert decided.mean() > 0.99
    assert 0 < truth.sum() < len(truth)


def test_all_triangles_within():
    rng = np.random.default_rng(6)
    planes = random_region(rng)
    triangles = random_triangles(rng, 4 * F.BLOCK, 0.0, 0.6, (0.01, 0.3))
    vertices = triangles.reshape(-1, 3)
    faces = np.arange(len(vertices)).reshape(-1, 3)
    within = F.triangles_within_frustum(vertices, faces, planes)
    inside = faces[within]
    assert len(inside) > F.BLOCK and (~within).any()  # the parallel path, and some outside
    assert F.all_triangles_within_frustum(vertices, inside, planes)
    assert F.all_triangles_within_frustum(vertices, inside[:10], planes)
    assert not F.all_triangles_within_frustum(vertices, faces, planes)
    # One face outside, the last of many, in either path.
    only_last_out = np.concatenate([inside, faces[~within][:1]])
    assert not F.all_triangles_within_frustum(vertices, only_last_out, planes)
    assert not F.all_triangles_within_frustum(vertices, only_last_out[-10:], planes)
    # Vertices that no face uses do not count; no faces: nothing lies outside.
    far_away = np.concatenate([vertices, [[1e6, 1e6, 1e6]]])
    assert F.all_triangles_within_frustum(far_away, inside, planes)
    assert F.all_triangles_within_frustum(vertices, np.empty((0, 3), int), planes)
    assert F.triangles_within_frustum(vertices, np.empty((0, 3), int), planes).shape == (0,)


def test_within_planes_at_any_scale_and_refusals():
    vertices = np.array([[0.2, 0.2, 0.5], [0.8, 0.2, 0.5], [0.2, 0.8, 0.5], [1.5, 0.5, 0.5]])
    faces = np.array([[0, 1, 2], [0, 1, 3]], np.int32)
    scaled = UNIT_CUBE * np.array([[1e-3], [7.0], [1e3], [0.5], [2.0], [1e-6]])
    assert F.triangles_within_frustum(vertices, faces, scaled).tolist() == [True, False]
    assert F.triangles_within_frustum(vertices, faces, np.empty((0, 4))).tolist() == [True, True]
    assert F.triangles_within_frustum(vertices, faces, [-1.0, 0, 0, 1.0]).tolist() == [True, False]
    # The same validation as the meeting test.
    with pytest.raises(ValueError, match="faces refer to vertex 4 but there are only 4 vertices"):
        F.triangles_within_frustum(vertices, [[0, 1, 4]], UNIT_CUBE)
    with pytest.raises(ValueError, match="faces hold a negative vertex index -2"):
        F.all_triangles_within_frustum(vertices, [[0, 1, -2]], UNIT_CUBE)
    with pytest.raises(ValueError, match=r"planes must have non-zero normals \(nx, ny, nz\): row 0"):
        F.all_triangles_within_frustum(vertices, faces, [0.0, 0.0, 0.0, 1.0])


# -------------------------------------------------------------------- boxes


def reference_box_classes(bounds, planes):
    corners = np.stack([np.stack(np.meshgrid(*box.T, indexing="ij"), -1).reshape(8, 3) for box in bounds])
    values = corners @ planes[:, :3].T + planes[:, 3]  # (N, 8, P)
    outside = (values < 0).all(axis=1).any(axis=1)
    inside = (values >= 0).all(axis=(1, 2))
    return np.where(outside, F.OUTSIDE, np.where(inside, F.INSIDE, F.CROSSING))


@pytest.mark.parametrize("seed", range(4))
def test_boxes_against_corner_reference(seed):
    rng = np.random.default_rng(20 + seed)
    planes = random_camera_frustum(rng) if seed % 2 else random_region(rng)
    centres = rng.uniform(-4, 4, (3000, 3))
    half = np.exp(rng.uniform(np.log(0.01), np.log(3.0), (3000, 3)))
    bounds = np.stack([centres - half, centres + half], axis=1)
    got = F.boxes_in_frustum(bounds, planes)
    assert got.dtype == np.int8
    unit = F.check_planes(planes)
    # Boxes with a corner within MARGIN of a plane are classed by rounding
    # (the kernel's and the reference's matrix product's): left out.
    corners = np.stack([np.stack(np.meshgrid(*box.T, indexing="ij"), -1).reshape(8, 3) for box in bounds])
    clear = (np.abs(corners @ unit[:, :3].T + unit[:, 3]) > MARGIN).all(axis=(1, 2))
    assert clear.mean() > 0.99
    assert (got[clear] == reference_box_classes(bounds[clear], unit)).all()
    assert set(np.unique(got).tolist()) == {0, 1, 2}
    serial = np.empty(len(bounds), np.int8)
    F.boxes_in_frustum_serial(bounds, F.check_planes(planes), serial)
    assert (serial == got).all()


def test_box_classes_agree_with_the_triangles_inside_them():
    rng = np.random.default_rng(30)
    planes = random_camera_frustum(rng)
    centres = rng.uniform(-3, 3, (400, 3))
    half = rng.uniform(0.05, 1.0, (400, 3))
    bounds = np.stack([centres - half, centres + half], axis=1)
    classes = F.boxes_in_frustum(bounds, planes)
    # a triangle through three random points of each box
    triangles = centres[:, None] + half[:, None] * rng.uniform(-1, 1, (400, 3, 3))
    faces = np.arange(1200).reshape(-1, 3)
    inside = F.triangles_in_frustum(triangles.reshape(-1, 3), faces, planes)
    assert not inside[classes == F.OUTSIDE].any()
    assert inside[classes == F.INSIDE].all()


def test_box_test_is_conservative_near_an_edge_of_the_region():
    # The wedge y >= x, y <= -x (so x <= 0); the box x in [0.5, 1.5] is
    # outside it, but no single plane has the whole box outside.
    wedge = np.array([[-1.0, 1.0, 0.0, 0.0], [-1.0, -1.0, 0.0, 0.0]])
    box = np.array([[0.5, -0.9, -1.0], [1.5, 0.9, 1.0]])
    assert F.boxes_in_frustum(box, wedge).tolist() == [F.CROSSING]
    # the exact test of what is in the box then says no
    vertices = np.array([[0.5, -0.9, 0.0], [1.5, 0.9, 0.0], [0.5, 0.9, 1.0]])
    assert not F.triangles_in_frustum(vertices, [[0, 1, 2]], wedge)[0]


def test_box_edge_cases():
    # a point box on a plane is inside; a box touching a plane from outside crosses
    assert F.boxes_in_frustum([[1.0, 0.5, 0.5], [1.0, 0.5, 0.5]], UNIT_CUBE).tolist() == [F.INSIDE]
    assert F.boxes_in_frustum([[1.0, 0.2, 0.2], [2.0, 0.5, 0.5]], UNIT_CUBE).tolist() == [F.CROSSING]
    assert F.boxes_in_frustum([[1.5, 0.2, 0.2], [2.0, 0.5, 0.5]], UNIT_CUBE).tolist() == [F.OUTSIDE]
    assert F.boxes_in_frustum(np.empty((0, 2, 3)), UNIT_CUBE).shape == (0,)
    assert F.boxes_in_frustum([[5.0, 5, 5], [6.0, 6, 6]], np.empty((0, 4))).tolist() == [F.INSIDE]


# ------------------------------------------------------- object-space planes


def random_affine(rng, mirror=False):
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q *= np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    scale = np.exp(rng.uniform(np.log(0.05), np.log(20.0), 3))
    if mirror:
        scale[0] = -scale[0]
    shear = np.eye(3)
    shear[0, 1] = rng.uniform(-1, 1)
    transform = np.eye(4)
    transform[:3, :3] = q @ np.diag(scale) @ shear
    transform[:3, 3] = rng.uniform(-10, 10, 3)
    return transform


@pytest.mark.parametrize("mirror", [False, True])
def test_object_space_planes_keep_every_point_on_its_side(mirror):
    rng = np.random.default_rng(40 + mirror)
    world_planes = random_camera_frustum(rng)
    for _ in range(5):
        transform = random_affine(rng, mirror)
        assert (np.linalg.det(transform[:3, :3]) < 0) == mirror
        local_planes = F.planes_to_object_space(world_planes, transform)
        assert np.allclose(np.linalg.norm(local_planes[:, :3], axis=1), 1.0)
        local = rng.uniform(-2, 2, (2000, 3))
        world = local @ transform[:3, :3].T + transform[:3, 3]
        world_values = world @ world_planes[:, :3].T + world_planes[:, 3]
        local_values = local @ local_planes[:, :3].T + local_planes[:, 3]
        clear = np.abs(world_values) > 1e-9
        assert (np.sign(world_values[clear]) == np.sign(local_values[clear])).all()
        # Whole points, among those no plane passes within rounding of.
        decided = clear.all(axis=1)
        assert decided.mean() > 0.99
        assert ((world_values >= 0).all(axis=1) == (local_values >= 0).all(axis=1))[decided].all()


def test_rigid_transforms_keep_distances():
    rng = np.random.default_rng(50)
    planes = F.check_planes(random_region(rng))
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    transform = np.eye(4)
    transform[:3, :3] = q
    transform[:3, 3] = [1.0, -2.0, 3.0]
    local_planes = F.planes_to_object_space(planes, transform)
    points = rng.normal(size=(100, 3))
    world = points @ q.T + transform[:3, 3]
    assert np.allclose(points @ local_planes[:, :3].T + local_planes[:, 3], world @ planes[:, :3].T + planes[:, 3],
                       atol=1e-12)
    assert np.allclose(F.planes_to_object_space(planes, np.eye(4)), planes, atol=1e-15)


def test_selection_in_object_space_matches_world_space():
    rng = np.random.default_rng(60)
    planes = random_camera_frustum(rng)
    local = random_triangles(rng, 2000, 0.0, 1.0, (0.01, 0.5))
    vertices = local.reshape(-1, 3)
    faces = np.arange(len(vertices)).reshape(-1, 3)
    transforms = np.stack([random_affine(rng, mirror=k % 2 == 1) for k in range(4)])
    for k, transform in enumerate(transforms):
        transform[:3, :3] *= 3.0 / np.abs(transform[:3, :3]).max()
        transform[:3, 3] = rng.uniform(-1, 1, 3)
    batched = F.planes_to_object_space(planes, transforms)
    assert batched.shape == (4, len(planes), 4)
    agree = 0
    for transform, local_planes in zip(transforms, batched):
        assert np.array_equal(local_planes, F.planes_to_object_space(planes, transform))
        world_vertices = vertices @ transform[:3, :3].T + transform[:3, 3]
        in_world = F.triangles_in_frustum(world_vertices, faces, planes)
        in_local = F.triangles_in_frustum(vertices, faces, local_planes)
        # Triangles touching the region within MARGIN are decided by rounding
        # (of the matrix products on either side): compared where the region
        # grown and shrunk by MARGIN agree.
        unit = F.check_planes(planes)
        surely_in = F.triangles_in_frustum(world_vertices, faces, unit - [0.0, 0.0, 0.0, MARGIN])
        maybe_in = F.triangles_in_frustum(world_vertices, faces, unit + [0.0, 0.0, 0.0, MARGIN])
        decided = surely_in | ~maybe_in
        assert decided.mean() > 0.99
        assert (in_world == in_local)[decided].all()
        agree += in_world.sum()
    assert agree > 0


def test_object_space_refusals():
    planes = UNIT_CUBE
    with pytest.raises(ValueError, match=r"transform must have shape \(4, 4\) or \(K, 4, 4\), got \(3, 3\)"):
        F.planes_to_object_space(planes, np.eye(3))
    with pytest.raises(ValueError, match="transform contains NaN or infinite values"):
        F.planes_to_object_space(planes, np.full((4, 4), np.nan))
    projective = np.eye(4)
    projective[3, 2] = -1.0
    with pytest.raises(ValueError, match="transform must be affine, its last row 0 0 0 1"):
        F.planes_to_object_space(planes, projective)
    with pytest.raises(ValueError, match=r"transform must be invertible .*\(transform 1\)"):
        F.planes_to_object_space(planes, np.stack([np.eye(4), np.diag([1.0, 1.0, 0.0, 1.0])]))
    with pytest.raises(ValueError, match="transform must be an array of real numbers"):
        F.planes_to_object_space(planes, "identity")
    assert F.planes_to_object_space(planes, np.empty((0, 4, 4))).shape == (0, 6, 4)


# --------------------------------------------------------------- refusals


def test_plane_refusals():
    tri = np.eye(3)
    faces = [[0, 1, 2]]
    with pytest.raises(ValueError, match=r"planes must have shape \(P, 4\) or \(4,\), got \(3,\)"):
        F.triangles_in_frustum(tri, faces, [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"planes contain NaN or infinite values \(first at row 1\)"):
        F.boxes_in_frustum([[0, 0, 0], [1, 1, 1]], [[1, 0, 0, 0], [0, np.nan, 0, 0]])
    with pytest.raises(ValueError, match=r"planes must have non-zero normals \(nx, ny, nz\): row 0"):
        F.triangles_in_frustum(tri, faces, [0.0, 0.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="planes must be an array of real numbers"):
        F.triangles_in_frustum(tri, faces, "left")
    with pytest.raises(ValueError, match="planes row 0 has a normal too short for its offset d"):
        F.triangles_in_frustum(tri, faces, [1e-300, 0.0, 0.0, 1e40])


def test_triangle_refusals():
    planes = UNIT_CUBE
    with pytest.raises(ValueError, match=r"vertices must have shape \(V, 3\), got \(3, 2\)"):
        F.triangles_in_frustum(np.zeros((3, 2)), [[0, 1, 2]], planes)
    with pytest.raises(ValueError, match=r"vertices contain NaN or infinite values \(first at row 1\)"):
        F.triangles_in_frustum([[0, 0, 0], [np.inf, 0, 0], [0, 1, 0]], [[0, 1, 2]], planes)
    with pytest.raises(ValueError, match="faces must be an array of integers, got dtype float64"):
        F.triangles_in_frustum(np.eye(3), [[0.0, 1.0, 2.0]], planes)
    with pytest.raises(ValueError, match=r"faces must have shape \(F, 3\), got \(3,\)"):
        F.any_triangle_in_frustum(np.eye(3), [0, 1, 2], planes)
    with pytest.raises(ValueError, match="faces hold a negative vertex index -1"):
        F.triangles_in_frustum(np.eye(3), [[0, 1, -1]], planes)
    with pytest.raises(ValueError, match="faces refer to vertex 3 but there are only 3 vertices"):
        F.triangles_in_frustum(np.eye(3), [[0, 1, 3]], planes)


def test_box_refusals():
    with pytest.raises(ValueError, match=r"bounds must have shape \(N, 2, 3\) or \(2, 3\)"):
        F.boxes_in_frustum(np.zeros((4, 3)), UNIT_CUBE)
    with pytest.raises(ValueError, match=r"bounds must have min <= max on every axis \(first violation at box 1\)"):
        F.boxes_in_frustum([[[0, 0, 0], [1, 1, 1]], [[0, 2, 0], [1, 1, 1]]], UNIT_CUBE)
    with pytest.raises(ValueError, match=r"bounds contain NaN or infinite values \(first at row 0\)"):
        F.boxes_in_frustum([[0, 0, np.nan], [1, 1, 1]], UNIT_CUBE)
