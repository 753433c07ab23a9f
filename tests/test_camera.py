"""Tests of ``bvh.camera``: pixels to world rays, pixel rectangles to frusta.

Besides the pinhole geometry (the centre ray, the field of view at the edges
and corners, the image's top-left origin), every kind of projection the
service may be sent (pinhole with finite and infinite far plane, off-axis,
orthographic, a negated projection, a view with scale) is checked the same
way: world points made from known NDC coordinates must lie on the ray of the
pixel they project to, inside the frustum of a rectangle around them, and
outside it when they project beyond the rectangle or its depth range.
"""

import dataclasses
import math

import numpy as np
import pytest

from bvh.queries import frustum as F
from bvh.camera import MAX_IMAGE_SIZE, Camera, look_at, perspective, pixel_centers

W, H = 640, 480
POSITION = np.array([3.0, -4.0, 2.0])
TARGET = np.array([0.5, 0.5, 0.25])
UP = np.array([0.0, 0.0, 1.0])


def unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def basis(position=POSITION, target=TARGET, up=UP):
    forward = unit(np.asarray(target) - position)
    right = unit(np.cross(forward, up))
    return forward, right, np.cross(right, forward)


def frustum_matrix(left, right, bottom, top, near, far):
    """glFrustum."""
    return np.array([
        [2 * near / (right - left), 0, (right + left) / (right - left), 0],
        [0, 2 * near / (top - bottom), (top + bottom) / (top - bottom), 0],
        [0, 0, -(far + near) / (far - near), -2 * far * near / (far - near)],
        [0, 0, -1, 0],
    ])


def ortho_matrix(left, right, bottom, top, near, far):
    """glOrtho."""
    return np.array([
        [2 / (right - left), 0, 0, -(right + left) / (right - left)],
        [0, 2 / (top - bottom), 0, -(top + bottom) / (top - bottom)],
        [0, 0, -2 / (far - near), -(far + near) / (far - near)],
        [0, 0, 0, 1],
    ])


def cameras():
    """(name, camera, whether its far plane is finite) of every kind."""
    view = look_at(POSITION, TARGET, UP)
    scaled_view = np.diag([2.0, 2.0, 2.0, 1.0]) @ view
    pinhole = Camera.pinhole(POSITION, TARGET, UP, 50, W, H, near=0.1, far=30.0)
    return [
        ("pinhole", pinhole, True),
        ("pinhole, infinite far", Camera.pinhole(POSITION, TARGET, UP, 50, W, H), False),
        ("off-axis", Camera.from_matrices(view, frustum_matrix(-0.05, 0.15, -0.02, 0.1, 0.1, 40.0), W, H), True),
        ("orthographic", Camera.from_matrices(view, ortho_matrix(-4, 3, -2, 3, 0.5, 20.0), W, H), True),
        ("negated projection", Camera.from_matrices(view, -pinhole.projection, W, H), True),
        ("view with scale", Camera.from_matrices(scaled_view, perspective(70, W / H, 0.2, 50.0), W, H), True),
        ("tall image", Camera.pinhole(POSITION, TARGET, UP, 30, 7, 300, near=0.5), False),
        # a projective "view": only the product of the matrices matters
        ("projection in the view", Camera.from_matrices(pinhole.projection @ view, np.eye(4), W, H), True),
    ]


CAMERAS = cameras()
IDS = [c[0] for c in CAMERAS]


def unproject(camera, ndc):
    """World points of NDC coordinates ``(N, 3)``."""
    h = np.concatenate([ndc, np.ones((len(ndc), 1))], axis=1) @ np.linalg.inv(camera.projection @ camera.view).T
    return h[:, :3] / h[:, 3:]


def ndc_to_pixels(camera, ndc):
    return np.stack([(ndc[:, 0] + 1) / 2 * camera.width, (1 - ndc[:, 1]) / 2 * camera.height], axis=1)


def max_depth(finite_far):
    # NDC z near 1 of an infinite projection is very far away
    return 1.0 if finite_far else 0.9


# --------------------------------------------------------------- pinhole


