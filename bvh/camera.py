"""A camera that turns pixels into world rays and pixel rectangles into frusta.

OpenGL conventions throughout: the view matrix takes world points to view
space, where the camera looks down ``-z``; the projection matrix takes view
space to clip space, and the division by ``w`` gives normalised device
coordinates (NDC) in ``[-1, 1]^3``, ``z = -1`` on the near plane. Both
matrices act on column vectors: ``clip = projection @ view @ [x, y, z, 1]``.

Pixels are continuous coordinates with ``(0, 0)`` at the top left corner of
the image, ``x`` to the right and ``y`` down: pixel column 10 spans
``10 <= x < 11`` and its centre is ``x = 10.5``. Coordinates are taken as
given, so a client that wants the centre of pixel ``(i, j)`` sends
``[i + 0.5, j + 0.5]`` (:func:`pixel_centers` makes them all). The mapping to
NDC is::

    ndc_x = 2 * x / width - 1
    ndc_y = 1 - 2 * y / height

Coordinates outside ``[0, width] x [0, height]`` are accepted: they are the
rays and frusta just beyond the viewport, which is harmless for a pick.

Rays are unbounded and their directions unit length, so a hit's ``t`` is its
distance from the ray's origin. A perspective camera's rays start at the
centre of projection (the eye), so nothing between the eye and the near plane
is missed; an orthographic camera has no eye, and its rays start on the near
plane.
"""

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from . import validation
from ._jit import jit
from .primitives._validate import MAX_COORDINATE

#: Largest accepted image width or height, in pixels.
MAX_IMAGE_SIZE = 1 << 24

#: Largest accepted magnitude of a pixel coordinate: far beyond any viewport
#: (such values are garbage, not picks), small enough that NDC stays modest.
MAX_PIXEL = 1.0e9

#: Default near distance of :meth:`Camera.pinhole`, as a fraction of the
#: distance from the camera to its target: close enough that a marquee
#: selection keeps everything in view, far enough for a well-conditioned
#: projection.
NEAR_FRACTION = 1.0e-3

#: ``up`` is refused as parallel to the view direction when the sine of the
#: angle between them is below this.
MIN_UP_SINE = 1.0e-6

#: A matrix whose condition number exceeds this once its rows and columns
#: are equilibrated is refused as singular: its inverse would keep fewer than
#: four significant digits.
MAX_CONDITION = 1.0e12

#: Rounds of row-and-column scaling before the condition number is taken;
#: a 4 x 4 matrix settles in a few.
EQUILIBRATION_STEPS = 8

#: The corners of the NDC cube, homogeneous, near face (z = -1) first.
_NDC_CORNERS = np.array([[x, y, z, 1.0] for z in (-1.0, 1.0) for y in (-1.0, 1.0) for x in (-1.0, 1.0)])

#: A near or far plane whose normal is shorter than this fraction of the
#: longest plane normal of the clip-space rows lies at infinity, and is left
#: out of a frustum.
PLANE_AT_INFINITY = 1.0e-12


def _matrix(name: str, value) -> np.ndarray:
    array = validation.real_array(name, value)
    if array.shape != (4, 4):
        raise ValueError(f"{name} must have shape (4, 4), got {array.shape}")
    array = np.array(array, dtype=np.float64)
    if not np.isfinite(array).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    array.setflags(write=False)
    return array


def _vector3(name: str, value) -> np.ndarray:
    array = validation.real_array(name, value)
    if array.shape != (3,):
        raise ValueError(f"{name} must have shape (3,), got {array.shape}")
    array = array.astype(np.float64)
    if not np.isfinite(array).all():
        raise ValueError(f"{name} contains NaN or infinite values: {array.tolist()}")
    if np.abs(array).max() > validation.MAX_ORIGIN:
        raise ValueError(f"{name} must lie within {validation.MAX_ORIGIN:g} of the world origin")
    return array


