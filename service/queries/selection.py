"""What a selection does: ``/scenes/{id}/select`` (what a camera's pixel rectangle or polygon
encloses, or with ``visible_only`` what it shows there) and ``/scenes/{id}/overlap`` (what
touches a solid region), and their answer as the API returns it."""

import numpy as np
import orjson

from bvh.hits import Selection
from bvh.queries.lasso import Lasso, pixels_in_polygon, rect_pixel_ranges, rect_pixels

from ..api import limits
from ..api.errors import ClientError, client_errors
from ..api.schemas import MAX_SAMPLES
from .picking import ALL_BITS, make_camera
from .proximity import proximity_options


def check_rect_overlaps_image(rect: list[float], width: int, height: int, what: str = "") -> None:
    """422 when the rectangle ``[x0, y0, x1, y1]`` (corners in either order) lies wholly
    outside the image ``[0, width] x [0, height]``; ``what`` names it (default: the rect)."""
    left, right = sorted(rect[0::2])
    top, bottom = sorted(rect[1::2])
    if right <= 0 or left >= width or bottom <= 0 or top >= height:
        raise ClientError(422, f"{what or f'rect {list(rect)}'} lies wholly outside the {width}x{height} image: "
                               f"it must overlap [0, {width}] x [0, {height}]")


def region_pixels(body, camera, lasso, settings) -> np.ndarray:
    """``(M, 2)`` ``[column, row]`` of the pixels a visible-only selection casts through: those
    whose centres lie in the rect or polygon, every ``samples``-th; 413 past ``PICK_MAX_RAYS``,
    counted on the region's bounding box before any pixel is listed."""
    bounds = body.rect if lasso is None else [*lasso.polygon.min(axis=0), *lasso.polygon.max(axis=0)]
    columns, rows = rect_pixel_ranges(bounds, camera.width, camera.height, body.samples)
    count = len(columns) * len(rows)
    if count > settings.max_rays:
        # The smallest stride that brings the box's samples within the limit, if one the schema takes does.
        stride = body.samples
        while stride <= MAX_SAMPLES:
            stride += 1
            columns, rows = rect_pixel_ranges(bounds, camera.width, camera.height, stride)
            if len(columns) * len(rows) <= settings.max_rays:
                break
        region = "rect" if lasso is None else "polygon's bounding box"
        advice = f"set samples to {stride} or more, or select a smaller region" if stride <= MAX_SAMPLES \
            else "select a smaller region"
        raise ClientError(413, f"visible_only casts a ray per pixel: the {region} holds {count} pixels at samples "
                               f"{body.samples}; the limit is {settings.max_rays} rays (PICK_MAX_RAYS): {advice}")
    if lasso is None:
        return rect_pixels(bounds, camera.width, camera.height, body.samples)
    return pixels_in_polygon(lasso.polygon, camera.width, camera.height, body.samples)


def common(first: Selection, second: Selection) -> Selection:
    """The rows of ``first`` that ``second`` has too (pairs of object and triangle)."""
    keys = first.object * (2 ** 32) + (first.triangle + 1)
    keep = np.isin(keys, second.object * (2 ** 32) + (second.triangle + 1))
    return Selection(first.object[keep], first.triangle[keep])


def select(stored, body, settings) -> tuple[bytes, int]:
    """The JSON answer of a ``SelectRequest``, and how many rays it cast."""
    camera = make_camera(body)
    lasso = None
    with client_errors():
        if body.polygon is not None:
            lasso = Lasso(camera, body.polygon)
    if lasso is None:
        check_rect_overlaps_image(body.rect, camera.width, camera.height)
    else:
        box = [*lasso.polygon.min(axis=0).tolist(), *lasso.polygon.max(axis=0).tolist()]
        check_rect_overlaps_image(box, camera.width, camera.height, f"the polygon (bounding box {box})")
    filters = {"mask": ALL_BITS if body.mask is None else body.mask, "objects": body.objects,
               "exclude": body.exclude}
    pixels = region_pixels(body, camera, lasso, settings) if body.visible_only else None

    def query(scene):
        if lasso is None:
            geometric = lambda: scene.select(camera.frustum(np.array(body.rect, np.float64)), mode=body.mode,
                                             containment=body.containment, **filters)
        else:
            geometric = lambda: scene.select(mode=body.mode, containment=body.containment, lasso=lasso, **filters)
        if pixels is None:
            return geometric()
        seen = scene.select_visible(camera, pixels, mode=body.mode, **filters)
        return seen if body.containment == "crossing" else common(seen, geometric())

    with client_errors():
        selection, view = stored.consistent(query)
    where = "rect" if lasso is None else "polygon"
    return selection_answer(selection, view, body.mode, settings, "a selection",
                            f": select a smaller {where}, or in mode \"objects\""), 0 if pixels is None else len(pixels)


def overlap(stored, body, settings) -> bytes:
    """The JSON answer of an ``OverlapRequest``."""
    options = proximity_options(body.mask, body.objects, body.exclude)
    with client_errors():
        selection, view = stored.consistent(lambda scene: scene.overlap(
            body.shape.model_dump(), triangles=body.mode == "triangles", **options))
    return selection_answer(selection, view, body.mode, settings, "an overlap",
                            ": use a smaller region, or mode \"objects\"")


def selection_answer(selection, view, mode: str, settings, what: str, advice: str) -> bytes:
    """The JSON answer of a ``bvh.Selection``: objects, and in ``"triangles"`` mode each
    mesh object's faces (``null`` for shapes); 413 past ``PICK_MAX_RESPONSE_MB``, worded
    with ``what`` and ``advice``."""
    # Only the query tells how much is selected: checked before the answer is built.
    listed = selection.triangle[selection.triangle >= 0]
    selected = np.unique(selection.object).size
    limits.check(limits.selection(selected, listed.size, int(listed.max()) if listed.size else 0, view),
                 settings, f"{what} of {selected} objects and {listed.size} triangles", advice)
    if mode == "objects":
        objects = selection.object.tolist()
        names, _ = view.objects.names_and_kinds(selection.object)
        return orjson.dumps({"objects": [{"id": oid, "name": name, "triangles": None}
                                         for oid, name in zip(objects, names)]})
    if selection.object.size == 0:
        return orjson.dumps({"objects": []})
    starts = np.flatnonzero(np.r_[True, np.diff(selection.object) != 0])
    firsts = selection.object[starts]
    names, kinds = view.objects.names_and_kinds(firsts)
    groups = np.split(selection.triangle, starts[1:])
    chosen = [{"id": oid, "name": name, "triangles": triangles[triangles >= 0].tolist() if kind == "mesh" else None}
              for oid, name, kind, triangles in zip(firsts.tolist(), names, kinds, groups)]
    return orjson.dumps({"objects": chosen})
