"""One router per resource: scenes, objects, picks, select, render, the viewer page, and the service's own
health and metrics."""

from starlette.convertors import Convertor, register_url_convertor


class Item(Convertor):
    """A path segment that names one scene or object: any but ``upload``.

    ``POST /scenes/upload`` and ``POST /scenes/{id}/objects/upload`` sit beside
    ``/scenes/{scene_id}`` and ``/scenes/{id}/objects/{object_id}``: without this,
    ``GET /scenes/upload`` would look for a scene named ``upload`` and an
    ``OPTIONS`` would list that route's methods, where the path has only ``POST``
    (and ``PATCH .../objects/upload`` would be a 422 for its object id, not a 405).
    The value is the segment as it is; the route checks it.
    """

    regex = r"(?!upload(?:/|$))[^/]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value) -> str:
        return str(value)


register_url_convertor("item", Item())