def test_centre_ray_goes_to_the_target():
    camera = Camera.pinhole(POSITION, TARGET, UP, 50, W, H)
    origins, directions = camera.rays([W / 2, H / 2])
    assert origins.shape == directions.shape == (1, 3)
    assert origins.dtype == directions.dtype == np.float64
    assert np.allclose(origins[0], POSITION, rtol=0, atol=1e-12)
    assert np.allclose(directions[0], unit(TARGET - POSITION), rtol=0, atol=1e-12)
    assert np.array_equal(camera.position, camera.rays([[1, 2]])[0][0])
    assert not camera.orthographic


@pytest.mark.parametrize("fov", [10.0, 50.0, 120.0, 179.0])
def test_edges_and_corners_subtend_the_field_of_view(fov):
    camera = Camera.pinhole(POSITION, TARGET, UP, fov, W, H)
    forward, right, up = basis()
    tan_y = math.tan(math.radians(fov) / 2)
    tan_x = tan_y * W / H
    pixels = [[W / 2, 0], [W / 2, H], [0, H / 2], [W, H / 2], [0, 0], [W, H]]
    expected = unit([
        forward + tan_y * up,  # top edge: pixel y = 0 is the top of the image
        forward - tan_y * up,
        forward - tan_x * right,  # left edge: pixel x = 0
        forward + tan_x * right,
        forward + tan_y * up - tan_x * right,  # the top left corner
        forward - tan_y * up + tan_x * right,
    ])
    _, directions = camera.rays(pixels)
    assert np.allclose(directions, expected, rtol=0, atol=1e-12)
    angle = math.degrees(math.acos(directions[0] @ directions[1]))
    assert angle == pytest.approx(fov, abs=1e-9)


def test_pixel_centres():
    centres = pixel_centers(3, 2)
    assert centres.dtype == np.float64
    assert centres.tolist() == [[0.5, 0.5], [1.5, 0.5], [2.5, 0.5], [0.5, 1.5], [1.5, 1.5], [2.5, 1.5]]
    camera = Camera.pinhole(POSITION, TARGET, UP, 40, 3, 2)
    _, directions = camera.rays(centres)
    image = directions.reshape(2, 3, 3)
    _, right, up = basis()
    # x grows to the right, y downwards
    assert (np.diff(image @ right, axis=1) > 0).all() and (np.diff(image @ up, axis=0) < 0).all()
    # the middle of a 3-pixel-wide image is the centre of pixel column 1
    assert np.allclose(image[:, 1] @ right, 0.0, atol=1e-12)


def test_default_near_and_far_change_no_ray():
    pixels = np.random.default_rng(0).uniform(-50, 700, (100, 2))
    finite = Camera.pinhole(POSITION, TARGET, UP, 50, W, H, near=0.1, far=30.0).rays(pixels)
    default = Camera.pinhole(POSITION, TARGET, UP, 50, W, H).rays(pixels)
    assert np.allclose(default[0], finite[0], rtol=0, atol=1e-14)
    assert np.allclose(default[1], finite[1], rtol=0, atol=1e-12)


def test_from_matrices_gives_identical_rays_and_frusta():
    camera = Camera.pinhole(POSITION, TARGET, UP, 50, W, H, near=0.1, far=30.0)
    again = Camera.from_matrices(camera.view, camera.projection, W, H)
    assert again == camera and again is not camera
    pixels = pixel_centers(W, H)[::997]
    for mine, theirs in zip(camera.rays(pixels), again.rays(pixels)):
        assert np.array_equal(mine, theirs)
    assert np.array_equal(camera.frustum([10, 20, 30, 40]), again.frustum([10, 20, 30, 40]))
    assert Camera.from_matrices(camera.view, camera.projection, W, H + 1) != camera
    assert Camera.from_matrices(camera.view.tolist(), camera.projection.tolist(), np.int64(W), H) == camera


def test_only_the_product_of_the_matrices_matters():
    pinhole = Camera.pinhole(POSITION, TARGET, UP, 50, W, H, near=0.1, far=30.0)
    folded = Camera.from_matrices(pinhole.projection @ pinhole.view, np.eye(4), W, H)
    pixels = np.random.default_rng(5).uniform(-100, 700, (200, 2))
    for mine, theirs in zip(pinhole.rays(pixels), folded.rays(pixels)):
        assert np.allclose(mine, theirs, rtol=0, atol=1e-12)
    assert np.allclose(pinhole.frustum([5, 6, 70, 80]), folded.frustum([5, 6, 70, 80]), rtol=0, atol=1e-12)
    assert np.allclose(folded.position, POSITION, rtol=0, atol=1e-12)


