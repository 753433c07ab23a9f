"""Lines and points as pickable geometry (``bvh.queries.lines_points``): picks
against the float64 brute force of ``testkit/reference/lines.py`` on random
rays per tolerance, the rules between surfaces and lines, robustness cases,
instancing, filters and persistence."""

import numpy as np
import pytest

import bvh
from bvh.hits import PRIMITIVE_NAMES
from bvh.queries.lines_points import POINT, SEGMENT, TRIANGLE

from testkit.reference.lines import agreement
from testkit.scenes.lines_points import TOLERANCES, random_rays, random_scene


@pytest.mark.parametrize("tolerance", TOLERANCES)
def test_random_rays_agree_with_brute_force(tolerance):
    scene = random_scene()
    # The sphere shape is left out: the reference knows triangles, segments and points.
    sphere = [info.id for info in scene.objects if info.kind == "sphere"]
    origins, directions = random_rays(1500, 1)
    line_tol, line_slope, point_tol, point_slope = tolerance
    for n in (1500, 20):
        hits = scene.intersect(origins[:n], directions[:n], line_tolerance=line_tol, line_slope=line_slope,
                               point_tolerance=point_tol, point_slope=point_slope, exclude=sphere)
        agree, ambiguous, wrong = agreement(scene, hits, origins[:n], directions[:n], 0.0, np.inf,
                                            np.tile(tolerance, (n, 1)))
        assert wrong == [], f"{len(wrong)} rays disagree, e.g. ray {wrong[0]}"
        assert ambiguous <= max(2, n // 100)
    kinds = set(hits.primitive.tolist())
    assert {SEGMENT, POINT, TRIANGLE} <= set(scene.intersect(
        origins, directions, line_tolerance=line_tol, line_slope=line_slope, point_tolerance=point_tol,
        point_slope=point_slope).primitive.tolist()) | kinds


def test_hit_fields():
    scene = bvh.Scene()
    wire = scene.add_lines([[0, 0, 0], [2, 0, 0]], [[0, 1]])
    cloud = scene.add_points([[5, 0, 0]])
    a = scene.add_instance(lines=wire)
    b = scene.add_instance(points=cloud)
    hits = scene.intersect([[0.5, 0.05, 3], [5, 0, 3], [9, 9, 3]], [[0, 0, -2]] * 3, line_tolerance=0.1,
                           point_tolerance=0.1)
    assert hits.object.tolist() == [a, b, -1]
    assert [PRIMITIVE_NAMES[k] if k >= 0 else None for k in hits.primitive] == ["segment", "point", None]
    assert hits.set.tolist() == [wire, cloud, -1]
    assert hits.segment.tolist() == [0, -1, -1]
    assert hits.point_index.tolist() == [-1, 0, -1]
    assert hits.s[0] == 0.25 and np.isnan(hits.s[1])
    # t is the ray's parameter of closest approach; point lies on the primitive.
    assert hits.t[:2].tolist() == [1.5, 1.5]
    np.testing.assert_allclose(hits.point[:2], [[0.5, 0, 0], [5, 0, 0]])
    np.testing.assert_allclose(hits.distance[:2], [0.05, 0.0])
    assert np.isnan(hits.normal[:2]).all() and not hits.front_face.any()
    assert hits.mesh.tolist() == [-1, -1, -1] and hits.triangle.tolist() == [-1, -1, -1]


def test_surface_only_scene_reports_kinds():
    scene = bvh.Scene()
    scene.add_instance(scene.add_mesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]]))
    moved = np.eye(4)
    moved[0, 3] = 5
    scene.add_shape("sphere", radius=0.5, transform=moved)
    hits = scene.intersect([[0.2, 0.2, 1], [5, 0, 2], [9, 9, 9]], [[0, 0, -1]] * 3)
    assert hits.primitive.tolist() == [0, 1, -1]
    assert hits.distance[:2].tolist() == [0.0, 0.0] and np.isnan(hits.distance[2])
    assert hits.segment.tolist() == [-1] * 3 and hits.point_index.tolist() == [-1] * 3


