"""Tests of ``bvh.queries.lasso`` and ``Scene.select(lasso=...)``: against the naive
reference of ``testkit/reference/lasso.py`` on seeded random polygons, against
the rectangle's frustum selection, and the pixels a lasso covers."""

import numpy as np
import pytest

import bvh
from bvh.camera import Camera
from bvh.queries.lasso import MAX_POINTS, Lasso, check_polygon, pixels_in_polygon
from testkit.reference.lasso import ProjectedTriangles, point_in_polygon, star_polygon, world_triangles

WIDTH, HEIGHT = 160, 120


def random_scene(seed: int) -> bvh.Scene:
    """Three meshes of random triangles in [-1, 1]^3, placed five times with
    turns, non-uniform scales and a mirror."""
    rng = np.random.default_rng(seed)
    scene = bvh.Scene()
    meshes = []
    for _ in range(3):
        centres = rng.uniform(-1.0, 1.0, (40, 1, 3))
        vertices = (centres + rng.normal(0.0, 0.15, (40, 3, 3))).reshape(-1, 3)
        meshes.append(scene.add_mesh(vertices, np.arange(120).reshape(40, 3)))
    for k in range(5):
        angle = rng.uniform(0.0, 2.0 * np.pi)
        turn = np.array([[np.cos(angle), -np.sin(angle), 0.0], [np.sin(angle), np.cos(angle), 0.0], [0, 0, 1.0]])
        transform = np.eye(4)
        transform[:3, :3] = turn @ np.diag(rng.uniform(0.5, 1.5, 3) * (-1.0 if k == 3 else 1.0))
        transform[:3, 3] = rng.uniform(-1.5, 1.5, 3)
        scene.add_instance(meshes[k % 3], transform)
    return scene


CAMERAS = {
    "outside": lambda: Camera.pinhole([4.0, -5.0, 3.0], [0.0, 0.0, 0.0], [0, 0, 1], 50.0, WIDTH, HEIGHT),
    # The eye among the triangles, near and far planes cutting many of them.
    "inside": lambda: Camera.pinhole([0.3, -0.8, 0.2], [0.0, 1.0, 0.0], [0, 0, 1], 80.0, WIDTH, HEIGHT,
                                     near=0.4, far=2.5),
}


def selected(selection) -> set:
    return set(zip(selection.object.tolist(), selection.triangle.tolist()))


@pytest.mark.parametrize("camera_name", sorted(CAMERAS))
def test_lasso_matches_the_reference_on_random_polygons(camera_name):
    scene = random_scene(7)
    camera = CAMERAS[camera_name]()
    triangles, objects, faces = world_triangles(scene)
    reference = ProjectedTriangles(camera, triangles)
    if camera_name == "inside":
        assert reference.cut.sum() > 20, "the near and far planes should cut triangles"
    rng = np.random.default_rng(11)
    compared = 0
    for _ in range(30):
        polygon = star_polygon(rng, rng.uniform([0, 0], [WIDTH, HEIGHT]), rng.uniform(5, 90), int(rng.integers(3, 30)))
        lasso = Lasso(camera, polygon)
        for containment in ("crossing", "window"):
            expected = reference.select(polygon, containment == "window")
            got = scene.select(mode="triangles", containment=containment, lasso=lasso)
            assert selected(got) == set(zip(objects[expected].tolist(), faces[expected].tolist()))
            # "objects" mode: an object that has any (crossing) or all (window) of its triangles.
            per_object = scene.select(containment=containment, lasso=lasso)
            want = sorted(oid for oid in np.unique(objects).tolist()
                          if (expected[objects == oid].all() if containment == "window"
                              else expected[objects == oid].any()))
            assert per_object.object.tolist() == want
            assert (per_object.triangle == -1).all()
            compared += int(expected.sum())
    assert compared > 100, "the polygons should select something"


def test_a_rectangular_lasso_selects_what_the_rectangle_selects():
    scene = random_scene(3)
    camera = CAMERAS["outside"]()
    rng = np.random.default_rng(5)
    for _ in range(20):
        x0, x1 = np.sort(rng.uniform(-10, WIDTH + 10, 2))
        y0, y1 = np.sort(rng.uniform(-10, HEIGHT + 10, 2))
        lasso = Lasso(camera, [[x0, y0], [x1, y0], [x1, y1], [x0, y1]])
        planes = camera.frustum([x0, y0, x1, y1])
        for containment in ("crossing", "window"):
            by_rect = scene.select(planes, mode="triangles", containment=containment)
            by_lasso = scene.select(mode="triangles", containment=containment, lasso=lasso)
            assert selected(by_rect) == selected(by_lasso)


