"""Overlap queries (``MeshBVH.overlap``, ``Scene.overlap``) against the
float64 brute-force oracle ``testkit.reference.proximity.overlapping_triangles``.

The oracle runs on the geometry the engine holds: the float32 vertices
relative to the mesh's offset, converted back exactly, and in scenes mapped
by each object's transform. Faces within ``MARGIN`` (relative) of a shape's
boundary may go either way by rounding; every comparison allows exactly that
and no more (``testkit.scenes.shapes.bracket``), so no test depends on the
CPU's rounding.
"""

import numpy as np
import pytest
import trimesh

import bvh
from bvh.queries import overlap as overlap_kernels
from testkit.meshes import SHARED_MESHES, load_mesh
from testkit.scenes.shapes import KINDS, agrees, bracket, random_shape
from testkit.reference.proximity import overlapping_triangles

#: Faces closer than this (times the mesh size) to a shape's boundary are
#: decided by rounding, in the engine as in the oracle.
MARGIN = 1e-9


def stored_vertices(mesh: bvh.MeshBVH, vertices: np.ndarray) -> np.ndarray:
    """The vertices as the BVH holds them, in world coordinates."""
    return (vertices - mesh.offset).astype(np.float32).astype(np.float64) + mesh.offset


@pytest.fixture(scope="module")
def icosphere():
    sphere = trimesh.creation.icosphere(subdivisions=2)
    vertices = np.asarray(sphere.vertices, np.float64)
    faces = np.asarray(sphere.faces, np.int64)
    mesh = bvh.build(vertices, faces)
    return mesh, vertices, faces, stored_vertices(mesh, vertices)


def _solid(shape) -> bool:
    if shape["kind"] in ("sphere", "capsule"):
        return shape["radius"] > 0.0
    if shape["kind"] == "aabb":
        return bool((shape["max"] > shape["min"]).all())
    return shape["kind"] == "convex" or bool((shape["half_size"] > 0.0).all())


def test_ten_thousand_random_queries_agree_with_the_oracle(icosphere):
    mesh, _, faces, stored = icosphere
    rng = np.random.default_rng(16)
    decided = undecided = 0
    for n in range(10_000):
        kind = KINDS[n % len(KINDS)]
        shape, box = random_shape(rng, kind, np.zeros(3), 1.2)
        found = mesh.overlap(shape)
        assert found.dtype == np.int64 and np.all(np.diff(found) > 0)
        sure, possible = bracket(stored, faces, shape, MARGIN, box)
        assert agrees(found, sure, possible), (n, shape)
        if _solid(shape):
            # Not a zero radius or a flat box, whose every contact is on its
            # boundary: rounding decides only faces that graze the boundary,
            # which is rare by chance.
            decided += len(sure)
            undecided += len(possible) - len(sure)
    assert decided > 50_000 and undecided < 10, (decided, undecided)


def test_a_query_far_from_the_origin(icosphere):
    _, vertices, faces, _ = icosphere
    far = vertices * 0.5 + [3.0e4, -2.0e4, 1.0e4]
    mesh = bvh.build(far, faces)
    stored = stored_vertices(mesh, far)
    assert mesh.offset.any()
    rng = np.random.default_rng(3)
    for n in range(500):
        shape, box = random_shape(rng, KINDS[n % 5], [3.0e4, -2.0e4, 1.0e4], 0.6)
        assert agrees(mesh.overlap(shape), *bracket(stored, faces, shape, MARGIN * 3.0e4, box)), shape