def _floor_with_edge():
    """A floor z = 0 over [-10, 10]^2 and a line along its x axis on it."""
    scene = bvh.Scene()
    floor = scene.add_mesh([[-10, -10, 0], [10, -10, 0], [10, 10, 0], [-10, 10, 0]], [[0, 1, 2], [0, 2, 3]])
    scene.add_instance(floor)
    edge = scene.add_instance(lines=scene.add_lines([[-10, 0, 0], [10, 0, 0]], [[0, 1]]))
    return scene, edge


@pytest.mark.parametrize("elevation_deg", [60.0, 20.0, 3.0])
def test_line_on_a_face_wins_at_any_angle(elevation_deg):
    scene, edge = _floor_with_edge()
    angle = np.radians(elevation_deg)
    direction = np.array([0.0, np.cos(angle), -np.sin(angle)])
    # Rays landing short of the edge and beyond it, passing within 0.04 of it.
    for miss in (-0.04, -0.01, 0.01, 0.04):
        target = np.array([0.0, miss / np.sin(angle), 0.0])
        hits = scene.intersect(target - 5 * direction, direction, line_tolerance=0.05)
        assert hits.object[0] == edge and hits.primitive[0] == SEGMENT, miss


def test_line_behind_a_face_loses():
    scene = bvh.Scene()
    wall = scene.add_mesh([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], [[0, 1, 2], [0, 2, 3]])
    w = scene.add_instance(wall)
    wire = scene.add_lines([[-1, 0, -0.5], [1, 0, -0.5]], [[0, 1]])
    scene.add_instance(lines=wire)
    hits = scene.intersect([[0, 0.01, 2]], [[0, 0, -1]], line_tolerance=0.05)
    assert hits.object[0] == w and hits.primitive[0] == TRIANGLE
    # Within the tolerance of the face's plane, it is on the face: it wins.
    hits = scene.intersect([[0, 0.01, 2]], [[0, 0, -1]], line_tolerance=0.6)
    assert hits.primitive[0] == SEGMENT
    # In front of the face, it wins whatever the tolerance.
    scene.add_instance(lines=wire, transform=np.diag([1.0, 1, -1, 1]))
    hits = scene.intersect([[0, 0.01, 2]], [[0, 0, -1]], line_tolerance=0.05)
    assert hits.primitive[0] == SEGMENT and hits.t[0] == 1.5


def test_parallel_and_degenerate_segments():
    scene = bvh.Scene()
    wire = scene.add_lines([[0, 0.5, 2], [0, 0.5, 6], [1, 1, 1], [1, 1, 1]], [[0, 1], [2, 3]])
    scene.add_instance(lines=wire)
    # A ray parallel to segment 0, 0.5 away: the nearest point along the ray wins.
    hits = scene.intersect([[0, 0, 0]], [[0, 0, 1]], line_tolerance=0.5)
    assert hits.segment[0] == 0 and hits.t[0] == 2.0 and hits.s[0] == 0.0 and hits.distance[0] == 0.5
    # Starting inside the segment's span: t is the start.
    hits = scene.intersect([[0, 0, 3]], [[0, 0, 1]], line_tolerance=0.5)
    assert hits.segment[0] == 0 and hits.t[0] == 0.0 and hits.s[0] == 0.25
    # Going the other way along it: the far end of the segment is nearest.
    hits = scene.intersect([[0, 0, 10]], [[0, 0, -2]], line_tolerance=0.5)
    assert hits.segment[0] == 0 and hits.t[0] == 2.0 and hits.s[0] == 1.0
    # Just beyond the tolerance: no hit.
    assert scene.intersect([[0, 0, 0]], [[0, 0, 1]], line_tolerance=0.49).object[0] == -1
    # A zero-length segment is a point.
    hits = scene.intersect([[1, 1, 5]], [[0, 0, -1]], line_tolerance=0.0)
    assert hits.segment[0] == 1 and hits.t[0] == 4.0 and hits.distance[0] == 0.0