def test_a_concave_lasso_leaves_out_its_notch():
    # A camera looking down on two unit triangles side by side; a "U" lasso
    # around both whose notch holds the second: only the first is taken.
    scene = bvh.Scene()
    mesh = scene.add_mesh([[-1.0, -0.2, 0.0], [-0.6, -0.2, 0.0], [-0.8, 0.2, 0.0],
                           [0.6, -0.2, 0.0], [1.0, -0.2, 0.0], [0.8, 0.2, 0.0]], [[0, 1, 2], [3, 4, 5]])
    scene.add_instance(mesh)
    camera = Camera.pinhole([0.0, 0.0, 5.0], [0.0, 0.0, 0.0], [0, 1, 0], 40.0, 200, 200)
    # In pixels the triangles sit near x = 45..67 and 133..155, y = 89..111.
    u_shape = [[10, 10], [190, 10], [190, 190], [165, 190], [165, 60], [125, 60], [125, 190], [10, 190]]
    lasso = Lasso(camera, u_shape)
    for containment in ("crossing", "window"):
        assert selected(scene.select(mode="triangles", containment=containment, lasso=lasso)) == {(0, 0)}
    notch = Lasso(camera, [[125, 10], [190, 10], [190, 190], [125, 190], [125, 100], [175, 100], [175, 95],
                           [125, 95]])
    assert selected(scene.select(mode="triangles", lasso=notch)) == {(0, 1)}
    assert selected(scene.select(mode="triangles", containment="window", lasso=notch)) == set()


def test_shapes_in_a_lasso():
    scene = bvh.Scene()
    box = scene.add_shape("box", np.eye(4), size=[1.0, 1.0, 1.0])
    moved = np.eye(4)
    moved[:3, 3] = [1.5, 0.0, 0.0]
    sphere = scene.add_shape("sphere", moved, radius=0.5)
    camera = Camera.pinhole([0.0, -6.0, 0.0], [0.0, 0.0, 0.0], [0, 0, 1], 60.0, 200, 200)
    around_box = Lasso(camera, [[80, 80], [120, 80], [120, 120], [80, 120]])
    assert scene.select(lasso=around_box).object.tolist() == [box]
    assert scene.select(lasso=around_box, containment="window").object.tolist() == [box]
    inside_box = Lasso(camera, [[98, 98], [102, 98], [100, 102]])
    assert scene.select(lasso=inside_box).object.tolist() == [box]
    assert scene.select(lasso=inside_box, containment="window").object.tolist() == []
    everything = Lasso(camera, [[0, 0], [200, 0], [200, 200], [0, 200]])
    assert scene.select(lasso=everything, containment="window").object.tolist() == [box, sphere]
    # A camera inside the box: the region lies wholly in it, no face crosses a tiny lasso.
    inner = Camera.pinhole([0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0, 0, 1], 60.0, 200, 200, near=0.01, far=0.1)
    assert scene.select(lasso=Lasso(inner, [[99, 99], [101, 99], [100, 101]])).object.tolist() == [box]


def test_lasso_pixels_are_the_centres_pnpoly_takes():
    rng = np.random.default_rng(2)
    for trial in range(12):
        polygon = star_polygon(rng, rng.uniform([-10, -10], [50, 40]), rng.uniform(3, 40), int(rng.integers(3, 12)))
        stride = 1 + trial % 3
        got = pixels_in_polygon(polygon, 48, 36, stride)
        want = [[x, y] for y in range(0, 36, stride) for x in range(0, 48, stride)
                if point_in_polygon(polygon, x + 0.5, y + 0.5)]
        assert got.tolist() == want


def test_a_lasso_that_crosses_itself_takes_its_odd_parts():
    # A figure eight: both loops inside (even-odd), the crossing point's centre pixel too.
    eight = [[0, 0], [10, 10], [10, 0], [0, 10]]
    got = {tuple(p) for p in pixels_in_polygon(eight, 10, 10).tolist()}
    assert (0, 5) in got and (9, 5) in got and (5, 1) not in got


@pytest.mark.parametrize("polygon, message", [
    ([[0, 0], [1, 1]], "at least 3 distinct points"),
    ([[0, 0], [1, 1], [0, 0]], "at least 3 distinct points"),
    ([[0, 0], [1, 1], [float("nan"), 2]], "polygon[2] is not a finite point"),
    ([[0, 0], [1, 1], [2, 2]], "encloses no area"),
    ([[0, 0], [3, 0], [3, 0]], "encloses no area"),
    ([[0, 0, 0], [1, 1, 1], [2, 0, 2]], "shape (n, 2)"),
    ([[0, 0], [1, 0], [2e9, 1]], "within +-1e+09"),
])
def test_bad_polygons_are_refused_in_words(polygon, message):
    with pytest.raises(ValueError) as error:
        check_polygon(polygon)
    assert message in str(error.value)


def test_too_many_points_and_an_explicit_close():
    circle = np.stack([np.cos(np.linspace(0, 6, MAX_POINTS + 1)), np.sin(np.linspace(0, 6, MAX_POINTS + 1))], axis=1)
    with pytest.raises(ValueError, match=f"at most {MAX_POINTS}"):
        check_polygon(circle)
    closed = check_polygon([[0, 0], [4, 0], [0, 4], [0, 0]])
    assert closed.shape == (3, 2)
