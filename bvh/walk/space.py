"""A query in the space of the tree it walks: its constants, slot by slot,
and the maps between an object's space and the world.

Every walk (:mod:`bvh.walk.traversal`) carries a query's *constants*, a
flat tuple made once per tree by a *setup*: at the top of the walk in the
world, and again, by the object setup, each time the walk enters an
instance's mesh. The tuple is read by the slot names below, never by bare
numbers; a layout that extends another (a swept sphere's is a ray's and
more) keeps the first one's slots where they are. The first six slots are
the six values a walk of one tree hands its leaf test
(:func:`bvh.walk.traversal.make_step`): a ray's origin and direction, a
point and its world position, or whatever a query puts there.

Layouts
-------
ray (:func:`ray_setup`, :func:`object_ray_setup`)
    ``RAY_OX .. RAY_DZ`` the ray, ``RAY_IX ..`` its safe reciprocal
    direction, ``RAY_OIX ..`` origin times reciprocal, ``RAY_NEAR_X ..`` the
    column of each axis's near plane in a node row (:mod:`bvh.walk.nodes`).
point (:func:`point_setup`, :func:`object_point_setup`)
    ``POINT_X ..`` the point in the tree's space, ``WORLD_X ..`` the point
    in the world, ``POINT_SCALE`` the factor from the tree's squared
    distances to a lower bound of world ones, ``MAP_00 .. MAP_23`` the 3x4
    map from the tree's space to the world, row by row. The functions below
    that take ``consts`` read this layout: a point query's constants, or
    the ``SWEPT_WORLD`` member of a swept one.
swept (``bvh.queries.sphere_cast``, ``bvh.queries.lines_points``)
    The ray layout, then ``SWEPT_SCALE`` (from world radii to an upper
    bound of their size in the tree's space) and ``SWEPT_WORLD`` (the point
    layout of the ray's origin, whose map the leaves use); a pick adds
    ``TREE_KIND``, the kind of tree the walk is in.
overlap (``bvh.queries.overlap``)
    The point layout with the solid's record in ``SOLID`` (the point's
    first slot).
winding (``bvh.queries.winding``)
    ``POINT_X ..`` and ``WINDING_BETA2``.

Windows
-------
A query may hand the walk a per-ray tuple, its *window*, in place of
``tmin`` (the walk hands it on untouched). A swept bound
(:func:`bvh.walk.traversal.visit_swept`) reads one that starts ``(tmin,
radius)``: ``WINDOW_TMIN``, ``WINDOW_RADIUS``.

sphere cast (``bvh.queries.sphere_cast``)
    ``WINDOW_TMIN``, ``WINDOW_RADIUS`` (the world radius), ``SWEEP_UX ..``
    the unit direction, ``SWEEP_LENGTH`` the direction's length and
    ``SWEEP_IX ..`` the unit direction's safe reciprocals.
pick (``bvh.queries.lines_points``)
    ``PICK_TMIN``, ``PICK_TMAX``, the line and the point tolerance and
    slope (``PICK_LINE_TOL`` .. ``PICK_POINT_SLOPE``, slopes times the
    direction's length), ``PICK_T_CAP`` (the largest ``t`` of the scene's
    box) and ``PICK_DX ..`` the world direction.
"""

import math

import numpy as np

from .._jit import jit, jit_inline
from .nodes import MAX_X, MAX_Y, MAX_Z, MIN_X, MIN_Y, MIN_Z

# ------------------------------------------------------------------ slots

RAY_OX, RAY_OY, RAY_OZ, RAY_DX, RAY_DY, RAY_DZ = 0, 1, 2, 3, 4, 5
RAY_IX, RAY_IY, RAY_IZ = 6, 7, 8
RAY_OIX, RAY_OIY, RAY_OIZ = 9, 10, 11
RAY_NEAR_X, RAY_NEAR_Y, RAY_NEAR_Z = 12, 13, 14
RAY_SLOTS = 15