def test_exact_contacts_count():
    # Integer corners: every quantity below is exact in float64.
    vertices = np.array([[0.0, 0.0, 0.0], [4.0, 0.0, 0.0], [0.0, 4.0, 0.0], [8.0, 8.0, 8.0], [9.0, 8.0, 8.0],
                         [8.0, 9.0, 8.0]])
    mesh = bvh.build(vertices, [[0, 1, 2], [3, 4, 5]])
    touching = [
        {"kind": "sphere", "center": [1.0, 1.0, 2.0], "radius": 2.0},
        {"kind": "sphere", "center": [-3.0, -4.0, 0.0], "radius": 5.0},
        {"kind": "capsule", "a": [-1.0, 5.0, 3.0], "b": [5.0, -1.0, 3.0], "radius": 3.0},
        {"kind": "capsule", "a": [1.0, 1.0, -1.0], "b": [1.0, 1.0, 1.0], "radius": 0.0},
        {"kind": "aabb", "min": [4.0, -1.0, -1.0], "max": [5.0, 1.0, 1.0]},
        {"kind": "aabb", "min": [1.0, 1.0, 0.0], "max": [1.0, 1.0, 0.0]},
        {"kind": "obb", "center": [2.0, 2.0, 1.0], "axes": np.eye(3)[[2, 0, 1]], "half_size": [1.0, 1.0, 1.0]},
        {"kind": "convex", "planes": [[1.0, 0.0, 0.0, -4.0], [-1.0, 0.0, 0.0, 5.0]]},
    ]
    for shape in touching:
        assert mesh.overlap(shape).tolist() == [0], shape
    apart = [
        {"kind": "sphere", "center": [1.0, 1.0, 2.0], "radius": 1.5},
        {"kind": "capsule", "a": [-1.0, 5.0, 3.0], "b": [5.0, -1.0, 3.0], "radius": 2.5},
        {"kind": "aabb", "min": [3.0, 3.0, -1.0], "max": [4.0, 4.0, 1.0]},
        {"kind": "convex", "planes": [[1.0, 1.0, 0.0, -5.0], [-1.0, -1.0, 0.0, 7.0]]},
    ]
    for shape in apart:
        assert mesh.overlap(shape).tolist() == [], shape
    assert mesh.overlap({"kind": "convex", "planes": np.zeros((0, 4))}).tolist() == [0, 1]
    assert mesh.overlap({"kind": "aabb", "min": [0.0, 0.0, 0.0], "max": [8.0, 8.0, 8.0]}).tolist() == [0, 1]


def _leaf(record, corners):
    a, b, c = np.asarray(corners, np.float64)
    return bool(overlap_kernels.triangle_overlaps(record, *a, *(b - a), *(c - a),
                                                  overlap_kernels.make_scratch(record)))


def test_degenerate_triangles_are_their_segment_or_point():
    segment = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0]]
    point = [[1.0, 1.0, 1.0]] * 3
    record = overlap_kernels.shape_record
    # three-mesh-bvh #762: boxes that the segment's line, not the segment, meets.
    assert not _leaf(record({"kind": "aabb", "min": [3.0, -1.0, -1.0], "max": [4.0, 1.0, 1.0]}), segment)
    assert not _leaf(record({"kind": "aabb", "min": [0.5, 0.5, -1.0], "max": [1.5, 1.5, 1.0]}), segment)
    assert _leaf(record({"kind": "aabb", "min": [2.0, 0.0, 0.0], "max": [4.0, 1.0, 1.0]}), segment)
    assert not _leaf(record({"kind": "aabb", "min": [0.0, 0.0, 0.0], "max": [0.9, 0.9, 0.9]}), point)
    assert _leaf(record({"kind": "aabb", "min": [0.0, 0.0, 0.0], "max": [1.0, 1.0, 1.0]}), point)
    assert not _leaf(record({"kind": "capsule", "a": [0.0, 1.0, 0.0], "b": [2.0, 1.0, 0.0], "radius": 0.9}),
                     segment)
    assert not _leaf(record({"kind": "convex", "planes": [[0.0, 1.0, 0.0, -0.1]]}), segment)
    # Random degenerate triangles (segments, points) against the oracle.
    rng = np.random.default_rng(762)
    for n in range(2000):
        a, b = rng.normal(size=(2, 3))
        shape_of = rng.integers(3)
        corners = (np.stack([a, b, a + rng.uniform(-1, 2) * (b - a)]) if shape_of == 0
                   else np.stack([a, a, b]) if shape_of == 1 else np.stack([a, a, a]))
        corners = corners.astype(np.float32).astype(np.float64)
        if shape_of == 0 and np.cross(corners[1] - corners[0], corners[2] - corners[0]).any():
            continue
        shape, _ = random_shape(rng, KINDS[n % 5], np.zeros(3), 1.0)
        sure, possible = bracket(corners, np.array([[0, 1, 2]]), shape, MARGIN)
        found = np.array([0]) if _leaf(record(shape), corners) else np.zeros(0, np.int64)
        assert agrees(found, sure, possible), (corners, shape)


def test_zero_area_faces_are_not_reported_as_rays_never_hit_them():
    vertices = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [2.0, 0.0, 0.0]])
    mesh = bvh.build(vertices, [[0, 1, 2], [0, 1, 3]])
    assert mesh.overlap({"kind": "aabb", "min": [1.5, -1.0, -1.0], "max": [3.0, 1.0, 1.0]}).tolist() == []
    assert mesh.overlap({"kind": "sphere", "center": [0.5, 0.0, 0.0], "radius": 0.1}).tolist() == [0]