def test_a_segment_and_its_reverse_tie_to_the_lower_index():
    # The same edge drawn both ways (as segments 1 and 3): measured alike,
    # they tie exactly on every ray, and the lower index is the answer.
    rng = np.random.default_rng(4)
    ends = rng.uniform(-1, 1, size=(2, 3))
    scene = bvh.Scene()
    scene.add_instance(lines=scene.add_lines(np.vstack([ends, [[5, 5, 5], [6, 6, 6]]]),
                                             [[2, 3], [1, 0], [3, 2], [0, 1]]))
    origins = rng.uniform(-3, 3, size=(2000, 3))
    directions = ends.mean(axis=0) + rng.normal(scale=0.2, size=(2000, 3)) - origins
    hits = scene.intersect(origins, directions, line_tolerance=0.2)
    picked = hits.primitive == SEGMENT
    assert picked.sum() > 1000
    assert set(hits.segment[picked].tolist()) == {1}
    # s is measured along each segment as given: from its first vertex.
    chosen = ends[1] + hits.s[picked, None] * (ends[0] - ends[1])
    nearest = origins[picked] + hits.t[picked, None] * directions[picked]
    assert np.all(np.linalg.norm(chosen - nearest, axis=1) <= 0.2 * (1 + 1e-9))


def test_point_on_the_ray_origin_and_behind_it():
    scene = bvh.Scene()
    cloud = scene.add_points([[0, 0, 0], [0, 0, -1]])
    scene.add_instance(points=cloud)
    hits = scene.intersect([[0, 0, 0]], [[1, 0, 0]], point_tolerance=0.1)
    assert hits.point_index[0] == 0 and hits.t[0] == 0.0 and hits.distance[0] == 0.0
    # Behind the origin: the closest approach is clamped to tmin.
    hits = scene.intersect([[0, 0, -1.05]], [[0, 0, -1]], point_tolerance=0.1)
    assert hits.point_index[0] == 1 and hits.t[0] == 0.0
    assert scene.intersect([[0, 0, -1.2]], [[0, 0, -1]], point_tolerance=0.1).object[0] == -1
    # tmin moves the clamp.
    hits = scene.intersect([[0, 0, 1]], [[0, 0, -1]], tmin=1.5, point_tolerance=0.6)
    assert hits.point_index[0] == 0 and hits.t[0] == 1.5 and hits.distance[0] == 0.5
    hits = scene.intersect([[0, 0, 1]], [[0, 0, -1]], tmin=1.5, point_tolerance=0.4)
    assert hits.point_index[0] == 1 and hits.t[0] == 2.0


def test_far_from_origin():
    scene = bvh.Scene()
    base = np.array([1.0e5, -2.0e5, 3.0e5])
    wire = scene.add_lines(base + [[0, 0, 0], [1, 0, 0]], [[0, 1]])
    cloud = scene.add_points(base + [[0.5, 0.5, 0.0]])
    scene.add_instance(lines=wire)
    scene.add_instance(points=cloud)
    hits = scene.intersect(base + [[0.25, 0.003, 10], [0.5, 0.504, 10]], [[0, 0, -1]] * 2, line_tolerance=0.004,
                           point_tolerance=0.005)
    assert hits.primitive.tolist() == [SEGMENT, POINT]
    np.testing.assert_allclose(hits.distance, [0.003, 0.004], rtol=1e-6)
    assert scene.intersect(base + [[0.25, 0.005, 10]], [[0, 0, -1]], line_tolerance=0.004).object[0] == -1


def test_cone_tolerance_grows_with_distance():
    scene = bvh.Scene()
    cloud = scene.add_points([[0.1, 0, 10], [0.1, 0, 30]])
    scene.add_instance(points=cloud)
    # tol(t) = slope * t |d|: 0.01 * 10 = 0.1 at the first point, which is just within it.
    hits = scene.intersect([[0, 0, 0]], [[0, 0, 1]], point_slope=0.0101)
    assert hits.point_index[0] == 0
    # Narrower, it misses the first and reaches the second (0.0099 * 30 > 0.1).
    hits = scene.intersect([[0, 0, 0]], [[0, 0, 1]], point_slope=0.0099)
    assert hits.point_index[0] == 1
    assert scene.intersect([[0, 0, 0]], [[0, 0, 1]], point_slope=0.0033).object[0] == -1
    # A direction of another length gives the same world cone.
    hits = scene.intersect([[0, 0, 0]], [[0, 0, 7]], point_slope=0.0101)
    assert hits.point_index[0] == 0 and abs(hits.t[0] - 10 / 7) < 1e-12