POINT_X, POINT_Y, POINT_Z = 0, 1, 2
WORLD_X, WORLD_Y, WORLD_Z = 3, 4, 5
POINT_SCALE = 6
MAP_00, MAP_01, MAP_02, MAP_03 = 7, 8, 9, 10
MAP_10, MAP_11, MAP_12, MAP_13 = 11, 12, 13, 14
MAP_20, MAP_21, MAP_22, MAP_23 = 15, 16, 17, 18
#: Distance between the slots of two rows of the map.
MAP_ROW = 4
POINT_SLOTS = 19

SWEPT_SCALE = RAY_SLOTS
SWEPT_WORLD = RAY_SLOTS + 1
TREE_KIND = RAY_SLOTS + 2

SOLID = POINT_X

WINDING_BETA2 = 3

WINDOW_TMIN, WINDOW_RADIUS = 0, 1
SWEEP_UX, SWEEP_UY, SWEEP_UZ, SWEEP_LENGTH, SWEEP_IX, SWEEP_IY, SWEEP_IZ = 2, 3, 4, 5, 6, 7, 8
PICK_TMIN, PICK_TMAX, PICK_LINE_TOL, PICK_LINE_SLOPE, PICK_POINT_TOL, PICK_POINT_SLOPE = 0, 1, 2, 3, 4, 5
PICK_T_CAP, PICK_DX, PICK_DY, PICK_DZ = 6, 7, 8, 9

# ------------------------------------------------------------------ setups

#: Direction components smaller than this are treated as this, keeping 1/d
#: finite (<= 1e200) and (bound - origin) / d finite for any float32 bound.
TINY_DIRECTION = 1.0e-200

#: Shrinks a point query's distance bound in an instance by far more than
#: its rounding (a few float64 ulps), so the bound stays below the world
#: distance it stands for even where it is tight (a rigid or uniformly
#: scaled instance).
SCALE_SLACK = 1.0 - 1.0e-12


@jit_inline
def safe_reciprocal(x):
    if abs(x) < TINY_DIRECTION:
        return 1.0 / TINY_DIRECTION if x >= 0.0 else -1.0 / TINY_DIRECTION
    return 1.0 / x


@jit_inline
def ray_setup(ox, oy, oz, dx, dy, dz):
    """What the slab tests of one ray need, computed once per ray: the ray
    layout (``RAY_*``), the reciprocal direction ``i`` safe for axis-aligned
    rays, ``o * i``, and the column of each axis's near plane."""
    ix = safe_reciprocal(dx)
    iy = safe_reciprocal(dy)
    iz = safe_reciprocal(dz)
    near_x = MIN_X if ix >= 0.0 else MAX_X
    near_y = MIN_Y if iy >= 0.0 else MAX_Y
    near_z = MIN_Z if iz >= 0.0 else MAX_Z
    return ox, oy, oz, dx, dy, dz, ix, iy, iz, ox * ix, oy * iy, oz * iz, near_x, near_y, near_z


@jit_inline
def ray_of(consts):
    """The first six slots: a ray's origin and direction in the tree's
    space (what every setup puts there for the leaf test)."""
    return consts[RAY_OX], consts[RAY_OY], consts[RAY_OZ], consts[RAY_DX], consts[RAY_DY], consts[RAY_DZ]


@jit_inline
def object_ray(inverse, o, ox, oy, oz, dx, dy, dz):
    """The ray ``o + t d`` in object ``o``'s space (``inverse`` is ``(O, 3, 4)``
    world-to-object maps): same ``t``, an affine map keeps the ray parameter,
    so ``tmin``, ``tmax`` and hits need no conversion."""
    lox = inverse[o, 0, 0] * ox + inverse[o, 0, 1] * oy + inverse[o, 0, 2] * oz + inverse[o, 0, 3]
    loy = inverse[o, 1, 0] * ox + inverse[o, 1, 1] * oy + inverse[o, 1, 2] * oz + inverse[o, 1, 3]
    loz = inverse[o, 2, 0] * ox + inverse[o, 2, 1] * oy + inverse[o, 2, 2] * oz + inverse[o, 2, 3]
    ldx = inverse[o, 0, 0] * dx + inverse[o, 0, 1] * dy + inverse[o, 0, 2] * dz
    ldy = inverse[o, 1, 0] * dx + inverse[o, 1, 1] * dy + inverse[o, 1, 2] * dz
    ldz = inverse[o, 2, 0] * dx + inverse[o, 2, 1] * dy + inverse[o, 2, 2] * dz
    return lox, loy, loz, ldx, ldy, ldz