def _transforms():
    mirrored = np.diag([-1.0, 1.0, 1.0, 1.0])
    mirrored[:3, 3] = [3.0, 0.0, 0.0]
    stretched = np.diag([3.0, 0.5, 1.0, 1.0])
    stretched[:3, 3] = [0.0, 3.0, 1.0]
    sheared = np.eye(4)
    sheared[:3, :3] = [[1.0, 0.8, 0.0], [0.0, 1.0, 0.0], [0.3, 0.0, 0.7]]
    sheared[:3, 3] = [-3.0, 0.5, 0.0]
    far = np.eye(4)
    far[:3, :3] = trimesh.transformations.rotation_matrix(0.7, [1.0, 2.0, 3.0])[:3, :3] * [[2.0, 1.0, 1.0]]
    far[:3, 3] = [4.0e4, -3.0e4, 2.0e4]
    return [mirrored, stretched, sheared, far]


def test_instances_mirrored_scaled_sheared_and_far(icosphere):
    mesh, vertices, faces, stored = icosphere
    scene = bvh.Scene()
    mesh_id = scene.add_mesh(vertices, faces)
    transforms = _transforms()
    ids = [scene.add_instance(mesh_id, transform) for transform in transforms]
    rng = np.random.default_rng(12)
    for n in range(1000):
        target = n % len(ids)
        transform = transforms[target]
        world = stored @ transform[:3, :3].T + transform[:3, 3]
        center = world.mean(axis=0)
        scale = np.abs(world - center).max()
        shape, box = random_shape(rng, KINDS[n % 5], center, scale)
        selection = scene.overlap(shape, triangles=True)
        assert np.all(np.diff(selection.object) >= 0)
        margin = MARGIN * max(scale, np.abs(center).max())
        for oid, other in zip(ids, transforms):
            world = stored @ other[:3, :3].T + other[:3, 3]
            sure, possible = bracket(world, faces, shape, margin, box)
            found = selection.triangle[selection.object == oid]
            assert agrees(found, sure, possible), (n, oid, shape)
        objects = scene.overlap(shape)
        assert objects.object.tolist() == np.unique(selection.object).tolist()
        assert (objects.triangle == -1).all()


def test_filters_and_an_empty_scene(icosphere):
    _, vertices, faces, _ = icosphere
    scene = bvh.Scene()
    everything = {"kind": "aabb", "min": [-10.0, -10.0, -10.0], "max": [10.0, 10.0, 10.0]}
    assert len(scene.overlap(everything)) == 0
    mesh_id = scene.add_mesh(vertices, faces)
    ids = [scene.add_instance(mesh_id, np.diag([1.0, 1.0, 1.0, 1.0])) for _ in range(3)]
    scene.set_mask(ids[1], 2)
    assert scene.overlap(everything).object.tolist() == ids
    assert scene.overlap(everything, mask=1).object.tolist() == [ids[0], ids[2]]
    assert scene.overlap(everything, objects=[ids[2]]).object.tolist() == [ids[2]]
    assert scene.overlap(everything, exclude=[ids[0]]).object.tolist() == ids[1:]
    selection = scene.overlap(everything, triangles=True)
    assert selection.object.tolist() == np.repeat(ids, len(faces)).tolist()
    assert selection.triangle.tolist() == list(range(len(faces))) * 3


def _placed(scale=(1.0, 1.0, 1.0), offset=(0.0, 0.0, 0.0)):
    transform = np.diag([*scale, 1.0])
    transform[:3, 3] = offset
    return transform


