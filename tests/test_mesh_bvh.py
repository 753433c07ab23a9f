"""MeshBVH queries against the float64 brute-force oracle."""

import numpy as np
import pytest

import bvh
from testkit.reference import raycast as reference
from testkit.meshes import SHARED_ALL, pick_rays, sample_mesh, shared_mesh

CUBE_VERTICES = np.array([[x, y, z] for x in (0.0, 1.0) for y in (0.0, 1.0) for z in (0.0, 1.0)])
# Outward-facing, two triangles per face sharing the face's diagonal.
CUBE_FACES = np.array([
    [0, 1, 3], [0, 3, 2],  # x = 0
    [4, 6, 7], [4, 7, 5],  # x = 1
    [0, 4, 5], [0, 5, 1],  # y = 0
    [2, 3, 7], [2, 7, 6],  # y = 1
    [0, 2, 6], [0, 6, 4],  # z = 0
    [1, 5, 7], [1, 7, 3],  # z = 1
])


def assert_agrees_with_oracle(vertices, faces, origins, directions, tmin=0.0, tmax=np.inf,
                              cull_backfaces=False, mesh=None):
    """Same hit/miss on >= 99.99% of rays (only rays within 1e-7 of an edge may
    differ), t within 1e-5 of the mesh size, consistent fields, never NaN."""
    mesh = mesh or bvh.build(vertices, faces)
    hits = mesh.intersect(origins, directions, tmin, tmax, cull_backfaces)
    triangle, t, u, v, edge = reference.closest_hits(vertices, faces, origins, directions, tmin, tmax,
                                                     cull_backfaces)
    size = np.linalg.norm(vertices.max(axis=0) - vertices.min(axis=0))
    length = np.linalg.norm(directions, axis=1)
    ours, theirs = hits.triangle >= 0, triangle >= 0
    differ = ours != theirs
    assert differ.mean() <= 1e-4, f"{differ.sum()} of {len(differ)} rays differ in hit/miss"
    # A disagreement is only allowed for a ray grazing an edge in the oracle.
    assert np.all(np.abs(edge[differ]) < 1e-7)
    both = ours & theirs
    assert np.all(np.abs(hits.t[both] - t[both]) * length[both] <= 1e-5 * size)
    assert np.all(np.isinf(hits.t[~ours]))
    for name in ("t", "u", "v", "point", "normal"):
        assert not np.isnan(getattr(hits, name)[ours]).any(), name
    # Fields are consistent with the hit triangle in its original vertex order.
    f = faces[hits.triangle[ours]]
    v0, v1, v2 = vertices[f[:, 0]], vertices[f[:, 1]], vertices[f[:, 2]]
    w = np.column_stack([1 - hits.u[ours] - hits.v[ours], hits.u[ours], hits.v[ours]])
    assert np.all(w >= 0)
    from_bary = w[:, :1] * v0 + w[:, 1:2] * v1 + w[:, 2:] * v2
    assert np.all(np.linalg.norm(from_bary - hits.point[ours], axis=1) <= 1e-5 * size)
    expected_point = origins[ours] + hits.t[ours, None] * directions[ours]
    np.testing.assert_allclose(hits.point[ours], expected_point, atol=1e-12 * size + 1e-300)
    n = np.cross(v1 - v0, v2 - v0)
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    assert np.all(np.abs(np.einsum("ij,ij->i", n, hits.normal[ours]) - 1) <= 1e-5)
    # The side is the sign of n . d: compared where rounding (the tree's float32
    # vertices, einsum's summation order) cannot flip it.
    facing = np.einsum("ij,ij->i", n, directions[ours])
    clear = np.abs(facing) > 1e-6 * length[ours]
    np.testing.assert_array_equal(hits.front_face[ours][clear], facing[clear] < 0)
    assert not hits.front_face[~ours].any()
    return hits