@jit_inline
def object_ray_setup(inverse, o, ox, oy, oz, dx, dy, dz):
    """:func:`ray_setup` of the ray in object ``o``'s space (:func:`object_ray`)."""
    lox, loy, loz, ldx, ldy, ldz = object_ray(inverse, o, ox, oy, oz, dx, dy, dz)
    return ray_setup(lox, loy, loz, ldx, ldy, ldz)


@jit_inline
def point_setup(px, py, pz, unused_x, unused_y, unused_z):
    """What a point query needs at the top of its walk, in world space: the
    point layout (``POINT_*``, ``WORLD_*``, ``POINT_SCALE``, ``MAP_*``) with
    the point in both places, a scale of 1 and the identity map. Takes six
    values, as :func:`ray_setup` does, so that one walk serves both."""
    return (px, py, pz, px, py, pz, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0)


@jit_inline
def object_point_setup(inverse, o, px, py, pz, unused_x, unused_y, unused_z):
    """:func:`point_setup` in object ``o``'s space (``inverse`` is ``(O, 3, 4)``).

    An affine map does not keep distances: world distances are what a point
    query measures, so the leaves map their triangles back to the world (the
    forward map, here inverted from ``inverse``), and the boxes, which stay
    in object space, get a lower bound. With ``A`` the linear part of
    ``inverse``, a world distance ``D`` and its object-space image ``d``
    satisfy ``d <= sigma_max(A) D``, so ``D^2 >= d^2 / sigma_max(A)^2``;
    ``sigma_max(A)^2``, the largest eigenvalue of ``A^T A``, is at most the
    largest absolute row sum of ``A^T A`` (Gershgorin), which is exact for
    rotations with a uniform scale and conservative otherwise.
    """
    a00, a01, a02, t0 = inverse[o, 0, 0], inverse[o, 0, 1], inverse[o, 0, 2], inverse[o, 0, 3]
    a10, a11, a12, t1 = inverse[o, 1, 0], inverse[o, 1, 1], inverse[o, 1, 2], inverse[o, 1, 3]
    a20, a21, a22, t2 = inverse[o, 2, 0], inverse[o, 2, 1], inverse[o, 2, 2], inverse[o, 2, 3]
    lx = a00 * px + a01 * py + a02 * pz + t0
    ly = a10 * px + a11 * py + a12 * pz + t1
    lz = a20 * px + a21 * py + a22 * pz + t2
    g00 = a00 * a00 + a10 * a10 + a20 * a20
    g11 = a01 * a01 + a11 * a11 + a21 * a21
    g22 = a02 * a02 + a12 * a12 + a22 * a22
    g01 = abs(a00 * a01 + a10 * a11 + a20 * a21)
    g02 = abs(a00 * a02 + a10 * a12 + a20 * a22)
    g12 = abs(a01 * a02 + a11 * a12 + a21 * a22)
    largest = max(g00 + g01 + g02, g01 + g11 + g12, g02 + g12 + g22)
    # The forward linear map is A^-1 = adj(A) / det(A).
    c00 = a11 * a22 - a12 * a21
    c01 = a02 * a21 - a01 * a22
    c02 = a01 * a12 - a02 * a11
    c10 = a12 * a20 - a10 * a22
    c11 = a00 * a22 - a02 * a20
    c12 = a02 * a10 - a00 * a12
    c20 = a10 * a21 - a11 * a20
    c21 = a01 * a20 - a00 * a21
    c22 = a00 * a11 - a01 * a10
    inv_det = 1.0 / (a00 * c00 + a01 * c10 + a02 * c20)
    f00, f01, f02 = c00 * inv_det, c01 * inv_det, c02 * inv_det
    f10, f11, f12 = c10 * inv_det, c11 * inv_det, c12 * inv_det
    f20, f21, f22 = c20 * inv_det, c21 * inv_det, c22 * inv_det
    f03 = -(f00 * t0 + f01 * t1 + f02 * t2)
    f13 = -(f10 * t0 + f11 * t1 + f12 * t2)
    f23 = -(f20 * t0 + f21 * t1 + f22 * t2)
    return (lx, ly, lz, px, py, pz, SCALE_SLACK / largest, f00, f01, f02, f03, f10, f11, f12, f13, f20, f21, f22,
            f23)