def test_shape_objects_are_their_surfaces():
    scene = bvh.Scene()
    box = scene.add_shape("box", _placed(offset=(10.0, 0.0, 0.0)), size=(2.0, 2.0, 2.0))
    quad = scene.add_shape("quad", _placed(offset=(0.0, 10.0, 0.0)), size=(2.0, 2.0))
    triangle = scene.add_shape("polygon", _placed(offset=(0.0, 0.0, 10.0)),
                               vertices=[[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [2.0, 2.0, 0.0], [0.0, 2.0, 0.0]])
    ball = scene.add_shape("sphere", _placed(scale=(2.0, 1.0, 1.0), offset=(-10.0, 0.0, 0.0)), radius=1.0)
    cases = [
        (box, {"kind": "sphere", "center": [10.0, 0.0, 0.0], "radius": 0.5}, False),
        (box, {"kind": "sphere", "center": [10.0, 0.0, 0.0], "radius": 1.0}, True),
        (box, {"kind": "aabb", "min": [11.0, 1.0, 1.0], "max": [12.0, 2.0, 2.0]}, True),
        (box, {"kind": "capsule", "a": [12.0, 0.0, 0.0], "b": [12.0, 3.0, 0.0], "radius": 0.9}, False),
        (quad, {"kind": "aabb", "min": [-0.5, 10.5, -1.0], "max": [0.5, 11.5, 1.0]}, True),
        (quad, {"kind": "aabb", "min": [-0.5, 10.5, 0.1], "max": [0.5, 11.5, 1.0]}, False),
        (triangle, {"kind": "capsule", "a": [1.0, 1.0, 9.0], "b": [1.0, 1.0, 11.0], "radius": 0.0}, True),
        (triangle, {"kind": "convex", "planes": [[0.0, 0.0, 1.0, -10.5]]}, False),
        # The sphere object is an ellipsoid of semi-axes 2, 1, 1 about (-10, 0, 0).
        (ball, {"kind": "sphere", "center": [-7.5, 0.0, 0.0], "radius": 0.4}, False),
        (ball, {"kind": "sphere", "center": [-7.5, 0.0, 0.0], "radius": 0.6}, True),
        (ball, {"kind": "sphere", "center": [-10.0, 0.0, 0.0], "radius": 0.9}, False),
        (ball, {"kind": "sphere", "center": [-10.0, 0.0, 0.0], "radius": 1.5}, True),
        (ball, {"kind": "sphere", "center": [-10.0, 0.0, 0.0], "radius": 2.5}, True),
        (ball, {"kind": "capsule", "a": [-11.0, 0.0, 0.0], "b": [-9.0, 0.0, 0.0], "radius": 0.5}, False),
        (ball, {"kind": "capsule", "a": [-12.5, 1.2, 0.0], "b": [-7.5, 1.2, 0.0], "radius": 0.1}, False),
        (ball, {"kind": "capsule", "a": [-12.5, 1.2, 0.0], "b": [-7.5, 1.2, 0.0], "radius": 0.3}, True),
        (ball, {"kind": "aabb", "min": [-10.5, -0.5, -0.5], "max": [-9.5, 0.5, 0.5]}, False),
        (ball, {"kind": "aabb", "min": [-10.5, -0.5, -0.5], "max": [-9.5, 1.5, 0.5]}, True),
        (ball, {"kind": "aabb", "min": [-13.0, -2.0, -2.0], "max": [-7.0, 2.0, 2.0]}, True),
        (ball, {"kind": "aabb", "min": [-7.9, -2.0, -2.0], "max": [-7.0, 2.0, 2.0]}, False),
        (ball, {"kind": "obb", "center": [-10.0, 0.0, 0.0], "axes": np.eye(3)[[1, 2, 0]],
                "half_size": [0.5, 0.5, 2.1]}, True),
        (ball, {"kind": "convex", "planes": [[1.0, 0.0, 0.0, 8.5]]}, True),
        (ball, {"kind": "convex", "planes": [[-1.0, 0.0, 0.0, -8.5]]}, True),
        (ball, {"kind": "convex", "planes": [[1.0, 0.0, 0.0, 7.9]]}, False),
        (ball, {"kind": "convex", "planes": [[1.0, 0.0, 0.0, 10.5], [-1.0, 0.0, 0.0, -9.5],
                                             [0.0, 1.0, 0.0, 0.5], [0.0, -1.0, 0.0, 0.5],
                                             [0.0, 0.0, 1.0, 0.5], [0.0, 0.0, -1.0, 0.5]]}, False),
    ]
    for oid, shape, expected in cases:
        selection = scene.overlap(shape, triangles=True)
        assert (oid in selection.object.tolist()) == expected, (oid, shape)
        assert (selection.triangle == -1).all()


def test_a_non_convex_polygon_is_refused_not_skipped():
    scene = bvh.Scene()
    ell = scene.add_shape("polygon", vertices=[[0, 0, 0], [2, 0, 0], [2, 1, 0], [1, 1, 0], [1, 2, 0], [0, 2, 0]])
    near = {"kind": "sphere", "center": [0.5, 0.5, 0.0], "radius": 0.1}
    with pytest.raises(ValueError, match=f"object {ell} is a polygon whose outline is not convex"):
        scene.overlap(near)
    assert len(scene.overlap(near, exclude=[ell])) == 0
    assert len(scene.overlap({"kind": "sphere", "center": [9.0, 9.0, 9.0], "radius": 0.1})) == 0


@pytest.mark.parametrize("shape, message", [
    ([1, 2, 3], "an overlap shape must be a dict"),
    ({"center": [0, 0, 0], "radius": 1}, "an overlap shape needs a 'kind'"),
    ({"kind": "cone"}, "unknown overlap shape kind 'cone': the kinds are sphere, aabb, obb, capsule, convex"),
    ({"kind": "sphere", "center": [0, 0, 0]}, "a sphere needs 'center', 'radius'; 'radius' is missing"),
    ({"kind": "sphere", "center": [0, 0, 0], "radius": 1, "size": 2},
     "a sphere takes 'center', 'radius'; 'size' is not one of them"),
    ({"kind": "sphere", "center": [0, 0], "radius": 1},
     r"center must be 3 numbers \(x, y, z\), got an array of shape \(2,\)"),
    ({"kind": "sphere", "center": "abc", "radius": 1}, "center must be an array of real numbers"),
    ({"kind": "sphere", "center": [0, np.nan, 0], "radius": 1}, "center must be finite"),
    ({"kind": "sphere", "center": [0, 0, 0], "radius": -1}, "radius must be >= 0, got -1.0"),
    ({"kind": "sphere", "center": [0, 0, 0], "radius": np.inf}, "radius must be finite"),
    ({"kind": "sphere", "center": [0, 0, 0], "radius": [1, 2]}, "radius must be a single number"),
    ({"kind": "capsule", "a": [0, 0, 0], "b": [1, 1, np.inf], "radius": 1}, "b must be finite"),
    ({"kind": "aabb", "min": [0, 2, 0], "max": [1, 1, 1]},
     r"min must be <= max on every axis, but min\[1\] = 2.0 > max\[1\] = 1.0"),
    ({"kind": "obb", "center": [0, 0, 0], "axes": np.eye(2), "half_size": [1, 1, 1]},
     r"axes must be 3 rows of 3 numbers, got an array of shape \(2, 2\)"),
    ({"kind": "obb", "center": [0, 0, 0], "axes": np.diag([1, 1, 2]), "half_size": [1, 1, 1]},
     "axes must be orthonormal rows"),
    ({"kind": "obb", "center": [0, 0, 0], "axes": np.full((3, 3), np.nan), "half_size": [1, 1, 1]},
     "axes must be finite"),
    ({"kind": "obb", "center": [0, 0, 0], "axes": np.eye(3), "half_size": [1, -1, 1]},
     r"half_size must be >= 0 on every axis, got \[1.0, -1.0, 1.0\]"),
    ({"kind": "convex", "planes": [1, 2, 3]}, r"planes must have shape \(P, 4\) or \(4,\), got \(3,\)"),
    ({"kind": "convex", "planes": [[0, 0, 0, 1]]}, "planes must have non-zero normals"),
    ({"kind": "convex", "planes": [[np.nan, 0, 1, 1]]}, "planes contain NaN or infinite values"),
])
def test_every_refusal_says_what_is_wrong(icosphere, shape, message):
    mesh, vertices, faces, _ = icosphere
    with pytest.raises(ValueError, match=message):
        mesh.overlap(shape)
    scene = bvh.Scene()
    scene.add_instance(scene.add_mesh(vertices, faces))
    with pytest.raises(ValueError, match=message):
        scene.overlap(shape)


@pytest.mark.skipif(not (SHARED_MESHES / "stanford-bunny.obj").exists(),
                    reason="the shared meshes (../shared/meshes) are not on this machine")
def test_the_bunny_agrees_with_the_oracle():
    vertices, faces = load_mesh(SHARED_MESHES / "stanford-bunny.obj")
    mesh = bvh.build(vertices, faces)
    stored = stored_vertices(mesh, vertices)
    lo, hi = stored.min(axis=0), stored.max(axis=0)
    size = float((hi - lo).max())
    rng = np.random.default_rng(5)
    for n in range(100):
        shape, box = random_shape(rng, KINDS[n % 5], (lo + hi) / 2, size * 0.15)
        assert agrees(mesh.overlap(shape), *bracket(stored, faces, shape, MARGIN * size, box)), shape


def test_oracle_bracket_is_not_vacuous(icosphere):
    # The comparison would pass an engine that answered at random only if
    # the bracket were loose: it is tight on ordinary queries.
    _, _, faces, stored = icosphere
    shape = {"kind": "sphere", "center": [0.0, 0.0, 1.0], "radius": 0.5}
    sure, possible = bracket(stored, faces, shape, MARGIN)
    assert 0 < len(sure) == len(possible)
    assert np.array_equal(sure, np.flatnonzero(overlapping_triangles(stored, faces, shape)))