def _size(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer number of pixels >= 1, got {value!r}")
    if not 1 <= value <= MAX_IMAGE_SIZE:
        raise ValueError(f"{name} must be between 1 and {MAX_IMAGE_SIZE} pixels, got {value}")
    return int(value)


def _positive(name: str, value) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not (math.isfinite(number) and number > 0.0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return number


def _coordinates(name: str, value, expected: str) -> np.ndarray:
    """Finite pixel coordinates within ``+-MAX_PIXEL`` as float64; ``expected``
    words the shape for the refusal."""
    array = validation.real_array(name, value).astype(np.float64)
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite pixel coordinates ({expected}), got NaN or infinity")
    if array.size and np.abs(array).max() > MAX_PIXEL:
        raise ValueError(f"{name} must be pixel coordinates within +-{MAX_PIXEL:g} ({expected})")
    return array


def _too_far_apart(view: np.ndarray, projection: np.ndarray) -> str:
    """The end of a refusal for matrices float64 cannot compute with, naming their range."""
    magnitudes = np.abs(np.concatenate([view.ravel(), projection.ravel()]))
    magnitudes = magnitudes[magnitudes > 0.0]
    return (f"in float64: the matrices' entries lie too far apart (magnitudes from {magnitudes.min():.3g} "
            f"to {magnitudes.max():.3g})")


def _invertible(matrix: np.ndarray) -> bool:
    """Whether the square ``matrix`` is invertible whatever the units of its
    rows and columns: its condition number after equilibration (alternate
    scalings of rows and columns to a largest entry of 1, Ruiz 2001) is below
    :data:`MAX_CONDITION`."""
    scaled = np.array(matrix, dtype=np.float64)
    for _ in range(EQUILIBRATION_STEPS):
        for axis in (1, 0):
            largest = np.abs(scaled).max(axis=axis, keepdims=True)
            if not (largest > 0.0).all():
                return False
            scaled /= np.sqrt(largest)
    return bool(np.linalg.cond(scaled) < MAX_CONDITION)


def pixel_centers(width: int, height: int) -> np.ndarray:
    """The centre of every pixel of a ``width`` x ``height`` image.

    Returns
    -------
    (width * height, 2) float64
        ``[x + 0.5, y + 0.5]`` in row-major order: row ``y * width + x`` is
        pixel ``(x, y)``, so ``rays(pixel_centers(w, h))`` reshapes to
        ``(h, w, 3)`` like an image.
    """
    width = _size("width", width)
    height = _size("height", height)
    y, x = np.mgrid[0:height, 0:width]
    return np.stack([x.ravel() + 0.5, y.ravel() + 0.5], axis=1).astype(np.float64)


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.cross`` of two 3-vectors, without its axis handling (a tenth of the time)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def _look_at(position, target, up) -> tuple[np.ndarray, float]:
    position = _vector3("position", position)
    target = _vector3("target", target)
    up = _vector3("up", up)
    forward = target - position
    distance = math.hypot(*forward)
    if not distance > 0.0:
        raise ValueError(f"target must differ from position, both are {position.tolist()}")
    forward /= distance
    up_length = math.hypot(*up)
    if not up_length > 0.0:
        raise ValueError("up must be a non-zero vector")
    right = _cross(forward, up / up_length)
    sine = math.hypot(*right)
    if sine < MIN_UP_SINE:
        raise ValueError(f"up {up.tolist()} must not be parallel to the view direction target - position")
    right /= sine
    view = np.eye(4)
    view[0, :3] = right
    view[1, :3] = _cross(right, forward)
    view[2, :3] = -forward
    view[:3, 3] = -view[:3, :3] @ position
    return view, distance


def look_at(position, target, up) -> np.ndarray:
    """The ``(4, 4)`` view matrix of a camera at ``position`` looking at ``target``.

    ``up`` need only be non-parallel to ``target - position``; the camera's up
    axis is its component perpendicular to the view direction (gluLookAt).
    """
    return _look_at(position, target, up)[0]


def perspective(fov_y_deg, aspect, near, far=None) -> np.ndarray:
    """The ``(4, 4)`` OpenGL perspective projection (gluPerspective).

    ``far=None`` places the far plane at infinity (the limit of the matrix as
    ``far`` grows), so nothing is too distant to pick or select.
    """
    try:
        fov = float(fov_y_deg)
    except (TypeError, ValueError):
        raise ValueError(f"fov_y_deg must be a number, got {fov_y_deg!r}") from None
    if not (math.isfinite(fov) and 0.0 < fov < 180.0):
        raise ValueError(f"fov_y_deg must be a number of degrees strictly between 0 and 180, got {fov_y_deg!r}")
    aspect = _positive("aspect", aspect)
    near = _positive("near", near)
    # The angle is checked after conversion: 5e-324 degrees passes the range
    # test yet is 0 radians, whose tangent has no inverse.
    half_tangent = math.tan(math.radians(fov) / 2.0)
    focal = 1.0 / half_tangent if half_tangent > 0.0 else math.inf
    if not (math.isfinite(focal) and math.isfinite(focal / aspect)):
        raise ValueError(f"fov_y_deg = {fov!r} is too narrow to project: the focal length 1 / tan(fov_y / 2) "
                         f"is not a finite number (with aspect {aspect:g})")
    projection = np.zeros((4, 4))
    projection[0, 0] = focal / aspect
    projection[1, 1] = focal
    projection[3, 2] = -1.0
    if far is None:
        projection[2, 2] = -1.0
        projection[2, 3] = -2.0 * near
    else:
        far = _positive("far", far)
        if not far > near:
            raise ValueError(f"far must be greater than near ({near!r}), got {far!r}")
        projection[2, 2] = (far + near) / (near - far)
        projection[2, 3] = 2.0 * far * near / (near - far)
    return projection


@jit
def perspective_rays(pixels, width, height, eye, ray_map, origins, directions):
    """Rays from ``eye`` through ``pixels (N, 2)`` into ``origins`` and unit
    ``directions (N, 3)``; ``ray_map (3, 4)`` takes ``(ndc_x, ndc_y, 1, 1)``
    to a direction (see ``Camera._perspective_ray_map``)."""
    for i in range(pixels.shape[0]):
        x = 2.0 * pixels[i, 0] / width - 1.0
        y = 1.0 - 2.0 * pixels[i, 1] / height
        dx = ray_map[0, 0] * x + ray_map[0, 1] * y + (ray_map[0, 2] + ray_map[0, 3])
        dy = ray_map[1, 0] * x + ray_map[1, 1] * y + (ray_map[1, 2] + ray_map[1, 3])
        dz = ray_map[2, 0] * x + ray_map[2, 1] * y + (ray_map[2, 2] + ray_map[2, 3])
        # Scaled to a largest component of 1 before squaring: squares of tiny
        # or huge components would underflow to 0 or overflow to inf.
        largest = max(abs(dx), abs(dy), abs(dz))
        dx /= largest
        dy /= largest
        dz /= largest
        inv = 1.0 / math.sqrt(dx * dx + dy * dy + dz * dz)
        origins[i, 0] = eye[0]
        origins[i, 1] = eye[1]
        origins[i, 2] = eye[2]
        directions[i, 0] = dx * inv
        directions[i, 1] = dy * inv
        directions[i, 2] = dz * inv


@dataclass(frozen=True, eq=False)
class Camera:
    """A view, a projection and an image size: pixels to world rays and frusta.

    Make one with :meth:`pinhole` or :meth:`from_matrices` (the constructor
    takes the same arguments as :meth:`from_matrices` and validates them the
    same way). Instances are immutable: the matrices are read-only arrays.
    Two cameras are equal when their matrices and sizes are.

    Attributes
    ----------
    view : (4, 4) float64
        World to view space.
    projection : (4, 4) float64
        View to clip space.
    width, height : int
        Image size in pixels, ``>= 1``.
    """

    view: np.ndarray
    projection: np.ndarray
    width: int
    height: int
    _clip: np.ndarray = dataclasses.field(init=False, repr=False)
    _inverse: np.ndarray = dataclasses.field(init=False, repr=False)
    _w_sign: float = dataclasses.field(init=False, repr=False)
    _eye: np.ndarray | None = dataclasses.field(init=False, repr=False)
    _ray_map: np.ndarray | None = dataclasses.field(init=False, repr=False)

    def __post_init__(self):
        view = _matrix("view", self.view)
        projection = _matrix("projection", self.projection)
        setattr_ = object.__setattr__
        setattr_(self, "view", view)
        setattr_(self, "projection", projection)
        setattr_(self, "width", _size("width", self.width))
        setattr_(self, "height", _size("height", self.height))

        with np.errstate(over="ignore", invalid="ignore"):
            clip = projection @ view
        if not np.isfinite(clip).all():
            raise ValueError("projection @ view overflows: the matrices hold values too large to combine")
        # Invertibility is judged whatever the units: with a rigid-or-affine
        # view, on the view's rotation and the projection apart (the product
        # carries the camera's distance from the world origin, which is no
        # degeneracy), each with its rows and columns equilibrated (a focal
        # length of 1e12 or a near plane at 1e-9 is no degeneracy either).
        affine_view = np.array_equal(view[3], [0.0, 0.0, 0.0, 1.0])
        parts = (view[:3, :3], projection) if affine_view else (clip,)
        if not all(_invertible(part) for part in parts):
            raise ValueError("projection @ view must be invertible (a singular matrix maps space onto a plane)")
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
                inverse = np.linalg.inv(clip)
                # The view-space image of NDC: a rigid-or-affine view keeps w, so
                # this matrix's row of w is the inverse's, without the error that
                # the camera's distance from the world origin brings to ``inverse``.
                homogeneous = np.linalg.inv(projection) if affine_view else inverse
        except np.linalg.LinAlgError:
            # Both parts are invertible, their product rounds to a singular matrix.
            raise ValueError("projection @ view cannot be inverted " + _too_far_apart(view, projection)) from None
        if not (np.isfinite(inverse).all() and np.isfinite(homogeneous).all()):
            raise ValueError("projection @ view cannot be inverted " + _too_far_apart(view, projection))

        # w of the eight NDC corners taken back to world space, as homogeneous
        # points: one sign for the whole view volume (the sign of points in
        # front of the camera; -projection is the same camera), zero only on a
        # face at infinity (the far plane of an infinite projection).
        # (Scaled to a largest entry of 1 first: only the signs and ratios of w count.)
        w_scale = np.abs(homogeneous[3]).max()
        if not w_scale > 0.0:
            raise ValueError("projection @ view cannot be inverted " + _too_far_apart(view, projection))
        w = _NDC_CORNERS @ (homogeneous[3] / w_scale)
        scale = np.abs(w).max()
        sign = 1.0 if w[np.argmax(np.abs(w))] > 0.0 else -1.0
        finite_face = (sign * w[:4] > PLANE_AT_INFINITY * scale).all() or (
            sign * w[4:] > PLANE_AT_INFINITY * scale).all()
        if not finite_face or (sign * w < -PLANE_AT_INFINITY * scale).any():
            raise ValueError("projection must map a view volume that lies in front of the camera "
                             "(its near plane at a finite distance)")

        # The centre of projection is the point that clip space sends to
        # x = y = w = 0: the image of (0, 0, 1, 0), whose w is zero
        # (orthographic) when the row of w does not depend on NDC z. It is
        # taken from ``homogeneous``, in view space for a rigid-or-affine view,
        # where the camera's distance from the world origin plays no part:
        # compared in world space, a camera 1e12 away looked orthographic.
        orthographic = abs(homogeneous[3, 2]) <= 1.0e-12 * np.abs(homogeneous[3]).max()
        eye = None
        ray_map = None
        if not orthographic:
            centre = homogeneous[:, 2]
            with np.errstate(over="ignore", invalid="ignore"):
                eye = centre[:3] / centre[3]
                if affine_view:
                    eye = np.linalg.solve(view[:3, :3], eye - view[:3, 3])
            if not np.isfinite(eye).all() or np.abs(eye).max() > validation.MAX_ORIGIN:
                raise ValueError("the camera's centre of projection lies too far away "
                                 f"(beyond {validation.MAX_ORIGIN:g} of the world origin)")
            # (A map float64 cannot hold gives rays that are not finite: :meth:`rays` refuses those.)
            with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
                ray_map = self._perspective_ray_map(view, homogeneous, eye, sign, affine_view)
            eye.setflags(write=False)
        for array in (clip, inverse):
            array.setflags(write=False)
        setattr_(self, "_clip", clip)
        setattr_(self, "_inverse", inverse)
        setattr_(self, "_w_sign", sign)
        setattr_(self, "_eye", eye)
        setattr_(self, "_ray_map", ray_map)

    @staticmethod
    def _perspective_ray_map(view, homogeneous, eye, sign, affine_view) -> np.ndarray:
        """The ``(3, 4)`` matrix taking ``(ndc_x, ndc_y, 1, 1)`` to a direction
        from the eye through that far-plane point (any positive length; its
        largest entry is 1).

        ``homogeneous`` is the inverse of the projection (``affine_view``) or
        of ``projection @ view``. For the homogeneous far point ``h``,
        ``h.xyz - h.w * eye`` is ``h.w`` times (point - eye), and stays right
        when the far plane is at infinity (``h.w = 0``, ``h`` is then the
        direction itself); ``sign`` turns it away from the eye. With a
        rigid-or-affine view, that difference is formed in view space, where
        the eye is near the origin, and rotated: forming it in world space
        would cancel the camera's distance from the world origin (1e-9 of
        error at 1e6 away).
        """
        if affine_view:
            centre = homogeneous[:, 2]
            eye_in_view = centre[:3] / centre[3]
            in_view = sign * (homogeneous[:3] - np.outer(eye_in_view, homogeneous[3]))
            ray_map = np.linalg.solve(view[:3, :3], in_view)
        else:
            ray_map = sign * (homogeneous[:3] - np.outer(eye, homogeneous[3]))
        # A positive scale changes no direction, and keeps the kernel's
        # components near 1 whatever the matrices' units.
        return ray_map / np.abs(ray_map).max()

    def __eq__(self, other):
        if not isinstance(other, Camera):
            return NotImplemented
        return (self.width == other.width and self.height == other.height
                and np.array_equal(self.view, other.view) and np.array_equal(self.projection, other.projection))

    __hash__ = None

    # ------------------------------------------------------------ constructors

    @classmethod
    def pinhole(cls, position, target, up, fov_y_deg, width, height, near=None, far=None) -> "Camera":
        """A perspective camera at ``position`` looking at ``target``.

        Parameters
        ----------
        position, target, up : (3,) array_like
            ``target != position``; ``up`` non-zero and not parallel to
            ``target - position``.
        fov_y_deg : float
            Vertical field of view in degrees, ``0 < fov_y_deg < 180``. The
            horizontal one follows from the aspect ``width / height``.
        width, height : int
            Image size in pixels, ``>= 1``.
        near : float, optional
            Distance of the near plane, ``> 0``; default ``NEAR_FRACTION``
            times ``|target - position|``. Picks ignore it (rays start at the
            eye); :meth:`frustum` selects nothing closer.
        far : float, optional
            Distance of the far plane, ``> near``; default infinite. Picks
            ignore it; :meth:`frustum` selects nothing farther.
        """
        view, distance = _look_at(position, target, up)
        width = _size("width", width)
        height = _size("height", height)
        if near is None:
            near = NEAR_FRACTION * distance
        projection = perspective(fov_y_deg, width / height, near, far)
        # A bound on the entries of projection @ view: a narrow field of view
        # far from the world origin multiplies a huge focal length by a huge
        # translation.
        with np.errstate(over="ignore"):
            largest = np.abs(projection).max() * np.abs(view).sum(axis=0).max()
        if not math.isfinite(largest):
            raise ValueError(f"fov_y_deg = {float(fov_y_deg)!r} is too narrow for a camera "
                             f"{float(np.abs(view[:3, 3]).max()):.3g} from the world origin: "
                             "projection @ view would overflow")
        return cls(view, projection, width, height)

    @classmethod
    def from_matrices(cls, view, projection, width, height) -> "Camera":
        """A camera from OpenGL matrices.

        Parameters
        ----------
        view, projection : (4, 4) array_like
            Finite; ``projection @ view`` invertible, and its view volume in
            front of the camera with a finite near plane. Perspective
            (including off-axis and infinite-far) and orthographic projections
            (last row ``(0, 0, 0, 1)``) are both supported.
        width, height : int
            Image size in pixels, ``>= 1``.
        """
        return cls(view, projection, width, height)

    # -------------------------------------------------------------- properties

    @property
    def orthographic(self) -> bool:
        """Whether the projection is parallel (its rays share one direction)."""
        return self._eye is None

    @property
    def position(self) -> np.ndarray | None:
        """The eye (centre of projection) in world space, ``(3,)`` float64;
        ``None`` for an orthographic camera."""
        return None if self._eye is None else self._eye.copy()

    @property
    def clip_matrix(self) -> np.ndarray:
        """``(4, 4)`` float64 ``projection @ view``, negated if need be so that
        ``w > 0`` in front of the camera: a world point ``p`` lies between the
        near and far planes when ``-w <= z <= w`` for ``[x, y, z, w] =
        clip_matrix @ [p, 1]``, and its NDC are ``x / w, y / w``."""
        return self._clip * self._w_sign

    # ----------------------------------------------------------------- queries

    def _ndc(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return 2.0 * x / self.width - 1.0, 1.0 - 2.0 * y / self.height

    def rays(self, pixels) -> tuple[np.ndarray, np.ndarray]:
        """The world ray through each pixel coordinate.

        Parameters
        ----------
        pixels : (N, 2) or (2,) array_like
            Continuous pixel coordinates ``[x, y]`` (see the module notes:
            ``[10.5, 3.5]`` is the centre of pixel column 10, row 3); finite,
            within ``+-MAX_PIXEL``; outside the image is allowed.

        Returns
        -------
        origins : (N, 3) float64
            A perspective camera's eye for every ray; for an orthographic
            camera, the pixel's point on the near plane.
        directions : (N, 3) float64
            Unit directions away from the camera, so ``t`` of a hit is its
            distance from the origin. Rays are unbounded: neither the near
            plane (perspective) nor the far plane limits a pick.
        """
        pixels = _coordinates("pixels", pixels, "[x, y] or an (N, 2) array")
        if pixels.ndim == 1 and pixels.shape[0] == 2:
            pixels = pixels[None, :]
        if pixels.ndim != 2 or pixels.shape[1] != 2:
            raise ValueError(f"pixels must have shape (N, 2) or (2,), got {pixels.shape}")
        n = pixels.shape[0]
        if self._eye is not None:
            origins = np.empty((n, 3))
            directions = np.empty((n, 3))
            perspective_rays(np.ascontiguousarray(pixels), float(self.width), float(self.height), self._eye,
                             self._ray_map, origins, directions)
        else:
            ndc_x, ndc_y = self._ndc(pixels[:, 0], pixels[:, 1])
            ndc = np.stack([ndc_x, ndc_y, np.full(n, -1.0), np.ones(n)], axis=1)
            # Homogeneous points keep their meaning under any scale: the
            # inverse's largest entry is made 1, so the products cannot overflow.
            inverse = self._inverse / np.abs(self._inverse).max()
            with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
                near = ndc @ inverse.T
                ndc[:, 2] = 1.0
                far = ndc @ inverse.T
                origins = near[:, :3] / near[:, 3:]
                directions = far[:, :3] / far[:, 3:] - origins
                # Scaled to a largest component of 1 before squaring (see perspective_rays).
                directions /= np.abs(directions).max(axis=1, keepdims=True)
                directions /= np.sqrt(np.einsum("ij,ij->i", directions, directions))[:, None]
        finite = np.isfinite(directions).all(axis=1) & np.isfinite(origins).all(axis=1)
        if not finite.all():
            row = int(np.flatnonzero(~finite)[0])
            raise ValueError(f"pixel {pixels[row].tolist()} has no ray " + _too_far_apart(self.view, self.projection))
        return origins, directions

    def pixel_tolerance(self, pixels, tolerance) -> tuple[np.ndarray, np.ndarray]:
        """A tolerance of ``tolerance`` pixels about each pixel's ray, as
        ``Scene.intersect`` takes it: ``tol(t) = world + slope * t * |d|``.

        A perspective camera's tolerance is a cone: ``slope = tan(tolerance *
        angle)``, ``angle`` the angle between the rays of this pixel
        coordinate and of its neighbours one pixel to the right and one down
        (their geometric mean: exact for square pixels, and for others the
        tolerance spans about ``tolerance`` pixels), so the band picked is
        about ``tolerance`` pixels wide on screen at any distance and
        anywhere in the image (off the centre a pixel spans a smaller
        angle). An orthographic camera's is a cylinder: ``world = tolerance
        * size``, ``size`` a pixel's size on the near plane (the same mean).

        Parameters
        ----------
        pixels : (N, 2) or (2,) array_like
            Pixel coordinates, as :meth:`rays` takes them.
        tolerance : float
            Pixels, finite and ``>= 0``; the cone's half angle must stay
            below 45 degrees.

        Returns
        -------
        world, slope : (N,) float64
        """
        number = float(tolerance) if isinstance(tolerance, (int, float, np.integer, np.floating)) \
            and not isinstance(tolerance, bool) else None
        if number is None or not math.isfinite(number) or number < 0.0:
            raise ValueError(f"a pixel tolerance must be a finite number of pixels >= 0, got {tolerance!r}")
        origins, directions = self.rays(pixels)
        flat = _coordinates("pixels", pixels, "[x, y] or an (N, 2) array").reshape(-1, 2)
        right_origins, right = self.rays(flat + [1.0, 0.0])
        down_origins, down = self.rays(flat + [0.0, 1.0])
        n = origins.shape[0]
        if self._eye is None:
            across = np.linalg.norm(right_origins - origins, axis=1)
            along = np.linalg.norm(down_origins - origins, axis=1)
            return number * np.sqrt(across * along), np.zeros(n)
        across = 2.0 * np.arcsin(np.minimum(1.0, np.linalg.norm(right - directions, axis=1) * 0.5))
        along = 2.0 * np.arcsin(np.minimum(1.0, np.linalg.norm(down - directions, axis=1) * 0.5))
        half_angle = number * np.sqrt(across * along)
        if not (half_angle < math.pi / 4.0).all():
            raise ValueError(f"a tolerance of {number:g} pixels spans more than 45 degrees with this camera")
        return np.zeros(n), np.tan(half_angle)

    def frustum(self, rect=None) -> np.ndarray:
        """The world-space frustum through a pixel rectangle, as half-spaces.

        Parameters
        ----------
        rect : (4,) array_like, optional
            ``[x0, y0, x1, y1]``: two opposite corners in continuous pixel
            coordinates, in any order; non-zero width and height; may reach
            outside the image. Default the whole image ``[0, 0, width, height]``.

        Returns
        -------
        (P, 4) float64
            Rows ``(nx, ny, nz, d)`` with unit ``n``; a point ``p`` is inside
            when ``n . p + d >= 0`` for every row, and ``n . p + d`` is its
            signed distance to the plane. In order: the planes through the
            rectangle's left (smaller x), right, top (smaller y) and bottom
            edges, the near plane, and the far plane, which is left out
            (``P = 5``) when it lies at infinity.

        Notes
        -----
        Each plane is a row combination of ``projection @ view`` (Gribb and
        Hartmann): the clip-space half-space ``x >= x0_ndc * w`` is
        ``(row_x - x0_ndc * row_w) . [p, 1] >= 0`` in world space, which is
        the plane through the rectangle's unprojected edge. This holds for any
        projection, perspective or orthographic, off-axis or infinite.
        """
        if rect is None:
            rect = [0.0, 0.0, self.width, self.height]
        rect = _coordinates("rect", rect, "[x0, y0, x1, y1]")
        if rect.shape != (4,):
            raise ValueError(f"rect must be [x0, y0, x1, y1] (shape (4,)), got shape {rect.shape}")
        nx0, ny0 = self._ndc(rect[0], rect[1])
        nx1, ny1 = self._ndc(rect[2], rect[3])
        left, right = min(nx0, nx1), max(nx0, nx1)
        bottom, top = min(ny0, ny1), max(ny0, ny1)
        x0, y0, x1, y1 = (float(value) for value in rect)
        if not left < right:
            raise ValueError(f"rect must have a non-zero width, got x0 = {x0!r} and x1 = {x1!r}")
        if not bottom < top:
            raise ValueError(f"rect must have a non-zero height, got y0 = {y0!r} and y1 = {y1!r}")
        # A plane keeps its meaning under any positive scale: the clip matrix's
        # largest entry is made 1 (no product below can overflow), and each
        # row its largest normal component before its length is taken (no
        # square can underflow).
        m = self._clip / np.abs(self._clip).max()
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            rows = np.array([
                m[0] - left * m[3],
                right * m[3] - m[0],
                top * m[3] - m[1],
                m[1] - bottom * m[3],
                m[2] + m[3],
                m[3] - m[2],
            ]) * self._w_sign
            largest = np.abs(rows[:, :3]).max(axis=1)
            scaled = rows / largest[:, None]
            lengths = np.linalg.norm(scaled[:, :3], axis=1)
        # The side planes always pass through the view volume; only the depth
        # planes can lie at infinity, where their normal vanishes.
        keep = np.ones(6, bool)
        keep[4:] = largest[4:] > PLANE_AT_INFINITY * largest.max()
        planes = scaled[keep] / lengths[keep, None]
        if not np.isfinite(planes).all():
            raise ValueError(f"rect {rect.tolist()} has no frustum " + _too_far_apart(self.view, self.projection))
        farthest = np.abs(planes[:, 3]).max()
        if farthest > MAX_COORDINATE:
            raise ValueError(f"rect {rect.tolist()} has a frustum too far away to select with: a plane passes "
                             f"{farthest:.3g} from the world origin, beyond {MAX_COORDINATE:g}")
        return planes
