"""A scene seen through a pinhole camera, as an RGB image: one ray per pixel.

Every pixel centre ``(x + 0.5, y + 0.5)`` is cast with ``Scene.intersect``
through the same ``bvh.Camera.pinhole(...).rays`` that ``/pick/camera`` uses,
so a click on pixel ``(x, y)`` of a render, sent as ``[x + 0.5, y + 0.5]``
with the same camera, picks exactly what that pixel shows.

Shading is flat and cheap, meant for seeing and picking, not for looks: each
object gets its own colour (a hue hashed from its id, the same in every
render), darkened by ``|normal . ray direction|`` so that surfaces seen
edge-on are dark and the shape reads; misses are a neutral grey, and
highlighted objects are blended towards a bright tint.
"""

import io
import math
from dataclasses import dataclass

import numpy as np
from PIL import Image

from bvh.camera import Camera, pixel_centers
from bvh.validation import MAX_ORIGIN

#: Colour of pixels whose ray hits nothing (8-bit RGB).
BACKGROUND = (118, 118, 118)

#: Highlighted objects' colour is blended this far towards :data:`HIGHLIGHT_TINT`.
HIGHLIGHT_TINT = (255, 214, 0)
HIGHLIGHT_BLEND = 0.6

#: Brightness of a surface seen edge-on; face-on is 1. Keeps silhouettes from vanishing into black.
AMBIENT = 0.25

#: Half width, in pixels, of the lines drawn in a render (points are drawn twice as wide).
LINE_PIXELS = 1.0

#: Saturation and value of the per-object colours (HSV).
SATURATION = 0.55
VALUE = 0.95

#: The default view looks down at the scene from this angle above the horizon, in degrees.
ELEVATION_DEG = 30.0

#: Default framing leaves this much room around the scene's bounding sphere.
FRAMING_MARGIN = 1.1


@dataclass(frozen=True)
class PinholeView:
    """The camera of a render, in the fields ``/pick/camera`` and ``/select`` take."""

    position: tuple[float, float, float]
    target: tuple[float, float, float]
    up: tuple[float, float, float]
    fov_y_deg: float
    width: int
    height: int

    def as_json(self) -> dict:
        """The camera as a ``/pick/camera`` body without ``pixels``."""
        return {"position": list(self.position), "target": list(self.target), "up": list(self.up),
                "fov_y_deg": self.fov_y_deg, "width": self.width, "height": self.height}

    def camera(self) -> Camera:
        """The ``bvh`` camera; ``ValueError`` when the fields do not make one."""
        return Camera.pinhole(self.position, self.target, self.up, self.fov_y_deg, self.width, self.height)