#: Grows the radius of a swept bound by a few parts in 1e12: far more than
#: the roundings of ``o i +- r |i|`` and of the Gershgorin bound, far less
#: than anything a traversal would notice.
SWEPT_SLACK = 1.0 + 4.0e-12


@jit_inline
def swept_setup(ox, oy, oz, dx, dy, dz):
    """What a swept query (a sphere cast, a pick with a tolerance) needs at
    the top of its walk: the swept layout, :func:`ray_setup`'s slots, the
    factor from world radii to this space's (1, padded), and
    :func:`point_setup` of the origin, whose map to the world (the
    identity) and world origin the leaves use."""
    return ray_setup(ox, oy, oz, dx, dy, dz) + (SWEPT_SLACK, point_setup(ox, oy, oz, dx, dy, dz))


@jit_inline
def object_swept_setup(inverse, o, ox, oy, oz, dx, dy, dz):
    """:func:`swept_setup` in object ``o``'s space: the object-space ray's
    slab constants, the radius factor ``sigma_max(A)`` bounded above (``A``
    the linear part of ``inverse``: :func:`object_point_setup`'s Gershgorin
    bound, whose scale is ``SCALE_SLACK / sigma^2``), and the object's map
    to the world."""
    world = object_point_setup(inverse, o, ox, oy, oz, dx, dy, dz)
    return object_ray_setup(inverse, o, ox, oy, oz, dx, dy, dz) + (SWEPT_SLACK / math.sqrt(world[POINT_SCALE]),
                                                                   world)


# ------------------------------------------------------------------ maps
#
# ``consts`` below is the point layout: its MAP_* slots are the map from the
# tree's (an object's) space to the world.


@jit_inline
def world_point(consts):
    """The point (a ray's origin) in the world: ``WORLD_X .. WORLD_Z``."""
    return consts[WORLD_X], consts[WORLD_Y], consts[WORLD_Z]


@jit_inline
def to_world(consts, x, y, z, w):
    """``consts``' object-to-world map applied to ``(x, y, z)``, a point
    (``w = 1``) or a vector (``w = 0``)."""
    return (consts[MAP_00] * x + consts[MAP_01] * y + consts[MAP_02] * z + w * consts[MAP_03],
            consts[MAP_10] * x + consts[MAP_11] * y + consts[MAP_12] * z + w * consts[MAP_13],
            consts[MAP_20] * x + consts[MAP_21] * y + consts[MAP_22] * z + w * consts[MAP_23])


@jit_inline
def world_offset(consts, x, y, z):
    """The object-space point ``(x, y, z)`` in the world, relative to the
    query's world point (``WORLD_X ..``: a ray's origin), as the leaves of
    queries measured from their origin use it."""
    qx, qy, qz = to_world(consts, x, y, z, 1.0)
    return qx - consts[WORLD_X], qy - consts[WORLD_Y], qz - consts[WORLD_Z]


@jit_inline
def to_object(consts, x, y, z):
    """A world vector in object space: the inverse of ``consts``' linear map."""
    a, b, c = consts[MAP_00], consts[MAP_01], consts[MAP_02]
    d, e, f = consts[MAP_10], consts[MAP_11], consts[MAP_12]
    g, h, i = consts[MAP_20], consts[MAP_21], consts[MAP_22]
    c00, c01, c02 = e * i - f * h, c * h - b * i, b * f - c * e
    c10, c11, c12 = f * g - d * i, a * i - c * g, c * d - a * f
    c20, c21, c22 = d * h - e * g, b * g - a * h, a * e - b * d
    inv_det = 1.0 / (a * c00 + b * c10 + c * c20)
    return ((c00 * x + c01 * y + c02 * z) * inv_det, (c10 * x + c11 * y + c12 * z) * inv_det,
            (c20 * x + c21 * y + c22 * z) * inv_det)