def test_instances_measure_world_distances():
    scene = bvh.Scene()
    wire = scene.add_lines([[0, 0, 0], [1, 0, 0]], [[0, 1]])
    squash = np.diag([1.0, 0.1, 1.0, 1.0])
    oid = scene.add_instance(lines=wire, transform=squash @ np.eye(4))
    moved = np.eye(4)
    moved[:3, 3] = [0, 5, 0]
    other = scene.add_instance(lines=wire, transform=moved)
    # World distance 0.05 from the squashed instance (0.5 in its own space).
    hits = scene.intersect([[0.5, 0.05, 1], [0.5, 5.05, 1]], [[0, 0, -1]] * 2, line_tolerance=0.06)
    assert hits.object.tolist() == [oid, other]
    np.testing.assert_allclose(hits.distance, [0.05, 0.05])
    scene.set_transform(other, np.eye(4))
    hits = scene.intersect([[0.5, 5.05, 1]], [[0, 0, -1]], line_tolerance=0.06)
    assert hits.object[0] == -1


def test_filters():
    scene = bvh.Scene()
    cloud = scene.add_points([[0, 0, 0]])
    a = scene.add_instance(points=cloud, mask=0b01)
    m = np.eye(4)
    m[2, 3] = -1
    b = scene.add_instance(points=cloud, transform=m, mask=0b10)
    ray = ([[0, 0, 5]], [[0, 0, -1]])
    assert scene.intersect(*ray, point_tolerance=0.1).object[0] == a
    assert scene.intersect(*ray, point_tolerance=0.1, mask=0b10).object[0] == b
    assert scene.intersect(*ray, point_tolerance=0.1, exclude=[a]).object[0] == b
    assert scene.intersect(*ray, point_tolerance=0.1, objects=[b]).object[0] == b
    scene.set_pickable(a, False)
    assert scene.intersect(*ray, point_tolerance=0.1).object[0] == b
    scene.remove(b)
    assert scene.intersect(*ray, point_tolerance=0.1).object[0] == -1


def test_other_queries_skip_lines_and_points():
    scene = bvh.Scene()
    scene.add_instance(points=scene.add_points([[0, 0, 0]]))
    scene.add_instance(lines=scene.add_lines([[0, 0, 0], [1, 0, 0]], [[0, 1]]))
    assert not scene.occluded([[0, 0, 5]], [[0, 0, -1]])[0]
    assert len(scene.intersect_all([[0, 0, 5]], [[0, 0, -1]])) == 0
    assert scene.closest_point([[0, 0, 1]]).object[0] == -1
    kinds = sorted(info.kind for info in scene.objects)
    assert kinds == ["lines", "points"]


def test_persistence_round_trip(tmp_path):
    scene = random_scene(3)
    origins, directions = random_rays(300, 4)
    options = dict(line_tolerance=0.05, point_tolerance=0.05, line_slope=0.001)
    before = scene.intersect(origins, directions, **options)
    scene.save(tmp_path / "s")
    opened = bvh.Scene.open(tmp_path / "s")
    after = opened.intersect(origins, directions, **options)
    for field in ("object", "primitive", "segment", "point_index", "triangle", "t", "s", "distance"):
        np.testing.assert_array_equal(getattr(before, field), getattr(after, field), err_msg=field)
    assert [s["kind"] for s in opened.line_point_sets] == ["lines", "lines", "points"]
    assert opened.line_point_sets[0]["name"] == "path"
    # Saving again reuses the sets' files; a new set is saved too.
    opened.add_instance(points=opened.add_points([[9, 9, 9]]))
    opened.save(tmp_path / "s")
    again = bvh.Scene.open(tmp_path / "s")
    assert len(again.line_point_sets) == 4
    assert again.intersect([[9, 9, 10]], [[0, 0, -1]], point_tolerance=0.01).primitive[0] == POINT


def test_add_scene_copies_sets():
    scene = random_scene(5)
    copy = bvh.Scene()
    copy.add_scene(scene)
    origins, directions = random_rays(200, 6)
    a = scene.intersect(origins, directions, line_tolerance=0.05, point_tolerance=0.05)
    b = copy.intersect(origins, directions, line_tolerance=0.05, point_tolerance=0.05)
    np.testing.assert_array_equal(a.primitive, b.primitive)
    np.testing.assert_array_equal(a.t, b.t)


