"""Tests of ``Scene.id_buffer`` (``bvh.queries.idbuffer``): every pixel against
``Scene.intersect`` of the camera's ray through its centre."""

import numpy as np
import pytest

import bvh
from bvh.camera import Camera, look_at, pixel_centers
from tests.test_lasso import random_scene

WIDTH, HEIGHT = 96, 64


def scene_with_shapes() -> bvh.Scene:
    scene = random_scene(4)
    moved = np.eye(4)
    moved[:3, 3] = [1.0, 1.0, 1.5]
    scene.add_shape("sphere", moved, radius=0.6)
    moved[:3, 3] = [-1.5, 0.5, -1.0]
    scene.add_shape("box", moved, size=[0.8, 0.5, 1.2], mask=2)
    return scene


def orthographic() -> Camera:
    projection = np.diag([1 / 3.0, 1 / 2.0, -0.1, 1.0])
    projection[2, 3] = -1.0
    return Camera.from_matrices(look_at([5.0, -4.0, 3.0], [0, 0, 0], [0, 0, 1]), projection, WIDTH, HEIGHT)


CAMERAS = {
    "pinhole": lambda: Camera.pinhole([4.0, -5.0, 3.0], [0.0, 0.0, 0.0], [0, 0, 1], 50.0, WIDTH, HEIGHT),
    "orthographic": orthographic,
}


@pytest.mark.parametrize("camera_name", sorted(CAMERAS))
def test_every_pixel_is_the_pick_through_its_centre(camera_name):
    scene = scene_with_shapes()
    camera = CAMERAS[camera_name]()
    buffer = scene.id_buffer(camera, normals=True, barycentrics=True)
    hits = scene.intersect(*camera.rays(pixel_centers(WIDTH, HEIGHT)))
    assert (buffer.width, buffer.height) == (WIDTH, HEIGHT)
    assert buffer.object.dtype == np.int32 and buffer.triangle.dtype == np.int32
    assert buffer.depth.dtype == np.float32 and buffer.normal.dtype == np.float16
    assert 0.05 < (buffer.object >= 0).mean() < 0.95, "the image should show hits and misses"
    assert (hits.mesh < 0)[hits.object >= 0].any(), "the image should show a shape"
    assert np.array_equal(buffer.object, hits.object)
    assert np.array_equal(buffer.triangle, hits.triangle)
    assert np.array_equal(buffer.depth, hits.t.astype(np.float32))
    hit = hits.object >= 0
    assert np.isinf(buffer.depth[~hit]).all() and np.isnan(buffer.normal[~hit].astype(float)).all()
    assert np.allclose(buffer.normal[hit].astype(float), hits.normal[hit], atol=2e-3)
    assert np.array_equal(buffer.barycentric, np.stack([hits.u, hits.v], axis=1).astype(np.float32), equal_nan=True)


def test_filters_and_the_plain_buffer():
    scene = scene_with_shapes()
    camera = CAMERAS["pinhole"]()
    rays = camera.rays(pixel_centers(WIDTH, HEIGHT))
    buffer = scene.id_buffer(camera, mask=1, exclude=[0], cull_backfaces=True)
    hits = scene.intersect(*rays, mask=1, exclude=[0], cull_backfaces=True)
    assert buffer.normal is None and buffer.barycentric is None
    assert np.array_equal(buffer.object, hits.object) and 0 not in buffer.object
    near = scene.id_buffer(camera, tmax=6.0)
    assert np.array_equal(near.object, scene.intersect(*rays, tmax=6.0).object)


def test_an_empty_scene_misses_everywhere():
    buffer = bvh.Scene().id_buffer(CAMERAS["pinhole"](), normals=True, barycentrics=True)
    assert (buffer.object == -1).all() and (buffer.triangle == -1).all() and np.isinf(buffer.depth).all()
    assert np.isnan(buffer.normal.astype(float)).all() and np.isnan(buffer.barycentric).all()


def test_transparent_texels_let_the_pixels_rays_through():
    # The alpha-tested checkerboard card before a wall (testkit/scenes/alpha.py), seen from the front.
    from testkit.scenes.alpha import checker_card_scene

    scene = bvh.load(checker_card_scene()[0], file_type="glb")
    card = next(info.id for info in scene.objects if info.name == "card")
    wall = next(info.id for info in scene.objects if info.name == "wall")
    camera = Camera.pinhole([0.5, 0.5, 4.0], [0.5, 0.5, 0.0], [0, 1, 0], 20.0, 48, 48)
    rays = camera.rays(pixel_centers(48, 48))
    for alpha_test in (True, False):
        buffer = scene.id_buffer(camera, alpha_test=alpha_test)
        assert np.array_equal(buffer.object, scene.intersect(*rays, alpha_test=alpha_test).object)
        assert card in buffer.object and wall in buffer.object
    # Half the card's texels are transparent: the wall shows through them.
    through = (scene.id_buffer(camera).object == card).sum()
    whole = (scene.id_buffer(camera, alpha_test=False).object == card).sum()
    assert abs(through - whole / 2) < 0.1 * whole