@jit_inline
def normal_to_world(consts, nx, ny, nz):
    """An object-space normal in the world, not unit: by the inverse
    transpose of the object-to-world map (its cofactor matrix over its
    determinant, whose sign is all that matters here), so that outward stays
    outward under mirroring, as :class:`bvh.hits.SceneHits` maps normals."""
    a, b, c = consts[MAP_00], consts[MAP_01], consts[MAP_02]
    d, e, f = consts[MAP_10], consts[MAP_11], consts[MAP_12]
    g, h, i = consts[MAP_20], consts[MAP_21], consts[MAP_22]
    c00, c01, c02 = e * i - f * h, f * g - d * i, d * h - e * g
    sign = 1.0 if a * c00 + b * c01 + c * c02 > 0.0 else -1.0
    return (sign * (c00 * nx + c01 * ny + c02 * nz),
            sign * ((c * h - b * i) * nx + (a * i - c * g) * ny + (b * g - a * h) * nz),
            sign * ((b * f - c * e) * nx + (c * d - a * f) * ny + (a * e - b * d) * nz))


@jit_inline
def similarity_scale2(consts):
    """The squared scale of ``consts``' map if it keeps shapes (a rotation,
    perhaps mirrored, and a uniform scale: columns orthogonal and of equal
    length, within 1e-12 relative), else -1.0. Under such a map a sphere
    stays a sphere, of radius ``r sqrt(scale2)``; under others it is an
    ellipsoid (:func:`nearest_on_ellipsoid`)."""
    c0x, c0y, c0z = consts[MAP_00], consts[MAP_10], consts[MAP_20]
    c1x, c1y, c1z = consts[MAP_01], consts[MAP_11], consts[MAP_21]
    c2x, c2y, c2z = consts[MAP_02], consts[MAP_12], consts[MAP_22]
    g00 = c0x * c0x + c0y * c0y + c0z * c0z
    g11 = c1x * c1x + c1y * c1y + c1z * c1z
    g22 = c2x * c2x + c2y * c2y + c2z * c2z
    g01 = c0x * c1x + c0y * c1y + c0z * c1z
    g02 = c0x * c2x + c0y * c2y + c0z * c2z
    g12 = c1x * c2x + c1y * c2y + c1z * c2z
    tolerance = 1.0e-12 * g00
    if (abs(g11 - g00) <= tolerance and abs(g22 - g00) <= tolerance and abs(g01) <= tolerance
            and abs(g02) <= tolerance and abs(g12) <= tolerance):
        return g00
    return -1.0


@jit
def symmetric_eigen(m):
    """Eigenvalues ``(3,)`` and eigenvectors (the columns of a ``(3, 3)``) of
    the symmetric ``m``, by cyclic Jacobi rotations (Golub and Van Loan,
    §8.5): each rotation zeroes one off-diagonal entry; a few sweeps bring
    all three below rounding."""
    a = m.copy()
    vectors = np.eye(3)
    for _ in range(50):
        off = a[0, 1] * a[0, 1] + a[0, 2] * a[0, 2] + a[1, 2] * a[1, 2]
        if off <= 1e-30 * (a[0, 0] * a[0, 0] + a[1, 1] * a[1, 1] + a[2, 2] * a[2, 2]):
            break
        for p, q in ((0, 1), (0, 2), (1, 2)):
            if a[p, q] == 0.0:
                continue
            theta = (a[q, q] - a[p, p]) / (2.0 * a[p, q])
            t = (1.0 if theta >= 0.0 else -1.0) / (abs(theta) + math.sqrt(theta * theta + 1.0))
            c = 1.0 / math.sqrt(t * t + 1.0)
            sn = t * c
            for k in range(3):
                akp, akq = a[k, p], a[k, q]
                a[k, p] = c * akp - sn * akq
                a[k, q] = sn * akp + c * akq
            for k in range(3):
                apk, aqk = a[p, k], a[q, k]
                a[p, k] = c * apk - sn * aqk
                a[q, k] = sn * apk + c * aqk
            for k in range(3):
                vkp, vkq = vectors[k, p], vectors[k, q]
                vectors[k, p] = c * vkp - sn * vkq
                vectors[k, q] = sn * vkp + c * vkq
    return np.array([a[0, 0], a[1, 1], a[2, 2]]), vectors