def test_refusals():
    scene = bvh.Scene()
    with pytest.raises(ValueError, match="segment 0 refers to vertex 5"):
        scene.add_lines([[0, 0, 0]], [[0, 5]])
    with pytest.raises(ValueError, match="segments must have shape"):
        scene.add_lines([[0, 0, 0]], np.zeros((0, 2), int))
    with pytest.raises(ValueError, match="points must have shape"):
        scene.add_points(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="NaN"):
        scene.add_points([[np.nan, 0, 0]])
    cloud = scene.add_points([[0, 0, 0]])
    with pytest.raises(ValueError, match="is a points set, not a lines set"):
        scene.add_instance(lines=cloud)
    with pytest.raises(ValueError, match="places one thing"):
        scene.add_instance(0, points=cloud)
    with pytest.raises(bvh.UnknownIdError):
        scene.add_instance(points=7)
    scene.add_instance(points=cloud)
    with pytest.raises(ValueError, match="line_tolerance must be finite and >= 0"):
        scene.intersect([[0, 0, 1]], [[0, 0, -1]], line_tolerance=-1)
    with pytest.raises(ValueError, match="point_slope must be below 1"):
        scene.intersect([[0, 0, 1]], [[0, 0, -1]], point_slope=1.5)
    with pytest.raises(ValueError, match="one number or one per ray"):
        scene.intersect([[0, 0, 1]], [[0, 0, -1]], point_tolerance=[0.1, 0.2])


def test_reference_self_check():
    """The brute force's closest approach against a dense sampling."""
    rng = np.random.default_rng(9)
    from testkit.reference.lines import segment_approach
    for _ in range(50):
        o = rng.normal(size=3)
        d = rng.normal(size=3)
        seg = rng.normal(size=(1, 2, 3))
        t, s, p, dist = segment_approach(o, d, seg, 0.0)
        ts = np.linspace(0, 10, 2001)
        ss = np.linspace(0, 1, 401)
        q = o + ts[:, None] * d
        pts = seg[0, 0] + ss[:, None] * (seg[0, 1] - seg[0, 0])
        sampled = np.sqrt(((q[:, None] - pts[None]) ** 2).sum(-1)).min()
        assert dist[0] <= sampled + 1e-12


# ------------------------------------------------------------------ loaders


def test_load_obj_lines():
    text = b"v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 0 -1\nv 1 0 -1\nv 0 1 -1\nf 4 5 6\nl 1 2 -4\n"
    scene = bvh.load(text, file_type="obj")
    assert sorted(o.kind for o in scene.objects) == ["lines", "mesh"]
    (line_set,) = scene.line_point_sets
    assert line_set["count"] == 2
    np.testing.assert_array_equal(scene.set_segments(line_set["id"]), [[0, 1], [1, 2]])
    hits = scene.intersect([[1, 0.5, 1], [0.1, 0.1, 1]], [[0, 0, -1]] * 2, line_tolerance=0.05)
    assert hits.primitive.tolist() == [SEGMENT, TRIANGLE] and hits.s[0] == 0.5
    with pytest.raises(ValueError, match="line element refers to vertex 9"):
        bvh.load(b"v 0 0 0\nv 1 0 0\nl 1 9\n", file_type="obj")


def test_load_ply_point_cloud():
    trimesh = pytest.importorskip("trimesh")
    points = np.random.default_rng(0).uniform(size=(50, 3))
    scene = bvh.load(trimesh.PointCloud(points).export(file_type="ply"), file_type="ply")
    (info,) = scene.objects
    assert info.kind == "points"
    np.testing.assert_allclose(scene.set_vertices(info.params["points"]), points, rtol=1e-6)
    hits = scene.intersect(points[7] + [0, 0, 5], [0, 0, -1], point_tolerance=1e-4)
    assert hits.point_index[0] == 7