def test_orthographic_rays_are_parallel_and_start_on_the_near_plane():
    view = look_at(POSITION, TARGET, UP)
    camera = Camera.from_matrices(view, ortho_matrix(-4, 3, -2, 3, 0.5, 20.0), W, H)
    assert camera.orthographic and camera.position is None
    forward, right, up = basis()
    origins, directions = camera.rays([[W / 2, H / 2], [0, 0], [W, H], [100.5, 7.5]])
    assert np.allclose(directions, forward, rtol=0, atol=1e-12)
    near_centre = POSITION + 0.5 * forward
    assert np.allclose(origins[1], near_centre - 4 * right + 3 * up, atol=1e-12)
    assert np.allclose(origins[2], near_centre + 3 * right - 2 * up, atol=1e-12)
    assert np.allclose((origins - near_centre) @ forward, 0.0, atol=1e-12)


def test_pixels_outside_the_image_and_empty_batches():
    camera = Camera.pinhole(POSITION, TARGET, UP, 50, W, H)
    origins, directions = camera.rays([[-100, -100], [W + 100, H / 2]])
    _, right, _ = basis()
    assert directions[0] @ right < 0 < directions[1] @ right
    origins, directions = camera.rays(np.empty((0, 2)))
    assert origins.shape == directions.shape == (0, 3)


def test_camera_is_immutable():
    camera = Camera.pinhole(POSITION, TARGET, UP, 50, W, H)
    with pytest.raises(dataclasses.FrozenInstanceError):
        camera.width = 10
    with pytest.raises(ValueError, match="read-only"):
        camera.view[0, 0] = 2.0
    position = camera.position
    position[0] = 99.0
    assert camera.position[0] == POSITION[0]


# ---------------------------------------------------- every kind of camera


@pytest.mark.parametrize("name, camera, finite_far", CAMERAS, ids=IDS)
def test_points_lie_on_the_rays_of_their_pixels(name, camera, finite_far):
    rng = np.random.default_rng(1)
    ndc = rng.uniform([-1.3, -1.3, -1.0], [1.3, 1.3, max_depth(finite_far)], (500, 3))
    points = unproject(camera, ndc)
    origins, directions = camera.rays(ndc_to_pixels(camera, ndc))
    assert np.allclose(np.linalg.norm(directions, axis=1), 1.0, rtol=0, atol=1e-14)
    offsets = points - origins
    along = (offsets * directions).sum(axis=1)
    scale = np.linalg.norm(offsets, axis=1)
    # in front of the origin, and on the line to 1e-9 relative
    assert (along > -1e-9 * scale).all()
    assert np.allclose(np.linalg.norm(np.cross(offsets, directions), axis=1) / np.maximum(scale, 1.0), 0.0, atol=1e-9)
    if not camera.orthographic:
        assert (origins == camera.position).all()


