"""Slow float64 reference for lasso selection: point in polygon and clipped areas.

A naive oracle for :mod:`bvh.queries.lasso`, sharing no code with ``bvh``. Each world
triangle goes to clip space by the camera's projection and view (applied one
after the other), is clipped against the near and far planes in homogeneous
coordinates, and its clipped outline is projected to pixels. Then, per
triangle and lasso:

- *crossing* when one of its projected corners is inside the lasso (PNPOLY's
  even-odd test) or the lasso clipped by the (convex) outline keeps some
  area: Sutherland-Hodgman clipping of the lasso, concave or not, by each
  edge of the outline, and the shoelace formula;
- *window* when the triangle lost nothing to the near and far planes, its
  three corners are inside the lasso and the clipped lasso's area is the
  outline's whole area.

Clipping in floats leaves degenerate slivers along the clipper's edges,
whose rounded area is some 1e-10 of a pixel where the exact one is zero. A
float area is trusted only beyond a bound on its rounding (:func:`noise`,
from the number of points and the size of their coordinates): a crossing
whose clipped area is within it is decided again in exact rational
arithmetic (``fractions.Fraction``) from the same float coordinates; a
window takes an outline whose area misses by no more than it (so a lasso
poking into a triangle by less than ~1e-6 of a pixel would be missed: random
polygons do not).
"""

from fractions import Fraction

import numpy as np



def noise(lasso: np.ndarray, outline: np.ndarray) -> float:
    """A bound on the rounding of the float area of ``lasso`` clipped by ``outline``:
    each of its some ``len(lasso) + len(outline)`` shoelace terms is a product of
    coordinates, each rounded a few times on the way (a generous factor 64)."""
    scale = max(np.abs(lasso).max(), np.abs(outline).max(), 1.0)
    return 64.0 * (len(lasso) + len(outline)) * np.finfo(float).eps * scale * scale


def point_in_polygon(polygon: np.ndarray, x: float, y: float) -> bool:
    """PNPOLY (W. R. Franklin): the even-odd rule, half-open crossings."""
    inside = False
    n = len(polygon)
    j = n - 1
    for i in range(n):
        xi, yi = polygon[i]
        xj, yj = polygon[j]
        if (yi > y) != (yj > y) and x < (xj - xi) * (y - yi) / (yj - yi) + xi:
            inside = not inside
        j = i
    return inside


def shoelace(points) -> float:
    """Signed area (counter-clockwise positive, y up) of a polygon."""
    if len(points) < 3:
        return 0.0
    p = np.asarray(points, float)
    return 0.5 * float(np.dot(p[:, 0], np.roll(p[:, 1], -1)) - np.dot(np.roll(p[:, 0], -1), p[:, 1]))


def clip_by_convex(subject, clipper) -> list:
    """Sutherland-Hodgman: ``subject`` (any simple polygon) clipped by the
    counter-clockwise convex polygon ``clipper``."""
    output = [tuple(p) for p in subject]
    n = len(clipper)
    for k in range(n):
        ax, ay = clipper[k]
        bx, by = clipper[(k + 1) % n]
        source, output = output, []
        if not source:
            break

        def side(p):
            return (bx - ax) * (p[1] - ay) - (by - ay) * (p[0] - ax)

        previous = source[-1]
        for point in source:
            sp, sc = side(previous), side(point)
            if (sp >= 0) != (sc >= 0):
                s = sp / (sp - sc)
                output.append((previous[0] + s * (point[0] - previous[0]), previous[1] + s * (point[1] - previous[1])))
            if sc >= 0:
                output.append(point)
            previous = point
    return output


def exact_area(points) -> Fraction:
    """Unsigned shoelace area of a polygon of Fraction (or float) coordinates, exactly."""
    total = Fraction(0)
    for i in range(len(points)):
        (x0, y0), (x1, y1) = points[i - 1], points[i]
        total += Fraction(x0) * Fraction(y1) - Fraction(x1) * Fraction(y0)
    return abs(total) / 2


def exact_shared_area(lasso, outline) -> Fraction:
    """The area of ``lasso`` clipped by the convex counter-clockwise ``outline``, in exact arithmetic."""
    subject = [(Fraction(x), Fraction(y)) for x, y in lasso]
    clipper = [(Fraction(x), Fraction(y)) for x, y in outline]
    return exact_area(clip_by_convex(subject, clipper)) if len(clipper) >= 3 else Fraction(0)