@jit
def nearest_on_ellipsoid(consts, radius, px, py, pz):
    """The point of the surface ``consts``' map makes of the sphere of
    ``radius`` about the object's origin (an ellipsoid) nearest to the world
    point ``p``: ``(d2, qx, qy, qz, nx, ny, nz)``, the squared distance, the
    world point ``q`` and the unit outward normal there.

    The ellipsoid's axes are the eigenvectors of ``L L^T`` (``L`` the map's
    linear part) and its semi-axes ``radius`` times the square roots of the
    eigenvalues. In that frame the nearest point ``y`` to ``x`` satisfies
    ``y_i = e_i^2 x_i / (t + e_i^2)`` where ``t`` is the root of
    ``sum (e_i x_i / (t + e_i^2))^2 = 1``, found by bisection (Eberly,
    "Distance from a Point to an Ellipse, an Ellipsoid, or a Hyperellipsoid",
    2013), on the side of the surface the point is on. Out of line: it runs
    only for such shapes.
    """
    gram = np.empty((3, 3))
    for r in range(3):
        for c in range(3):
            row_r = MAP_00 + MAP_ROW * r
            row_c = MAP_00 + MAP_ROW * c
            gram[r, c] = (consts[row_r] * consts[row_c] + consts[row_r + 1] * consts[row_c + 1]
                          + consts[row_r + 2] * consts[row_c + 2])
    values, axes = symmetric_eigen(gram)
    offset = np.array([px - consts[MAP_03], py - consts[MAP_13], pz - consts[MAP_23]])
    local = np.empty(3)
    semi = np.empty(3)
    for k in range(3):
        local[k] = axes[0, k] * offset[0] + axes[1, k] * offset[1] + axes[2, k] * offset[2]
        semi[k] = radius * math.sqrt(max(values[k], 0.0))
    x = np.abs(local)
    level = np.sum((x / semi) ** 2)
    nearest = np.zeros(3)
    if level == 0.0:
        # At the centre: the end of the shortest axis.
        k = np.argmin(semi)
        nearest[k] = semi[k]
    else:
        # g(t) = sum (e x / (t + e^2))^2 - 1 falls as t grows; outside
        # (level > 1) the root is positive, inside it lies in (-e_min^2, 0).
        low = -np.min(semi) ** 2 if level < 1.0 else 0.0
        high = np.max(semi) * math.sqrt(np.sum(x * x)) if level > 1.0 else 0.0
        for _ in range(2000):
            middle = 0.5 * (low + high)
            if middle == low or middle == high:
                break
            if np.sum((semi * x / (middle + semi * semi)) ** 2) > 1.0:
                low = middle
            else:
                high = middle
        t = 0.5 * (low + high)
        for k in range(3):
            denominator = t + semi[k] * semi[k]
            nearest[k] = semi[k] * semi[k] * x[k] / denominator if denominator > 0.0 else 0.0
        # A point inside on the plane of the shortest axis (x_k = 0) may have
        # no root above -e_k^2: its nearest point leaves that plane, by the
        # ellipsoid's equation.
        rest = 1.0 - np.sum((nearest / semi) ** 2)
        k = np.argmin(semi)
        if x[k] == 0.0 and rest > 0.0:
            nearest[k] = semi[k] * math.sqrt(rest)
    surface = np.empty(3)
    normal = np.empty(3)
    for r in range(3):
        signed = np.where(local < 0.0, -nearest, nearest)
        surface[r] = np.sum(axes[r, :] * signed)
        normal[r] = np.sum(axes[r, :] * signed / (semi * semi))
    qx, qy, qz = surface[0] + consts[MAP_03], surface[1] + consts[MAP_13], surface[2] + consts[MAP_23]
    gap_x = surface[0] + consts[MAP_03] - px
    gap_y = surface[1] + consts[MAP_13] - py
    gap_z = surface[2] + consts[MAP_23] - pz
    inv_len = 1.0 / math.sqrt(normal[0] * normal[0] + normal[1] * normal[1] + normal[2] * normal[2])
    return (gap_x * gap_x + gap_y * gap_y + gap_z * gap_z, qx, qy, qz, normal[0] * inv_len, normal[1] * inv_len,
            normal[2] * inv_len)