def _unit(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


def default_direction(up: np.ndarray) -> np.ndarray:
    """Unit vector from the target towards a default eye: :data:`ELEVATION_DEG` above the horizon
    of ``up``, from the side of the world's ``(+x, -y, +z)`` octant (the front of a z-up scene)."""
    # Scaled first: squaring a subnormal up (1e-320) would underflow its length to zero.
    up = _unit(up / np.abs(up).max())
    horizontal = np.array([1.0, -1.0, 1.0])
    horizontal -= horizontal.dot(up) * up
    if np.linalg.norm(horizontal) < 1e-6:
        # up along (1, -1, 1) itself: any perpendicular will do.
        horizontal = np.cross(up, [1.0, 0.0, 0.0])
    elevation = math.radians(ELEVATION_DEG)
    return _unit(math.cos(elevation) * _unit(horizontal) + math.sin(elevation) * up)


def frame_bounds(bounds: np.ndarray, up, fov_y_deg: float, width: int, height: int,
                 position=None, target=None) -> PinholeView:
    """A camera that shows the whole box ``bounds``, for the fields the caller left out.

    Parameters
    ----------
    bounds : (2, 3) float
        World box of the scene; NaN (an empty scene) frames the unit sphere at the origin.
    up : (3,) float
        Non-zero.
    fov_y_deg : float
    width, height : int
    position, target : (3,) float, optional
        Kept when given. Default target: the box's centre; default position:
        along :func:`default_direction` from the target, far enough that the
        box's bounding sphere fits the narrower field of view.

    Raises
    ------
    ValueError
        When that default position would lie beyond ``bvh.validation.MAX_ORIGIN``
        (a huge scene, or a field of view so narrow that its radians underflow).
    """
    bounds = np.asarray(bounds, np.float64)
    if np.isfinite(bounds).all():
        centre = bounds.mean(axis=0)
        radius = float(np.linalg.norm(bounds[1] - bounds[0])) / 2
    else:
        centre, radius = np.zeros(3), 1.0
    # A flat or one-point scene still needs a distance to stand back.
    radius = max(radius, 1e-3 * max(1.0, float(np.abs(centre).max())))
    target = centre if target is None else np.asarray(target, np.float64)
    if position is None:
        half_fov_y = math.radians(fov_y_deg) / 2
        half_fov_x = math.atan(math.tan(half_fov_y) * width / height)
        # The angle is checked after conversion: 5e-324 degrees is 0 radians.
        sine = math.sin(min(half_fov_x, half_fov_y))
        distance = FRAMING_MARGIN * radius / sine if sine > 0.0 else math.inf
        if not distance <= MAX_ORIGIN - float(np.abs(target).max()):
            raise ValueError(f"the camera framing the scene would stand {distance:.3g} from its target with "
                             f"fov_y_deg = {fov_y_deg!r}; positions must lie within {MAX_ORIGIN:g} of the "
                             "world origin")
        position = target + distance * default_direction(np.asarray(up, np.float64))
    return PinholeView(tuple(float(c) for c in position), tuple(float(c) for c in target),
                       tuple(float(c) for c in up), float(fov_y_deg), int(width), int(height))


def object_colours(object_ids: np.ndarray) -> np.ndarray:
    """``(N, 3)`` float RGB in [0, 1] per object id: a hue hashed from the id (Knuth's
    multiplicative hash), so neighbouring ids get distant hues and every render agrees."""
    hashed = (object_ids.astype(np.uint64) * np.uint64(2654435761)) % np.uint64(1 << 32)
    hue = hashed.astype(np.float64) / float(1 << 32)
    # HSV to RGB, vectorised: each channel from its offset around the hue circle.
    offsets = np.array([5.0, 3.0, 1.0])
    k = (offsets[None, :] + hue[:, None] * 6.0) % 6.0
    return VALUE - VALUE * SATURATION * np.clip(np.minimum(k, 4.0 - k), 0.0, 1.0)


def shade(objects: np.ndarray, normals: np.ndarray, directions: np.ndarray,
          highlight: frozenset[int] = frozenset()) -> np.ndarray:
    """8-bit RGB of each ray's hit.

    Parameters
    ----------
    objects : (N,) int
        Hit object per ray, -1 on a miss.
    normals, directions : (N, 3) float
        Unit hit normals (anything on a miss) and unit ray directions.
    highlight : set of int
        Objects blended towards :data:`HIGHLIGHT_TINT`.

    Returns
    -------
    (N, 3) uint8
    """
    rgb = np.empty((objects.shape[0], 3))
    rgb[:] = np.array(BACKGROUND) / 255.0
    hit = objects >= 0
    if hit.any():
        ids, index = np.unique(objects[hit], return_inverse=True)
        base = object_colours(ids)
        if highlight:
            lit = np.isin(ids, np.fromiter(highlight, np.int64, len(highlight)))
            base[lit] = (1.0 - HIGHLIGHT_BLEND) * base[lit] + HIGHLIGHT_BLEND * np.array(HIGHLIGHT_TINT) / 255.0
        # Segments and points have no normal (NaN): drawn at full brightness.
        facing = np.nan_to_num(np.abs(np.einsum("ij,ij->i", normals[hit], directions[hit])), nan=1.0)
        rgb[hit] = base[index] * (AMBIENT + (1.0 - AMBIENT) * facing)[:, None]
    return np.clip(np.rint(rgb * 255.0), 0, 255).astype(np.uint8)


def render(stored, view: PinholeView, mask: int, highlight: frozenset[int] = frozenset()) -> np.ndarray:
    """The scene of ``stored`` (a ``service.store.StoredScene``) through ``view``.

    Returns
    -------
    (height, width, 3) uint8
        Row 0 is the top of the image.

    Raises
    ------
    ValueError
        When the camera fields do not make a camera (``position == target``, ``up``
        parallel to the view direction, ...).
    """
    camera = view.camera()
    pixels = pixel_centers(view.width, view.height)
    origins, directions = camera.rays(pixels)
    # Lines and points are drawn LINE_PIXELS wide, as the viewer picks them.
    _, slope = camera.pixel_tolerance(pixels[len(pixels) // 2], LINE_PIXELS)
    hits, _ = stored.consistent(lambda scene: scene.intersect(origins, directions, mask=mask,
                                                              line_slope=slope[0], point_slope=2.0 * slope[0]))
    return shade(hits.object, hits.normal, directions, highlight).reshape(view.height, view.width, 3)


def encode_png(image: np.ndarray) -> bytes:
    """PNG bytes of an ``(H, W, 3)`` uint8 image; fast compression, as renders are sent at once."""
    buffer = io.BytesIO()
    Image.fromarray(image, "RGB").save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()