def test_cube_known_hit():
    mesh = bvh.build(CUBE_VERTICES, CUBE_FACES)
    hits = mesh.intersect([0.25, 0.5, -1.0], [0.0, 0.0, 2.0])
    assert hits.triangle[0] in (8, 9)
    assert hits.t[0] == pytest.approx(0.5)
    np.testing.assert_allclose(hits.point[0], [0.25, 0.5, 0.0], atol=1e-12)
    np.testing.assert_allclose(hits.normal[0], [0.0, 0.0, -1.0], atol=1e-12)
    assert hits.front_face[0]


def test_miss_fields_are_sentinels():
    mesh = bvh.build(CUBE_VERTICES, CUBE_FACES)
    hits = mesh.intersect([[5.0, 5.0, 5.0]], [[1.0, 0.0, 0.0]])
    assert hits.triangle[0] == -1 and np.isinf(hits.t[0]) and not hits.front_face[0]
    assert np.isnan(hits.u[0]) and np.isnan(hits.point).all() and np.isnan(hits.normal).all()
    assert not hits.hit[0] and len(hits) == 1


def test_single_ray_shapes():
    mesh = bvh.build(CUBE_VERTICES, CUBE_FACES)
    hits = mesh.intersect(np.array([0.5, 0.5, 2.0]), np.array([0.0, 0.0, -1.0]))
    assert hits.triangle.shape == (1,) and hits.point.shape == (1, 3)
    assert hits.t[0] == pytest.approx(1.0)


def test_uv_follow_original_vertex_order():
    # The same triangle with its vertices listed in three rotations.
    vertices = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
    for faces in ([[0, 1, 2]], [[1, 2, 0]], [[2, 0, 1]]):
        faces = np.array(faces)
        hits = bvh.build(vertices, faces).intersect([0.2, 0.3, 1.0], [0.0, 0.0, -1.0])
        f = faces[0]
        point = (1 - hits.u[0] - hits.v[0]) * vertices[f[0]] + hits.u[0] * vertices[f[1]] + hits.v[0] * vertices[f[2]]
        np.testing.assert_allclose(point, [0.2, 0.3, 0.0], atol=1e-12)


def test_direction_length_scales_t_not_the_hit():
    mesh = bvh.build(CUBE_VERTICES, CUBE_FACES)
    hits = mesh.intersect([[0.5, 0.5, 3.0]] * 2, [[0.0, 0.0, -1.0], [0.0, 0.0, -4.0]])
    assert hits.t == pytest.approx([2.0, 0.5])
    np.testing.assert_allclose(hits.point[0], hits.point[1])


@pytest.mark.parametrize("name", ["terrain.obj", "torus.ply", "gear.stl", "capsule_quads.obj"])
def test_sample_meshes_against_oracle(name):
    vertices, faces = sample_mesh(name)
    origins, directions = pick_rays(vertices, 3000, np.random.default_rng(1), axis_aligned_fraction=0.2)
    hits = assert_agrees_with_oracle(vertices, faces, origins, directions)
    assert hits.hit.mean() > 0.2


@pytest.mark.parametrize("name", SHARED_ALL)
def test_shared_meshes_against_oracle(name):
    vertices, faces = shared_mesh(name)
    origins, directions = pick_rays(vertices, 400, np.random.default_rng(2), axis_aligned_fraction=0.2)
    assert_agrees_with_oracle(vertices, faces, origins, directions)


@pytest.mark.parametrize("scale, shift", [(1e-4, 0.0), (1e4, 0.0), (1.0, 1e6), (1e-4, 1e6), (1e4, -1e6)])
def test_scaled_and_far_meshes(scale, shift):
    vertices, faces = sample_mesh("torus.ply")
    vertices = vertices * scale + shift
    origins, directions = pick_rays(vertices, 2000, np.random.default_rng(3), axis_aligned_fraction=0.2)
    mesh = bvh.build(vertices, faces)
    np.testing.assert_allclose(mesh.offset, shift, atol=2 * scale)
    assert_agrees_with_oracle(vertices, faces, origins, directions, mesh=mesh)


