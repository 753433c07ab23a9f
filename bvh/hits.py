"""Query results: plain arrays, one row per ray (or per hit), and the
per-hit arithmetic that fills fields outside the kernels, in the kernels'
order of operations. The kernels may fuse a multiply and an add (FMA, which
their ``fastmath`` allows), so the two agree to the last bit or two, not
always exactly."""

from dataclasses import dataclass

import numpy as np


#: Names of ``SceneHits.primitive``'s codes (``bvh.queries.lines_points``).
PRIMITIVE_NAMES = ("triangle", "shape", "segment", "point")


def _columns(names: str, frozen: bool = True):
    """Make the decorated class a dataclass whose fields are ``names``
    (space-separated, in the constructor's order), each an ``np.ndarray``
    of one row per ray, point or hit (its docstring gives their shapes)."""

    def make(cls):
        cls.__annotations__ = {name: np.ndarray for name in names.split()}
        return dataclass(frozen=frozen)(cls)

    return make


class _Rows:
    """What every result shares: one row per ray, point or hit, ``len()``
    their number, and a first field that says what each row found (an id,
    -1 for nothing; a ray index for the all-hits results)."""

    def _first(self) -> np.ndarray:
        return getattr(self, next(iter(self.__dataclass_fields__)))

    def __len__(self) -> int:
        return self._first().shape[0]


class _Hits(_Rows):
    @property
    def hit(self) -> np.ndarray:
        """(N,) bool: which rays (or swept spheres) hit something."""
        return self._first() >= 0


class _Found(_Rows):
    @property
    def found(self) -> np.ndarray:
        """(N,) bool: which points have a surface within ``max_distance``."""
        return self._first() >= 0


@_columns("triangle t u v point normal front_face")
class Hits(_Hits):
    """Closest hit of each of N rays.

    Attributes
    ----------
    triangle : (N,) int64
        Original face index, -1 on a miss.
    t : (N,) float64
        Ray parameter of the hit, ``point = origin + t * direction`` (the
        direction as given, not normalised); inf on a miss.
    u, v : (N,) float64
        Barycentrics: ``point = (1-u-v)*V[f[0]] + u*V[f[1]] + v*V[f[2]]`` in the
        face's own vertex order; NaN on a miss.
    point : (N, 3) float64
        World-space hit point; NaN on a miss.
    normal : (N, 3) float64
        Unit geometric normal along ``(V1-V0) x (V2-V0)``; NaN on a miss.
    front_face : (N,) bool
        True when the ray meets the side the normal points to
        (``direction . normal < 0``); False on a miss.
    """


@_columns("ray t triangle u v point normal front_face")
class AllHits(_Rows):
    """Every surface crossing of N rays, flat and sorted by ``(ray, t)``.

    Attributes
    ----------
    ray : (H,) int64
        Index of the ray each hit belongs to.
    t : (H,) float64
    triangle : (H,) int64
        Original face index.
    u, v : (H,) float64
        Barycentrics, as in :class:`Hits`.
    point : (H, 3) float64
        World-space hit point, ``origin + t * direction`` of its ray.
    normal : (H, 3) float64
        Unit geometric normal, as in :class:`Hits`.
    front_face : (H,) bool
        ``direction . normal < 0``, as in :class:`Hits`.
    """


# Not frozen, unlike the others: a frozen dataclass sets each of its eleven
# fields through object.__setattr__, a tenth of a one-ray pick's time.
@_columns("object mesh triangle t u v point normal shading_normal uv front_face primitive set segment s point_index "
          "distance", frozen=False)