@pytest.mark.parametrize("name, camera, finite_far", CAMERAS, ids=IDS)
def test_frustum_holds_exactly_the_points_projected_inside_the_rect(name, camera, finite_far):
    rng = np.random.default_rng(2)
    x = np.sort(rng.uniform(-1.2, 1.2, 2))
    y = np.sort(rng.uniform(-1.2, 1.2, 2))
    rect = np.concatenate(ndc_to_pixels(camera, np.array([[x[0], y[1], 0], [x[1], y[0], 0]])))
    planes = camera.frustum(rect)
    assert planes.dtype == np.float64 and planes.shape == (6 if finite_far else 5, 4)
    assert np.allclose(np.linalg.norm(planes[:, :3], axis=1), 1.0, rtol=0, atol=1e-14)
    # the same frustum from the rectangle's other two corners, in any order
    other = camera.frustum([rect[2], rect[1], rect[0], rect[3]])
    assert np.allclose(other, planes, rtol=0, atol=1e-12)

    def inside(points):
        return (points @ planes[:, :3].T + planes[:, 3] >= 0).all(axis=1)

    width, height = x[1] - x[0], y[1] - y[0]
    margin = 0.01
    ndc = np.stack([rng.uniform(x[0] + margin * width, x[1] - margin * width, 2000),
                    rng.uniform(y[0] + margin * height, y[1] - margin * height, 2000),
                    rng.uniform(-0.99, 0.99 * max_depth(finite_far), 2000)], axis=1)
    assert inside(unproject(camera, ndc)).all()

    # beyond one side of the rectangle, or before the near plane, or beyond the far plane
    beyond = ndc.copy()
    side = rng.integers(0, 6 if finite_far else 5, len(ndc))
    for k, (axis, low, high) in enumerate([(0, x[0], x[1]), (1, y[0], y[1]), (2, -1.0, 1.0)]):
        span = high - low
        below = side == 2 * k
        above = side == 2 * k + 1
        beyond[below, axis] = low - rng.uniform(margin, 1.0, below.sum()) * span
        beyond[above, axis] = high + rng.uniform(margin, 1.0, above.sum()) * span
    # NDC z below -1 lies between the eye and the near plane, or behind the
    # eye; above 1, beyond the far plane (up to the plane at infinity)
    assert not inside(unproject(camera, beyond)).any()
    if not camera.orthographic:
        forward = camera.rays([camera.width / 2, camera.height / 2])[1][0]
        behind = camera.position - rng.uniform(0.01, 100, (100, 1)) * (forward + rng.normal(0, 0.3, (100, 3)))
        assert not inside(behind).any()


@pytest.mark.parametrize("name, camera, finite_far", CAMERAS, ids=IDS)
def test_frustum_selects_the_triangles_around_points_in_the_rect(name, camera, finite_far):
    rng = np.random.default_rng(3)
    rect = [camera.width * 0.3, camera.height * 0.6, camera.width * 0.55, camera.height * 0.2]
    planes = camera.frustum(rect)
    size = np.array([camera.width, camera.height])
    pixels = rng.uniform(-0.2 * size, 1.2 * size, (400, 2))
    ndc = np.stack([2 * pixels[:, 0] / camera.width - 1, 1 - 2 * pixels[:, 1] / camera.height,
                    rng.uniform(-0.9, 0.9 * max_depth(finite_far), 400)], axis=1)
    centres = unproject(camera, ndc)
    # tiny triangles, well inside or outside unless their pixel is near the rect's edge
    size = 1e-6 * np.linalg.norm(centres - unproject(camera, np.array([[0.0, 0.0, -1.0]])), axis=1)
    triangles = centres[:, None] + size[:, None, None] * rng.normal(size=(400, 3, 3))
    selected = F.triangles_in_frustum(triangles.reshape(-1, 3), np.arange(1200).reshape(-1, 3), planes)
    x0, x1 = sorted(rect[0::2])
    y0, y1 = sorted(rect[1::2])
    margin = 0.01
    clearly_in = ((pixels[:, 0] > x0 + margin) & (pixels[:, 0] < x1 - margin)
                  & (pixels[:, 1] > y0 + margin) & (pixels[:, 1] < y1 - margin))
    clearly_out = ((pixels[:, 0] < x0 - margin) | (pixels[:, 0] > x1 + margin)
                   | (pixels[:, 1] < y0 - margin) | (pixels[:, 1] > y1 + margin))
    assert clearly_in.sum() > 10 and clearly_out.sum() > 100
    assert selected[clearly_in].all() and not selected[clearly_out].any()


def test_whole_image_frustum_is_the_default():
    camera = Camera.pinhole(POSITION, TARGET, UP, 50, W, H, near=0.1, far=30.0)
    assert np.array_equal(camera.frustum(), camera.frustum([0, 0, W, H]))
    # the near and far planes: at distance near and far along the view direction
    forward = unit(TARGET - POSITION)
    planes = camera.frustum()
    assert np.allclose(planes[4], [*forward, -(forward @ POSITION) - 0.1], atol=1e-12)
    assert np.allclose(planes[5], [*-forward, forward @ POSITION + 30.0], atol=1e-12)


# ----------------------------------------------------------------- refusals