def test_load_gltf_lines_and_points():
    trimesh = pytest.importorskip("trimesh")
    from trimesh.path.entities import Line
    path = trimesh.path.Path3D(entities=[Line([0, 1, 2])], vertices=np.array([[0, 0, 5], [1, 0, 5], [1, 1, 5.0]]))
    cloud = trimesh.PointCloud(np.array([[3.0, 3, 3], [4, 4, 4]]))
    glb = trimesh.Scene([path, cloud, trimesh.creation.box()]).export(file_type="glb")
    scene = bvh.load(glb, file_type="glb")
    assert sorted(o.kind for o in scene.objects) == ["lines", "mesh", "points"]
    hits = scene.intersect([[0.5, 0.01, 9], [3, 3, 9], [0.1, 0.1, 9]], [[0, 0, -1]] * 3, line_tolerance=0.02,
                           point_tolerance=0.02)
    assert hits.primitive.tolist() == [SEGMENT, POINT, TRIANGLE]
    np.testing.assert_allclose(hits.point[0], [0.5, 0, 5])


# ------------------------------------------------------------------ pixel tolerances


def test_camera_pixel_tolerance():
    camera = bvh.Camera.pinhole([0, 0, 10], [0, 0, 0], [0, 1, 0], 60.0, 800, 600)
    world, slope = camera.pixel_tolerance([[400, 300]], 3)
    assert world.tolist() == [0.0]
    # At the centre the next pixel's ray is atan(2 tan(30 deg) / 600) away.
    assert slope[0] == pytest.approx(np.tan(3 * np.arctan(2 * np.tan(np.radians(30)) / 600)), rel=1e-9)
    # Off the centre a pixel spans a smaller angle.
    assert camera.pixel_tolerance([[0, 0]], 3)[1][0] < slope[0]
    ortho = bvh.Camera.from_matrices(np.eye(4), np.diag([0.1, 0.1, -0.01, 1.0]), 200, 100)
    world, slope = ortho.pixel_tolerance([[50, 50]], 2)
    # 20 x 20 world units over 200 x 100 pixels: 0.1 by 0.2, their geometric mean.
    assert world[0] == pytest.approx(2 * np.sqrt(0.1 * 0.2)) and slope.tolist() == [0.0]
    with pytest.raises(ValueError, match="pixels >= 0"):
        camera.pixel_tolerance([[1, 1]], -1)
    with pytest.raises(ValueError, match="45 degrees"):
        camera.pixel_tolerance([[400, 300]], 1000)


@pytest.mark.parametrize("distance", [2.0, 50.0])
def test_pixel_tolerance_picks_the_same_pixels_at_any_distance(distance):
    camera = bvh.Camera.pinhole([0, 0, 0], [0, 0, -1], [0, 1, 0], 60.0, 640, 480)
    pixel_size = 2 * np.tan(np.radians(30)) / 480
    scene = bvh.Scene()
    # A point 5 pixels right of the centre ray at this distance.
    scene.add_instance(points=scene.add_points([[5 * pixel_size * distance, 0, -distance]]))
    centre = [[320, 240]]
    origins, directions = camera.rays(centre)
    for pixels, hit in ((5.1, True), (4.9, False)):
        world, slope = camera.pixel_tolerance(centre, pixels)
        found = scene.intersect(origins, directions, point_tolerance=world, point_slope=slope)
        assert found.hit[0] == hit, pixels


def test_alpha_tested_faces_let_rays_through_to_lines_and_points():
    from testkit.scenes.alpha import checker_card_scene, grid_rays

    glb, _ = checker_card_scene()
    scene = bvh.load(glb, file_type="glb")
    origins, directions = grid_rays(0.0, 1.0, 0.0, 1.0)
    through = scene.intersect(origins, directions).object != scene.intersect(origins, directions,
                                                                             alpha_test=False).object
    assert 0 < through.sum() < len(origins)
    # A point under every texel centre, half-way between the card and the wall.
    cloud = scene.add_instance(points=scene.add_points(origins * [1, 1, 0] + [0, 0, -0.5]))
    hits = scene.intersect(origins, directions, point_tolerance=0.01)
    assert (hits.object[through] == cloud).all() and (hits.primitive[through] == POINT).all()
    assert (hits.primitive[~through] == TRIANGLE).all()
    blocked = scene.intersect(origins, directions, point_tolerance=0.01, alpha_test=False)
    assert (blocked.primitive == TRIANGLE).all()