def test_tmin_tmax_window():
    vertices, faces = sample_mesh("torus.ply")
    origins, directions = pick_rays(vertices, 2000, np.random.default_rng(4))
    for tmin, tmax in [(0.0, 0.6), (0.55, np.inf), (0.5, 0.7), (0.6, 0.6)]:
        assert_agrees_with_oracle(vertices, faces, origins, directions, tmin, tmax)


def test_cull_backfaces():
    vertices, faces = sample_mesh("torus.ply")
    origins, directions = pick_rays(vertices, 2000, np.random.default_rng(5))
    hits = assert_agrees_with_oracle(vertices, faces, origins, directions, cull_backfaces=True)
    assert hits.front_face[hits.hit].all()
    # From inside the tube every face is seen from behind: culling hides them all.
    inside = bvh.build(vertices, faces).intersect([[1.0, 0.0, 0.0]] * 2, [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
                                                  cull_backfaces=True)
    assert not inside.hit.any()


def test_occluded_matches_oracle():
    vertices, faces = sample_mesh("terrain.obj")
    origins, directions = pick_rays(vertices, 3000, np.random.default_rng(6), axis_aligned_fraction=0.2)
    mesh = bvh.build(vertices, faces)
    for tmin, tmax in [(0.0, np.inf), (0.2, 0.8)]:
        occluded = mesh.occluded(origins, directions, tmin, tmax)
        triangle, *_ = reference.closest_hits(vertices, faces, origins, directions, tmin, tmax)
        assert (occluded != (triangle >= 0)).mean() <= 1e-4
    assert mesh.occluded(origins[:3], directions[:3]).shape == (3,)


def test_intersect_all_matches_oracle():
    vertices, faces = sample_mesh("torus.ply")
    origins, directions = pick_rays(vertices, 1500, np.random.default_rng(7), axis_aligned_fraction=0.2)
    mesh = bvh.build(vertices, faces)
    result = mesh.intersect_all(origins, directions)
    assert np.all(np.diff(result.ray) >= 0)
    same_ray = np.diff(result.ray) == 0
    assert np.all(np.diff(result.t)[same_ray] >= 0)
    expected = reference.all_hit_distances(vertices, faces, origins, directions)
    counts = np.bincount(result.ray, minlength=len(origins))
    agree = np.array([counts[i] == len(e) for i, e in enumerate(expected)])
    assert agree.mean() >= 0.999
    for i in np.flatnonzero(agree)[:300]:
        np.testing.assert_allclose(result.t[result.ray == i], expected[i], rtol=1e-6, atol=1e-9)
    # Fields describe real hits.
    f = faces[result.triangle]
    w = np.column_stack([1 - result.u - result.v, result.u, result.v])
    points = np.einsum("nk,nkd->nd", w, vertices[f])
    np.testing.assert_allclose(points, origins[result.ray] + result.t[:, None] * directions[result.ray], atol=1e-5)


def test_intersect_all_reports_a_shared_edge_crossing_once():
    mesh = bvh.build(CUBE_VERTICES, CUBE_FACES)
    # Through the diagonals shared by both triangles of the z = 0 and z = 1 faces.
    result = mesh.intersect_all([[0.3, 0.3, -1.0], [0.0, 0.0, -1.0]], [[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    np.testing.assert_array_equal(result.ray, [0, 0, 1, 1])
    np.testing.assert_allclose(result.t, [1.0, 2.0, 1.0, 2.0])


def test_intersect_all_window_and_empty():
    mesh = bvh.build(CUBE_VERTICES, CUBE_FACES)
    result = mesh.intersect_all([[0.3, 0.6, -1.0]], [[0.0, 0.0, 1.0]], tmin=1.5)
    np.testing.assert_allclose(result.t, [2.0])
    none = mesh.intersect_all([[5.0, 5.0, 5.0]], [[1.0, 0.0, 0.0]])
    assert len(none) == 0 and none.ray.dtype == np.int64
    assert none.point.shape == none.normal.shape == (0, 3) and none.front_face.shape == (0,)


def test_intersect_all_points_and_normals_are_those_of_closest_hits():
    """Each crossing carries its point, unit normal and side; a ray's first
    crossing carries what intersect gives, later ones the oracle's normal."""
    vertices, faces = sample_mesh("torus.ply")
    origins, directions = pick_rays(vertices, 1000, np.random.default_rng(11))
    mesh = bvh.build(vertices, faces)
    every = mesh.intersect_all(origins, directions)
    closest = mesh.intersect(origins, directions)
    assert len(every) > closest.hit.sum() > 500
    ray_directions = directions[every.ray]
    np.testing.assert_allclose(every.point, origins[every.ray] + every.t[:, None] * ray_directions, rtol=0,
                               atol=1e-12 * np.abs(every.point).max())
    np.testing.assert_allclose(np.linalg.norm(every.normal, axis=1), 1.0, rtol=1e-12)
    facing = (every.normal * ray_directions).sum(axis=1)
    clear = np.abs(facing) > 1e-6 * np.linalg.norm(ray_directions, axis=1)
    assert clear.mean() > 0.99
    np.testing.assert_array_equal(every.front_face[clear], facing[clear] < 0)
    first = np.flatnonzero(np.diff(np.concatenate([[-1], every.ray])) != 0)
    rays = every.ray[first]
    same = every.triangle[first] == closest.triangle[rays]
    assert same.mean() > 0.99
    for field in ("t", "point", "normal"):
        np.testing.assert_allclose(getattr(every, field)[first[same]], getattr(closest, field)[rays[same]],
                                   rtol=1e-12, atol=1e-12, err_msg=field)
    # The kernel may fuse n . d into FMAs: on a grazing hit its sign is the CPU's to round.
    steady = same & clear[first]
    np.testing.assert_array_equal(every.front_face[first[steady]], closest.front_face[rays[steady]])
    corners = vertices[faces[every.triangle]]
    oracle = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    oracle /= np.linalg.norm(oracle, axis=1, keepdims=True)
    # The tree holds the vertices rounded to float32: normals agree to that precision.
    np.testing.assert_allclose(every.normal, oracle, atol=1e-4)


def test_degenerate_triangles_are_never_hit():
    vertices = np.vstack([CUBE_VERTICES, [[0.5, 0.5, 0.5], [0.5, 0.5, 0.5], [0.2, 0.2, 0.2], [0.8, 0.8, 0.8]]])
    degenerate = np.array([[8, 9, 8], [8, 9, 9], [10, 11, 8], [3, 3, 3]])  # repeated points; collinear
    faces = np.vstack([degenerate, CUBE_FACES])
    mesh = bvh.build(vertices, faces)
    assert mesh.triangle_count == len(CUBE_FACES) and mesh.face_count == len(faces)
    origins, directions = pick_rays(vertices, 2000, np.random.default_rng(8), axis_aligned_fraction=0.2)
    hits = mesh.intersect(origins, directions)
    assert np.all(hits.triangle[hits.hit] >= len(degenerate))
    at_centre = mesh.intersect([[0.5, 0.5, -1.0]], [[0.0, 0.0, 1.0]])
    assert at_centre.triangle[0] >= len(degenerate) and at_centre.t[0] == pytest.approx(1.0)


def test_mesh_of_only_degenerate_triangles_never_hits():
    mesh = bvh.build(np.array([[0.0, 0, 0], [1, 0, 0], [2, 0, 0]]), np.array([[0, 1, 2], [0, 0, 1]]))
    assert mesh.triangle_count == 0
    hits = mesh.intersect([[1.0, 0.0, 1.0]], [[0.0, 0.0, -1.0]])
    assert hits.triangle[0] == -1 and np.isinf(hits.t[0])
    assert not mesh.occluded([[1.0, 0.0, 1.0]], [[0.0, 0.0, -1.0]])[0]
    assert len(mesh.intersect_all([[1.0, 0.0, 1.0]], [[0.0, 0.0, -1.0]])) == 0


def test_large_batch_uses_parallel_kernel_with_same_answers():
    vertices, faces = sample_mesh("gear.stl")
    origins, directions = pick_rays(vertices, 5000, np.random.default_rng(9))
    mesh = bvh.build(vertices, faces)
    batch = mesh.intersect(origins, directions)
    one_by_one = [mesh.intersect(origins[i], directions[i]).triangle[0] for i in range(0, 5000, 50)]
    np.testing.assert_array_equal(batch.triangle[::50], one_by_one)


def test_stats():
    vertices, faces = sample_mesh("terrain.obj")
    mesh = bvh.build(vertices, faces)
    stats = mesh.leaf_stats()
    # A four-wide tree of L leaves has between (L - 1) / 3 nodes (all full) and L - 1.
    assert (stats["leaves"] - 1) / 3 <= mesh.node_count < stats["leaves"] - 1
    assert 1 <= stats["mean"] <= stats["max"] <= mesh.config.max_leaf_size
    assert 1 <= mesh.depth < 64
    assert mesh.nbytes == mesh.nodes.nbytes + mesh.triangles.nbytes + mesh.face_index.nbytes
    assert mesh.nbytes / mesh.triangle_count <= 64
    assert mesh.sah_cost() > 1.0
    np.testing.assert_allclose(mesh.bounds, [vertices.min(axis=0), vertices.max(axis=0)], atol=1e-4)


def camera_rays(vertices, width=48, height=40, eye_direction=(0.3, 0.2, 1.0)):
    """A pinhole camera's rays, row-major: one origin, neighbouring directions."""
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    centre, radius = (lo + hi) / 2, np.linalg.norm(hi - lo)
    eye = centre + 1.5 * radius * np.asarray(eye_direction) / np.linalg.norm(eye_direction)
    forward = (centre - eye) / np.linalg.norm(centre - eye)
    right = np.cross(forward, [0.0, 1.0, 0.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    ys, xs = np.mgrid[0:height, 0:width]
    half = np.tan(np.radians(22.5))
    px = ((xs + 0.5) / width * 2 - 1) * half * width / height
    py = (1 - (ys + 0.5) / height * 2) * half
    directions = (forward + px[..., None] * right + py[..., None] * up).reshape(-1, 3)
    return np.tile(eye, (len(directions), 1)), directions


@pytest.mark.parametrize("name", ["torus.ply", "gear.stl", "terrain.obj"])
def test_camera_rays_against_oracle(name):
    vertices, faces = sample_mesh(name)
    origins, directions = camera_rays(vertices)
    hits = assert_agrees_with_oracle(vertices, faces, origins, directions)
    assert hits.hit.mean() > 0.05
    for tmin, tmax in [(0.0, 1.2), (1.1, np.inf)]:
        assert_agrees_with_oracle(vertices, faces, origins, directions, tmin, tmax)
    assert_agrees_with_oracle(vertices, faces, origins, directions, cull_backfaces=True)


def test_camera_rays_on_the_bunny_against_oracle():
    vertices, faces = shared_mesh("stanford-bunny")
    origins, directions = camera_rays(vertices, 24, 20)
    assert_agrees_with_oracle(vertices, faces, origins, directions)


def test_rays_from_one_origin_in_every_direction():
    vertices, faces = sample_mesh("torus.ply")
    rng = np.random.default_rng(10)
    directions = rng.normal(size=(4000, 3))
    origins = np.tile([0.0, 0.0, 0.1], (4000, 1))
    assert_agrees_with_oracle(vertices, faces, origins, directions)