@pytest.mark.parametrize("kwargs, message", [
    (dict(target=POSITION), r"target must differ from position"),
    (dict(up=[0.0, 0.0, 0.0]), r"up must be a non-zero vector"),
    (dict(up=TARGET - POSITION), r"must not be parallel to the view direction"),
    (dict(up=[0, 0, 1], target=POSITION + [0, 0, -2]), r"must not be parallel to the view direction"),
    (dict(position=[0.0, np.nan, 0.0]), r"position contains NaN or infinite values"),
    (dict(position=[0.0, 1e31, 0.0]), r"position must lie within 1e\+30 of the world origin"),
    (dict(target=[0.0, 1.0]), r"target must have shape \(3,\), got \(2,\)"),
    (dict(up="z"), r"up must be an array of real numbers"),
    (dict(fov_y_deg=0.0), r"fov_y_deg must be a number of degrees strictly between 0 and 180, got 0.0"),
    (dict(fov_y_deg=180), r"fov_y_deg must be a number of degrees strictly between 0 and 180, got 180"),
    (dict(fov_y_deg=float("nan")), r"fov_y_deg must be a number of degrees strictly between 0 and 180"),
    (dict(fov_y_deg="wide"), r"fov_y_deg must be a number, got 'wide'"),
    (dict(width=0), r"width must be between 1 and 16777216 pixels, got 0"),
    (dict(height=MAX_IMAGE_SIZE + 1), r"height must be between 1 and 16777216 pixels"),
    (dict(width=640.0), r"width must be an integer number of pixels >= 1, got 640.0"),
    (dict(height=True), r"height must be an integer number of pixels >= 1, got True"),
    (dict(width="640"), r"width must be an integer number of pixels >= 1, got '640'"),
    (dict(near=0.0), r"near must be a finite number > 0, got 0.0"),
    (dict(near=float("inf")), r"near must be a finite number > 0, got inf"),
    (dict(near=1.0, far=0.5), r"far must be greater than near \(1.0\), got 0.5"),
    (dict(far=-1.0), r"far must be a finite number > 0, got -1.0"),
])
def test_pinhole_refusals(kwargs, message):
    arguments = dict(position=POSITION, target=TARGET, up=UP, fov_y_deg=50, width=W, height=H)
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        Camera.pinhole(**arguments)


def behind_the_camera_projection():
    # a "near plane" behind the eye: the view volume crosses the eye's plane
    return frustum_matrix(-0.1, 0.1, -0.1, 0.1, -0.1, 10.0)


@pytest.mark.parametrize("view, projection, message", [
    (np.eye(3), np.eye(4), r"view must have shape \(4, 4\), got \(3, 3\)"),
    (np.eye(4), np.eye(4)[:3], r"projection must have shape \(4, 4\), got \(3, 4\)"),
    (np.eye(4), np.where(np.eye(4) > 0, np.inf, 0.0), r"projection contains NaN or infinite values"),
    ([["a"] * 4] * 4, np.eye(4), r"view must be an array of real numbers"),
    (np.eye(4), np.zeros((4, 4)), r"projection @ view must be invertible"),
    (np.diag([1.0, 1.0, 0.0, 1.0]), np.eye(4), r"projection @ view must be invertible"),
    (np.eye(4) * 1e200, np.eye(4) * 1e200, r"projection @ view overflows"),
    (np.eye(4), behind_the_camera_projection(), r"projection must map a view volume that lies in front of the camera"),
])
def test_matrix_refusals(view, projection, message):
    with pytest.raises(ValueError, match=message):
        Camera.from_matrices(view, projection, W, H)


def test_matrix_cameras_check_sizes_too():
    with pytest.raises(ValueError, match=r"height must be between 1 and 16777216 pixels, got -3"):
        Camera(np.eye(4), np.eye(4), W, -3)


@pytest.mark.parametrize("pixels, message", [
    ([1.0, 2.0, 3.0], r"pixels must have shape \(N, 2\) or \(2,\), got \(3,\)"),
    (np.zeros((4, 3)), r"pixels must have shape \(N, 2\) or \(2,\), got \(4, 3\)"),
    ([[1.0, np.nan]], r"pixels must be finite pixel coordinates \(\[x, y\] or an \(N, 2\) array\), got NaN"),
    ([[1.0, 2e9]], r"pixels must be pixel coordinates within \+-1e\+09"),
    ([["1", "2"]], r"pixels must be an array of real numbers"),
])
def test_pixel_refusals(pixels, message):
    camera = Camera.pinhole(POSITION, TARGET, UP, 50, W, H)
    with pytest.raises(ValueError, match=message):
        camera.rays(pixels)