class SceneHits(_Hits):
    """Closest hit of each of N rays in a :class:`bvh.Scene`.

    Attributes
    ----------
    object : (N,) int64
        Id of the object hit, -1 on a miss.
    mesh : (N,) int64
        Its mesh id; -1 for a shape and on a miss.
    triangle : (N,) int64
        Face index in the mesh's faces as added; -1 for a shape and on a miss.
    t : (N,) float64
        World ray parameter, ``point = origin + t * direction``; inf on a miss.
    u, v : (N,) float64
        Barycentrics of the hit in its triangle, as in :class:`Hits`; NaN for
        a shape and on a miss.
    point : (N, 3) float64
        World-space hit point; NaN on a miss.
    normal : (N, 3) float64
        Unit world geometric normal: the object-space normal (along
        ``(V1-V0) x (V2-V0)`` for a triangle, outward for a shape) through the
        inverse transpose of the object's transform, so outward stays outward
        under mirroring; NaN on a miss.
    shading_normal : (N, 3) float64
        The mesh's vertex normals interpolated with the barycentrics and
        mapped like ``normal``, where the mesh has them; else ``normal``.
    uv : (N, 2) float64
        Texture coordinates interpolated with the barycentrics; NaN where the
        mesh has none, for shapes and on a miss.
    front_face : (N,) bool
        ``direction . normal < 0``; False on a miss.
    primitive : (N,) int8
        What was hit: ``PRIMITIVE_NAMES[primitive]`` (0 triangle, 1 shape,
        2 segment, 3 point), -1 on a miss.
    set : (N,) int64
        The line or point set of a segment's or point's object; else -1.
    segment : (N,) int64
        Index of the segment hit in its set as added; else -1.
    s : (N,) float64
        Where on the segment, ``a + s (b - a)``, ``s`` in ``[0, 1]``; else NaN.
    point_index : (N,) int64
        Index of the point hit in its set as added; else -1.
    distance : (N,) float64
        Distance from the ray of the segment's or point's nearest point (the
        closest approach, at ``t``); 0 for a surface, NaN on a miss.

    Notes
    -----
    For a segment or point hit (see :mod:`bvh.queries.lines_points`), ``t`` is the
    ray's parameter of closest approach and ``point`` the nearest point of
    the segment (or the point itself), ``distance`` from ``origin + t *
    direction``; ``mesh``, ``triangle`` are -1, ``u``, ``v``, ``uv`` and the
    normals NaN, ``front_face`` False.
    """


@_columns("ray t object mesh triangle u v point normal shading_normal uv front_face")
class SceneAllHits(_Rows):
    """Every surface crossing of N rays in a scene, flat and sorted by ``(ray, t)``.

    The per-hit fields follow :class:`SceneHits` row for row, so a ray's
    first crossing carries what its closest hit does.

    Attributes
    ----------
    ray, object, mesh, triangle : (H,) int64
        ``mesh`` and ``triangle`` are -1 for shapes.
    t, u, v : (H,) float64
        ``u, v`` are NaN for shapes.
    point : (H, 3) float64
        World hit point, ``origin + t * direction`` of its ray.
    normal : (H, 3) float64
        Unit world geometric normal, outward under mirroring, as in
        :class:`SceneHits` (for a shape, the outward normal at the point).
    shading_normal : (H, 3) float64
        Interpolated vertex normals where the mesh has them, else ``normal``.
    uv : (H, 2) float64
        Interpolated texture coordinates; NaN where the mesh has none and
        for shapes.
    front_face : (H,) bool
        ``direction . normal < 0``.
    """


@_columns("triangle point distance u v normal")
class ClosestPoints(_Found):
    """Nearest surface point of each of N query points on a mesh.

    Attributes
    ----------
    triangle : (N,) int64
        Original face index of the nearest point; -1 when no surface lies
        within ``max_distance``.
    point : (N, 3) float64
        The nearest point, ``(1-u-v)*V[f[0]] + u*V[f[1]] + v*V[f[2]]``; NaN
        for none.
    distance : (N,) float64
        Euclidean distance from the query point; inf for none.
    u, v : (N,) float64
        Barycentrics of ``point`` in its face, as in :class:`Hits`; NaN for
        none. On an edge or a corner one or two of ``1-u-v, u, v`` are 0.
    normal : (N, 3) float64
        Unit geometric normal of the face, along ``(V1-V0) x (V2-V0)`` (also
        when the point is on an edge or corner); NaN for none, and for a
        degenerate face, which has no normal.
    """


@_columns("object mesh triangle point distance u v normal shading_normal uv")
class SceneClosestPoints(_Found):
    """Nearest surface point of each of N world points in a :class:`bvh.Scene`.

    Attributes
    ----------
    object : (N,) int64
        Id of the nearest object; -1 when nothing lies within ``max_distance``.
    mesh, triangle : (N,) int64
        Its mesh and face index; -1 for a shape and for none.
    point : (N, 3) float64
        The nearest surface point in world space; NaN for none.
    distance : (N,) float64
        Its world distance from the query point (exact under any affine
        transform: distances are measured in the world); inf for none.
    u, v : (N,) float64
        Barycentrics in the face, as in :class:`Hits`; NaN for a shape and
        for none.
    normal : (N, 3) float64
        Unit world geometric normal, outward under mirroring, as in
        :class:`SceneHits`: the face's normal for a mesh, the outward normal
        of the surface at the point for a shape; NaN for none.
    shading_normal : (N, 3) float64
        Interpolated vertex normals where the mesh has them, else ``normal``.
    uv : (N, 2) float64
        Interpolated texture coordinates; NaN where the mesh has none, for
        shapes and for none.
    """