def _clip_depth(corners: np.ndarray) -> tuple[list, bool]:
    """Homogeneous corners ``(3, 4)`` clipped by ``z >= -w`` and ``z <= w``;
    also whether anything was cut off."""
    polygon = [c for c in corners]
    cut = False
    for sign in (1.0, -1.0):
        distances = [sign * p[2] + p[3] for p in polygon]
        if all(d >= 0 for d in distances):
            continue
        cut = True
        kept = []
        for i in range(len(polygon)):
            p, q = polygon[i - 1], polygon[i]
            dp, dq = distances[i - 1], distances[i]
            if (dp >= 0) != (dq >= 0):
                kept.append(p + dp / (dp - dq) * (q - p))
            if dq >= 0:
                kept.append(q)
        polygon = kept
        if not polygon:
            break
    return polygon, cut


class ProjectedTriangles:
    """World triangles ``(F, 3, 3)`` as seen by ``camera``: each one's clipped
    outline in pixels (``None`` when wholly behind the near plane or past
    the far one), and whether clipping cut it."""

    def __init__(self, camera, triangles: np.ndarray):
        view = np.asarray(camera.view, float)
        projection = np.asarray(camera.projection, float)
        homogeneous = np.concatenate([triangles, np.ones(triangles.shape[:2] + (1,))], axis=2)
        clip = np.einsum("ij,ftj->fti", projection, np.einsum("ij,ftj->fti", view, homogeneous))
        self.outlines = []
        self.cut = np.zeros(len(triangles), bool)
        boxes = np.full((len(triangles), 4), np.nan)
        for f, corners in enumerate(clip):
            polygon, self.cut[f] = _clip_depth(corners)
            if not polygon:
                self.outlines.append(None)
                continue
            pixels = np.array([[(p[0] / p[3] + 1.0) * camera.width / 2.0, (1.0 - p[1] / p[3]) * camera.height / 2.0]
                               for p in polygon])
            # Counter-clockwise with y up is clockwise in pixels (y down): make it the clipper's way.
            if shoelace(pixels) < 0:
                pixels = pixels[::-1]
            self.outlines.append(pixels)
            boxes[f] = [*pixels.min(axis=0), *pixels.max(axis=0)]
        self.boxes = boxes

    def select(self, lasso: np.ndarray, window: bool) -> np.ndarray:
        """``(F,) bool``: which triangles meet (or lie within) the pixel polygon ``lasso (n, 2)``."""
        lasso = np.asarray(lasso, float)
        low, high = lasso.min(axis=0), lasso.max(axis=0)
        with np.errstate(invalid="ignore"):
            near = ~((self.boxes[:, 2] < low[0]) | (self.boxes[:, 0] > high[0])
                     | (self.boxes[:, 3] < low[1]) | (self.boxes[:, 1] > high[1]))
        near &= ~np.isnan(self.boxes[:, 0])
        answer = np.zeros(len(self.outlines), bool)
        for f in np.flatnonzero(near):
            outline = self.outlines[f]
            corners_in = [point_in_polygon(lasso, x, y) for x, y in outline]
            if window and (self.cut[f] or not all(corners_in)):
                continue
            if not window and any(corners_in):
                answer[f] = True
                continue
            area = abs(shoelace(outline))
            shared = abs(shoelace(clip_by_convex(lasso, outline))) if area > 0 else 0.0
            rounding = noise(lasso, outline)
            if window:
                answer[f] = shared >= area - rounding
            else:
                answer[f] = shared > rounding or (shared > 0.0 and exact_shared_area(lasso, outline) > 0)
        return answer


def world_triangles(scene) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every mesh object's faces in world coordinates: ``(F, 3, 3)`` float64,
    with the object id and face index of each row."""
    corners, objects, faces = [], [], []
    for info in scene.objects:
        if info.kind != "mesh":
            continue
        vertices = np.asarray(scene.mesh_vertices(info.mesh), float)
        mesh_faces = np.asarray(scene.mesh_faces(info.mesh))
        transform = np.asarray(info.transform, float)
        world = vertices @ transform[:3, :3].T + transform[:3, 3]
        corners.append(world[mesh_faces])
        objects.append(np.full(len(mesh_faces), info.id))
        faces.append(np.arange(len(mesh_faces)))
    return np.concatenate(corners), np.concatenate(objects), np.concatenate(faces)


def star_polygon(rng: np.random.Generator, centre, radius: float, count: int) -> np.ndarray:
    """A random simple polygon, concave in general: ``count`` points at sorted
    random angles about ``centre``, each at a random distance up to ``radius``."""
    angles = np.sort(rng.uniform(0.0, 2.0 * np.pi, count))
    distances = radius * rng.uniform(0.15, 1.0, count)
    return np.stack([centre[0] + distances * np.cos(angles), centre[1] + distances * np.sin(angles)], axis=1)