@pytest.mark.parametrize("rect, message", [
    ([10, 10, 10, 20], r"rect must have a non-zero width, got x0 = 10.0 and x1 = 10.0"),
    ([10, 20, 30, 20], r"rect must have a non-zero height, got y0 = 20.0 and y1 = 20.0"),
    ([10, 20, 30], r"rect must be \[x0, y0, x1, y1\] \(shape \(4,\)\), got shape \(3,\)"),
    ([10, 20, np.inf, 40], r"rect must be finite pixel coordinates"),
    ([10, 20, 30, -1e10], r"rect must be pixel coordinates within \+-1e\+09"),
])
def test_rect_refusals(rect, message):
    camera = Camera.pinhole(POSITION, TARGET, UP, 50, W, H)
    with pytest.raises(ValueError, match=message):
        camera.frustum(rect)


def test_pixel_centres_refusals():
    with pytest.raises(ValueError, match=r"width must be between 1 and 16777216 pixels, got 0"):
        pixel_centers(0, 10)
    with pytest.raises(ValueError, match=r"height must be an integer number of pixels >= 1, got 2.5"):
        pixel_centers(10, 2.5)


# ------------------------------------------------ degenerate but finite input


@pytest.mark.parametrize("fov", [5e-324, 1e-320])
def test_a_field_of_view_whose_radians_underflow_is_refused(fov):
    # 0 < fov < 180 holds, but the angle in radians is 0 (or its tangent's inverse overflows).
    message = (rf"fov_y_deg = {fov!r} is too narrow to project: the focal length 1 / tan\(fov_y / 2\) "
               rf"is not a finite number \(with aspect 1.33333\)")
    with pytest.raises(ValueError, match=message):
        perspective(fov, W / H, 0.1)
    with pytest.raises(ValueError, match=message):
        Camera.pinhole(POSITION, TARGET, UP, fov, W, H)


def test_a_narrow_field_of_view_far_from_the_origin_is_refused_when_it_overflows():
    with pytest.raises(ValueError, match=r"fov_y_deg = 1e-300 is too narrow for a camera [0-9.e+]+ from the world "
                                         r"origin: projection @ view would overflow"):
        Camera.pinhole([1e29, 0, 0], [0, 0, 0], UP, 1e-300, W, H)


@pytest.mark.parametrize("fov", [1e-300, 1e-10, 179.99999999999997])
def test_extreme_but_representable_fields_of_view_give_unit_rays(fov):
    # A focal length of 1e300 or 1e-16 is a choice of units, not a singular matrix.
    camera = Camera.pinhole(POSITION, TARGET, UP, fov, W, H)
    origins, directions = camera.rays([[W / 2, H / 2], [0.5, 0.5], [W, H]])
    assert np.isfinite(directions).all()
    assert np.allclose(np.linalg.norm(directions, axis=1), 1.0, rtol=0, atol=1e-14)
    assert (origins == camera.position).all()
    if fov < 90:
        # (Near 180 degrees a pixel's rounding error of 1e-16 in NDC turns its ray by a radian.)
        assert np.allclose(directions[0], unit(TARGET - POSITION), rtol=0, atol=1e-12)


@pytest.mark.parametrize("distance", [1e12, 1e15, 1e20, 1e29])
def test_a_camera_far_from_the_origin_is_a_perspective_camera(distance):
    # Compared with the camera's translation, the w row of a camera 1e12 away
    # once looked constant: the camera was taken for orthographic, its rays NaN.
    position = np.array([distance, -distance, distance / 2])
    target = np.array([0.0, 0.0, 0.0])
    camera = Camera.pinhole(position, target, UP, 45, W, H)
    assert not camera.orthographic
    assert np.allclose(camera.position, position, rtol=1e-12, atol=0)
    origins, directions = camera.rays([[W / 2, H / 2], [0.5, 0.5], [W - 0.5, H - 0.5]])
    assert np.allclose(directions[0], unit(target - position), rtol=0, atol=1e-12)
    assert np.allclose(np.linalg.norm(directions, axis=1), 1.0, rtol=0, atol=1e-14)
    # the corner rays leave the centre ray at the corner's angle, whatever the distance
    near = Camera.pinhole(position / distance, target, UP, 45, W, H)
    _, near_directions = near.rays([[W / 2, H / 2], [0.5, 0.5], [W - 0.5, H - 0.5]])
    assert np.allclose(directions, near_directions, rtol=0, atol=1e-12)