@_columns("triangle t point center normal u v")
class SphereHits(_Hits):
    """First contact of a sphere swept along each of N rays, on a mesh.

    Attributes
    ----------
    triangle : (N,) int64
        Original face index touched first; -1 on a miss.
    t : (N,) float64
        Ray parameter of the contact: the sphere's centre is then
        ``origin + t * direction`` (the direction as given); ``tmin`` for a
        sphere already touching the surface there; inf on a miss.
    point : (N, 3) float64
        The contact point, on the surface (world space); for a sphere
        already overlapping the surface at ``tmin``, the surface's point
        nearest the centre. NaN on a miss.
    center : (N, 3) float64
        The sphere's centre at contact, ``origin + t * direction``; NaN on a
        miss.
    normal : (N, 3) float64
        Unit contact normal from the surface to the sphere,
        ``(center - point) / |center - point|``; for radius 0 (and a centre
        on the surface) the face's geometric normal turned against the ray.
        NaN on a miss.
    u, v : (N,) float64
        Barycentrics of ``point`` in its face, as in :class:`Hits`; NaN on a
        miss.
    """


@_columns("object mesh triangle t point center normal u v")
class SceneSphereHits(_Hits):
    """First contact of a sphere swept along each of N world rays in a
    :class:`bvh.Scene`; distances are world distances under any affine
    transform.

    Attributes
    ----------
    object : (N,) int64
        Id of the object touched first; -1 on a miss.
    mesh, triangle : (N,) int64
        Its mesh and face index; -1 for a shape and on a miss.
    t : (N,) float64
        World ray parameter of the contact, the centre at
        ``origin + t * direction``; ``tmin`` if already touching; inf on a
        miss.
    point : (N, 3) float64
        The contact point on the surface, world; NaN on a miss.
    center : (N, 3) float64
        The sphere's centre at contact; NaN on a miss.
    normal : (N, 3) float64
        Unit world contact normal from the surface to the sphere, as in
        :class:`SphereHits` (radius 0: the surface's normal against the
        ray); NaN on a miss.
    u, v : (N,) float64
        Barycentrics of ``point`` in its face; NaN for a shape and on a miss.
    """


@_columns("inside object")
class SceneContains(_Rows):
    """Which object of a scene holds each of N world points
    (``Scene.contains``).

    A mesh object holds a point when its winding number there, taken in the
    object's own space, is at least 1/2 (``MeshBVH.contains``); a sphere or
    a box when the point is in it or on its surface; a quad or a polygon,
    being open, never. Only objects whose world box holds the point are
    asked, so an open mesh holds nothing outside its box.

    Of several objects holding a point, ``object`` is the one whose winding
    number rounds to the largest integer (the one wrapping the point most
    often: 2 where a mesh overlaps itself, 1 for a shape), ties going to the
    lowest id: rounding of the numbers themselves cannot change the answer.

    Attributes
    ----------
    inside : (N,) bool
        Whether any searched object holds the point.
    object : (N,) int64
        The object holding it, by the rule above; -1 for none.
    """


@_columns("object triangle")
class Selection(_Rows):
    """What a frustum selection found.

    Attributes
    ----------
    object : (K,) int64
        Object ids, ascending.
    triangle : (K,) int64
        With ``mode="triangles"``, the face index of each selected triangle
        (an object appears once per triangle; shapes once, with -1); with
        ``mode="objects"``, -1.
    """


def face_normals(triangles: np.ndarray) -> np.ndarray:
    """Unnormalised normals ``(V1-V0) x (V2-V0)`` of packed triangles.

    Parameters
    ----------
    triangles : (H, 9) float32
        Rows of a packed triangle array (``V0, V1, V2``).

    Returns
    -------
    (H, 3) float64
        In the kernels' order: edges in float64 (exact differences of
        float32 values), then the cross product component by component.
    """
    corners = triangles.reshape(-1, 3, 3).astype(np.float64)
    e1 = corners[:, 1] - corners[:, 0]
    e2 = corners[:, 2] - corners[:, 0]
    return np.stack([e1[:, 1] * e2[:, 2] - e1[:, 2] * e2[:, 1],
                     e1[:, 2] * e2[:, 0] - e1[:, 0] * e2[:, 2],
                     e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]], axis=1)


def dot_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(H,) row-wise dot products of ``a, b (H, 3)``, summed ``x + y + z`` in
    that order, as the kernels sum them (``einsum`` or ``@`` may sum otherwise)."""
    return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2]


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """(H, 3) ``vectors`` scaled to unit length in the kernels' way
    (times ``1 / sqrt(|v|^2)``); zero rows become NaN."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return vectors * (1.0 / np.sqrt(dot_rows(vectors, vectors)))[:, None]
