"""One runner for a scene's batch queries.

Every query does the same four things before its own arithmetic: it takes
the snapshot it answers from, narrows the objects it sees (mask, ``objects``,
``exclude``), calls the serial kernel for a few rays or points and the
parallel one for more, into outputs allocated for it. :class:`Query` is what
that preamble (``Scene._query``) gives, and :meth:`Query.run` runs a kernel; ``*_outputs`` functions allocate what
each kernel writes, in one block per dtype (for a click's single ray,
allocations cost as much as the traversal), in the kernel's order.
"""

from typing import Callable, NamedTuple

import numpy as np

from .._jit import SERIAL_BATCH
from ..queries import closest_point, lines_points, scene_rays, sphere_cast, winding
from ..shapes import REMOVED
from .checks import ALL_BITS, check_mask, check_query_ids
from .recycling import frozen
from .snapshot import Snapshot


class Kernels(NamedTuple):
    """A query's kernel in its two forms, of the same arguments."""

    serial: Callable
    parallel: Callable


CLOSEST_HITS = Kernels(scene_rays.closest_hits_serial, scene_rays.closest_hits_parallel)
PICKS = Kernels(lines_points.pick_serial, lines_points.pick_parallel)
OCCLUSION = Kernels(scene_rays.occluded_serial, scene_rays.occluded_parallel)
CLOSEST_POINTS = Kernels(closest_point.scene_closest_points_serial, closest_point.scene_closest_points)
SPHERE_CASTS = Kernels(sphere_cast.scene_sphere_casts_serial, sphere_cast.scene_sphere_casts)
CONTAINMENT = Kernels(winding.scene_contains_serial, winding.scene_contains)


def hit_outputs(n: int) -> tuple:
    """``object, mesh, triangle, t, u, v, point, normal, front_face``: the
    closest-hit kernel's outputs (it writes every row, misses included)."""
    object_, mesh, triangle = np.empty((3, n), np.int64)
    t, u, v = np.empty((3, n))
    point, normal = np.empty((2, n, 3))
    return object_, mesh, triangle, t, u, v, point, normal, np.empty(n, np.bool_)


def pick_outputs(n: int) -> tuple:
    """``object, mesh, triangle, t, u, v, point, normal, front_face,
    primitive, set, segment, s, point_index, distance``: the line and point
    pick kernel's outputs (it writes every row)."""
    object_, mesh, triangle, set_, segment, point_index = np.empty((6, n), np.int64)
    t, u, v, s, distance = np.empty((5, n))
    point, normal = np.empty((2, n, 3))
    return (object_, mesh, triangle, t, u, v, point, normal, np.empty(n, np.bool_), np.empty(n, np.int8), set_,
            segment, s, point_index, distance)


def occlusion_outputs(n: int) -> tuple:
    """``occluded``, False for a ray the kernel does not see."""
    return (np.zeros(n, np.bool_),)


def closest_outputs(n: int) -> tuple:
    """``object, row, d2, u, v, point, normal`` of the closest-point kernel:
    ``row`` is the packed triangle row of the nearest point (-1 for a shape
    or none), ``d2`` its squared distance; object -1 where none is found."""
    d2, u, v = np.empty((3, n))
    point, normal = np.empty((2, n, 3))
    return np.full(n, -1, np.int64), np.full(n, -1, np.int32), d2, u, v, point, normal


def sphere_outputs(n: int) -> tuple:
    """``object, row, t, u, v, point, center, normal`` of the sphere-cast
    kernel, misses filled in (object and row -1, t inf, the rest NaN)."""
    u, v = np.full((2, n), np.nan)
    point, center, normal = np.full((3, n, 3), np.nan)
    return np.full(n, -1, np.int64), np.full(n, -1, np.int32), np.full(n, np.inf), u, v, point, center, normal


def containment_outputs(n: int) -> tuple:
    """``omega, wraps, object`` of the containment kernel: scratch, each
    point's rounded winding number, and the object holding it (-1: none)."""
    return np.empty(n), np.empty(n), np.full(n, -1, np.int64)


class Query(NamedTuple):
    """What one query reads: the snapshot it answers from, the objects it
    sees (``enabled (O,)``), and the arguments every kernel of it takes
    first (``head``: the snapshot's arrays with those objects enabled, and,
    for ray queries, the alpha test's tuple; for a pick of line and point
    objects, their arrays between the two)."""

    snap: Snapshot
    enabled: np.ndarray
    head: tuple

    def run(self, kernels: Kernels, outputs: Callable[[int], tuple], n: int, *arguments) -> tuple:
        """The outputs of ``kernels`` for ``n`` rays or points (``outputs(n)``
        allocates them), the kernel called as ``kernel(*head, *arguments,
        *outputs)``: serial up to ``SERIAL_BATCH`` of them, else parallel;
        not called when there are none, or nothing to trace (the outputs
        then keep their fills)."""
        out = outputs(n)
        if n and self.snap.traceable:
            (kernels.serial if n <= SERIAL_BATCH else kernels.parallel)(*self.head, *arguments, *out)
        return out


def enabled_objects(snap: Snapshot, mask, objects, exclude, base: np.ndarray | None = None) -> np.ndarray:
    """(O,) bool: the objects of ``snap`` a query sees: those of ``base``
    (``snap.enabled`` by default) whose mask shares a bit with ``mask``,
    among ``objects`` (all when None), not in ``exclude``."""
    base = snap.enabled if base is None else base
    if objects is None and exclude is None and type(mask) is int and mask == ALL_BITS:
        # No filter: the common case, and a click's pick should not pay for the checks.
        return base
    mask = check_mask(mask)
    if mask == ALL_BITS and objects is None and exclude is None:
        return base
    enabled = base & ((snap.mask & np.uint32(mask)) != 0)
    if objects is not None:
        only = np.zeros_like(enabled)
        only[check_query_ids(snap.kind, REMOVED, "objects", objects)] = True
        enabled &= only
    if exclude is not None:
        enabled[check_query_ids(snap.kind, REMOVED, "exclude", exclude)] = False
    return frozen(enabled)