def test_an_orthographic_camera_far_from_the_origin_stays_orthographic():
    view = look_at([1e20, 0, 0], [0, 0, 0], UP)
    camera = Camera.from_matrices(view, ortho_matrix(-4, 3, -2, 3, 0.5, 2e20), W, H)
    assert camera.orthographic
    _, directions = camera.rays([[0.5, 0.5], [W / 2, H / 2]])
    assert np.allclose(directions, [-1.0, 0.0, 0.0], rtol=0, atol=1e-12)


@pytest.mark.parametrize("scale", [1e-200, 1e200])
def test_scaled_projections_are_the_same_camera(scale):
    # A projection times a positive number is the same camera: its rays must
    # not underflow or overflow when normalised.
    view = look_at(POSITION, TARGET, UP)
    projection = perspective(50, W / H, 0.1)
    pixels = [[W / 2, H / 2], [0.5, 0.5], [W - 3.5, 7.5]]
    expected = Camera.from_matrices(view, projection, W, H).rays(pixels)
    scaled = Camera.from_matrices(view, scale * projection, W, H).rays(pixels)
    assert np.allclose(scaled[0], expected[0], rtol=1e-12, atol=1e-12)
    assert np.allclose(scaled[1], expected[1], rtol=0, atol=1e-12)


def test_a_tiny_near_plane_is_no_singular_matrix():
    camera = Camera.pinhole(POSITION, TARGET, UP, 50, W, H, near=1e-12)
    _, directions = camera.rays([W / 2, H / 2])
    assert np.allclose(directions[0], unit(TARGET - POSITION), rtol=0, atol=1e-12)


FAR_APART = r"in float64: the matrices' entries lie too far apart \(magnitudes from {} to {}\)"


def test_a_product_float64_cannot_invert_is_refused_with_the_range_of_its_entries():
    # Each matrix is invertible; the inverse of their product holds 1e400.
    view = [[1, 1e200, 0, 0], [0, 1, 0, 1e200], [0, 0, 2, 0], [0, 0, 0, 1]]
    with pytest.raises(ValueError, match="projection @ view cannot be inverted " + FAR_APART.format(1, r"1e\+200")):
        Camera.from_matrices(view, np.eye(4), 2, 2)


def test_a_pixel_whose_ray_float64_cannot_hold_is_refused():
    # A parallel projection whose view volume lies near z = -1e300, 2e30 deep: its near and far points round together.
    projection = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1e300], [0, 0, 0, 1e30]]
    camera = Camera.from_matrices(np.eye(4), projection, 2, 2)
    with pytest.raises(ValueError, match=r"pixel \[1.0, 1.0\] has no ray " + FAR_APART.format(1, r"1e\+300")):
        camera.rays([[1.0, 1.0]])


def test_a_frustum_float64_cannot_hold_is_refused():
    view = [[1, 0, 0, 0], [0, 1, 0, 0], [2, 0, 1, 0], [0, 0, 0, 1e300]]
    projection = [[1e-200, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1e-100, 1]]
    camera = Camera.from_matrices(view, projection, 2, 2)
    with pytest.raises(ValueError, match=r"rect \[0.0, 0.0, 2.0, 2.0\] has no frustum "
                                         + FAR_APART.format("1e-200", r"1e\+300")):
        camera.frustum([0, 0, 2, 2])


def test_a_frustum_too_far_away_to_select_with_is_refused():
    view = [[1, 0, 0, 1e200], [1e-200, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    camera = Camera.from_matrices(view, np.eye(4), 2, 2)
    with pytest.raises(ValueError, match=r"rect \[0.0, 0.0, 2.0, 2.0\] has a frustum too far away to select with: "
                                         r"a plane passes 1e\+200 from the world origin, beyond 1e\+50"):
        camera.frustum([0, 0, 2, 2])
