"""``Client`` and ``AsyncClient``: every route of the service, written once.

Each method of :class:`Operations` is an operation (``transport.operation``):
``Client`` runs it and returns its result, ``AsyncClient`` returns a
coroutine of the same result. Batches take and give numpy arrays and go as
JSON below ``binary_threshold`` rays (points, moves) and as the binary
``.bin`` operations from it on; ``binary=True`` / ``False`` forces a form.
"""

from os import PathLike
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from . import __version__
from .arrays import (CLOSEST_RECORD, CONTAINS_RECORD, PICK_PRIMITIVE_RECORD, PICK_RECORD, SPHERE_RECORD,
                     BatchHits, ClosestPoints, Containment, SphereHits, as_vectors, pack_moves, pack_points,
                     pack_rays, records)
from .models import (AllHits, CameraPickHit, EditResult, ObjectList, ObjectsPage, PickHit, Scene, SceneObject,
                     SceneSummary, Selection, VerticesResult)
from .transport import AsyncTransport, Call, RetryPolicy, SyncTransport, operation

#: Batches of at least this many rays (points, moves, vertices) go in the binary form by default.
BINARY_THRESHOLD = 1024

#: Options of a pick; each is sent only when given (the service's defaults otherwise).
PICK_OPTIONS = ("tmin", "tmax", "cull_backfaces", "mask", "objects", "exclude", "alpha_test", "alpha_cutoff",
                "line_tolerance", "point_tolerance")

FileInput = str | PathLike | bytes


def _given(**options) -> dict:
    """The options given (not None)."""
    return {name: value for name, value in options.items() if value is not None}


def _query(options: dict) -> dict:
    """Options as query parameters: booleans as true/false, id lists comma-separated."""
    query = {}
    for name, value in options.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, (list, tuple, np.ndarray)):
            value = ",".join(str(int(item)) for item in value)
        query[name] = value
    return query


def _ids(values) -> list[int] | None:
    return None if values is None else [int(value) for value in values]


def _file(file: FileInput, filename: str | None) -> tuple[str, bytes]:
    """An upload's name and bytes (read now: a retry sends the same bytes again)."""
    if isinstance(file, bytes):
        return filename or "scene.bin", file
    path = Path(file)
    return filename or path.name, path.read_bytes()


class Operations:
    """The API's operations; :class:`Client` and :class:`AsyncClient` run them.

    Parameters
    ----------
    binary_threshold : int
        Batches of at least this many items use the binary ``.bin`` form unless a call says
        ``binary=``.
    """

    transport: SyncTransport | AsyncTransport
    binary_threshold: int = BINARY_THRESHOLD

    def _binary(self, count: int, binary: bool | None) -> bool:
        return count >= self.binary_threshold if binary is None else binary

    # ------------------------------------------------------------ service
    @operation
    def health(self) -> dict:
        """``GET /health``: the process answers."""
        return (yield Call("GET", "/health")).json()

    @operation
    def ready(self) -> bool:
        """``GET /ready``: True once the service answers picks (503 while it starts is False)."""
        response = yield Call("GET", "/ready", expect=(503,))
        return response.status_code == 200

    # ------------------------------------------------------------ scenes
    @operation
    def list_scenes(self) -> list[SceneSummary]:
        """``GET /scenes``: every scene's counts."""
        answer = (yield Call("GET", "/scenes")).json()
        return [SceneSummary.model_validate(scene) for scene in answer["scenes"]]

    @operation
    def create_scene(self, meshes: list[dict], name: str | None = None, *,
                     idempotency_key: str | None = None) -> Scene:
        """``POST /scenes`` from inline meshes.

        Parameters
        ----------
        meshes : list of dict
            Each ``{"name", "vertices": (V, 3), "faces": (F, 3), "transform": (4, 4)}``; arrays may be numpy.
        name : str, optional
        idempotency_key : str, optional
            The write's key; made here when not given, and reused by every retry.
        """
        body = _given(name=name, meshes=[{key: np.asarray(value).tolist() if isinstance(value, np.ndarray) else value
                                          for key, value in mesh.items()} for mesh in meshes])
        response = yield Call("POST", "/scenes", json=body, write=True, idempotency_key=idempotency_key)
        return Scene.model_validate(response.json())

    @operation
    def upload_scene(self, file: FileInput, name: str | None = None, *, filename: str | None = None,
                     idempotency_key: str | None = None) -> Scene:
        """``POST /scenes/upload``: a new scene from a file (OBJ, PLY, STL, glTF/GLB, archives ...).

        ``file`` is a path or the file's bytes (then ``filename`` says its type by its suffix).
        """
        filename, data = _file(file, filename)
        response = yield Call("POST", "/scenes/upload", files={"file": (filename, data)}, data=_given(name=name),
                              write=True, idempotency_key=idempotency_key)
        return Scene.model_validate(response.json())

    @operation
    def get_scene(self, scene_id: str) -> Scene:
        """``GET /scenes/{id}``: the scene with its first objects."""
        return Scene.model_validate((yield Call("GET", f"/scenes/{scene_id}")).json())

    @operation
    def delete_scene(self, scene_id: str, *, idempotency_key: str | None = None) -> None:
        """``DELETE /scenes/{id}``."""
        yield Call("DELETE", f"/scenes/{scene_id}", write=True, idempotency_key=idempotency_key)

    @operation
    def export_glb(self, scene_id: str) -> bytes:
        """``GET /scenes/{id}/export.glb``: the scene as binary glTF."""
        return (yield Call("GET", f"/scenes/{scene_id}/export.glb")).content

    @operation
    def render(self, scene_id: str, **params) -> bytes:
        """``GET /scenes/{id}/render``: a PNG; ``params`` as the route's query (vectors as lists)."""
        query = {name: ",".join(str(item) for item in value) if isinstance(value, (list, tuple)) else value
                 for name, value in params.items()}
        return (yield Call("GET", f"/scenes/{scene_id}/render", params=query)).content

    # ------------------------------------------------------------ objects
    @operation
    def objects_page(self, scene_id: str, after: int | None = None, limit: int | None = None) -> ObjectsPage:
        """``GET /scenes/{id}/objects``: the first ``limit`` objects whose id is above ``after``."""
        page = yield Call("GET", f"/scenes/{scene_id}/objects", params=_given(after=after, limit=limit))
        return ObjectsPage.model_validate(page.json())

    @operation
    def all_objects(self, scene_id: str, page_size: int = 10_000) -> list[SceneObject]:
        """Every live object of the scene, paged in id order until ``next_after`` is None."""
        objects, after = [], None
        while True:
            page = yield Call("GET", f"/scenes/{scene_id}/objects", params=_given(after=after, limit=page_size))
            answer = page.json()
            objects += [SceneObject.model_validate(item) for item in answer["objects"]]
            after = answer["next_after"]
            if after is None:
                return objects

    @operation
    def get_object(self, scene_id: str, object_id: int) -> SceneObject:
        """``GET /scenes/{id}/objects/{oid}``."""
        return SceneObject.model_validate((yield Call("GET", f"/scenes/{scene_id}/objects/{object_id}")).json())

    @operation
    def add_objects(self, scene_id: str, body: dict, *, idempotency_key: str | None = None) -> ObjectList:
        """``POST /scenes/{id}/objects``: an inline mesh (``vertices``, ``faces``), an instance
        (``mesh``) or a shape (``shape``), with ``name``, ``transform``, ``mask``, ``pickable``."""
        body = {key: np.asarray(value).tolist() if isinstance(value, np.ndarray) else value
                for key, value in body.items()}
        response = yield Call("POST", f"/scenes/{scene_id}/objects", json=body, write=True,
                              idempotency_key=idempotency_key)
        return ObjectList.model_validate(response.json())

    @operation
    def upload_objects(self, scene_id: str, file: FileInput, name: str | None = None, *,
                       filename: str | None = None, idempotency_key: str | None = None) -> ObjectList:
        """``POST /scenes/{id}/objects/upload``: the objects of a file added to the scene."""
        filename, data = _file(file, filename)
        response = yield Call("POST", f"/scenes/{scene_id}/objects/upload", files={"file": (filename, data)},
                              data=_given(name=name), write=True, idempotency_key=idempotency_key)
        return ObjectList.model_validate(response.json())

    @operation
    def update_object(self, scene_id: str, object_id: int, *, transform=None, pickable: bool | None = None,
                      mask: int | None = None, name: str | None = None,
                      idempotency_key: str | None = None) -> SceneObject:
        """``PATCH /scenes/{id}/objects/{oid}``: ``transform`` (4, 4), ``pickable``, ``mask``, ``name``."""
        body = _given(transform=None if transform is None else np.asarray(transform, dtype=float).tolist(),
                      pickable=pickable, mask=mask, name=name)
        response = yield Call("PATCH", f"/scenes/{scene_id}/objects/{object_id}", json=body, write=True,
                              idempotency_key=idempotency_key)
        return SceneObject.model_validate(response.json())

    @operation
    def delete_object(self, scene_id: str, object_id: int, *, idempotency_key: str | None = None) -> None:
        """``DELETE /scenes/{id}/objects/{oid}``."""
        yield Call("DELETE", f"/scenes/{scene_id}/objects/{object_id}", write=True, idempotency_key=idempotency_key)

    @operation
    def update_objects(self, scene_id: str, entries: list[dict], *,
                       idempotency_key: str | None = None) -> EditResult:
        """``PATCH /scenes/{id}/objects``: many objects, all or nothing; each entry ``{"id",
        "transform"?, "pickable"?, "mask"?, "name"?}``."""
        body = [{key: np.asarray(value).tolist() if isinstance(value, np.ndarray) else value
                 for key, value in entry.items()} for entry in entries]
        response = yield Call("PATCH", f"/scenes/{scene_id}/objects", json=body, write=True,
                              idempotency_key=idempotency_key)
        return EditResult.model_validate(response.json())

    @operation
    def move_objects(self, scene_id: str, ids, transforms, *, binary: bool | None = None,
                     idempotency_key: str | None = None) -> EditResult:
        """New transforms for many objects in one edit (all or nothing).

        Parameters
        ----------
        ids : (N,) int
        transforms : (N, 4, 4) or (N, 3, 4) float
            Object-to-world matrices (the binary form sends their top three rows as float32).
        binary : bool, optional
            None: the binary ``PATCH .../objects.bin`` from ``binary_threshold`` moves on (its
            answer has ``objects`` None), else the JSON list.
        """
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if self._binary(len(ids), binary):
            response = yield Call("PATCH", f"/scenes/{scene_id}/objects.bin", content=pack_moves(ids, transforms),
                                  write=True, idempotency_key=idempotency_key)
        else:
            matrices = np.asarray(transforms, dtype=np.float64)
            if matrices.ndim != 3 or matrices.shape[0] != len(ids) or matrices.shape[1:] not in ((4, 4), (3, 4)):
                raise ValueError(f"transforms must have shape (N, 4, 4) or (N, 3, 4) with N = {len(ids)} ids, "
                                 f"got {matrices.shape}")
            if matrices.shape[1] == 3:
                matrices = np.concatenate([matrices, np.broadcast_to([[[0.0, 0, 0, 1]]], (len(ids), 1, 4))], axis=1)
            body = [{"id": int(oid), "transform": matrix.tolist()} for oid, matrix in zip(ids, matrices)]
            response = yield Call("PATCH", f"/scenes/{scene_id}/objects", json=body, write=True,
                                  idempotency_key=idempotency_key)
        return EditResult.model_validate(response.json())

    # ------------------------------------------------------------ meshes
    @operation
    def replace_vertices(self, scene_id: str, mesh_id: int, vertices, *, binary: bool | None = None,
                         idempotency_key: str | None = None) -> VerticesResult:
        """New positions for a mesh's vertices (same count and order); its tree is refitted.

        Parameters
        ----------
        vertices : (V, 3) float
            In the mesh's own coordinates. The binary form (``PUT .../vertices.bin``) sends float32,
            the JSON form float64.
        """
        vertices = as_vectors(vertices, "vertices")
        path = f"/scenes/{scene_id}/meshes/{mesh_id}/vertices"
        if self._binary(len(vertices), binary):
            response = yield Call("PUT", path + ".bin", content=pack_points(vertices), write=True,
                                  idempotency_key=idempotency_key)
        else:
            response = yield Call("PUT", path, json={"vertices": vertices.tolist()}, write=True,
                                  idempotency_key=idempotency_key)
        return VerticesResult.model_validate(response.json())

    @operation
    def mesh_vertices(self, scene_id: str, mesh_id: int, *, exact: bool = False) -> np.ndarray:
        """A mesh's vertices, (V, 3): float32 from ``.../vertices.bin``, or with ``exact`` the
        float64 values as stored (JSON)."""
        path = f"/scenes/{scene_id}/meshes/{mesh_id}/vertices"
        if exact:
            return np.asarray((yield Call("GET", path)).json()["vertices"], dtype=np.float64).reshape(-1, 3)
        return np.frombuffer((yield Call("GET", path + ".bin")).content, "<f4").reshape(-1, 3)

    @operation
    def mesh_faces(self, scene_id: str, mesh_id: int) -> np.ndarray:
        """A mesh's triangles, (F, 3) int32 indices into its vertices (``.../faces.bin``)."""
        data = (yield Call("GET", f"/scenes/{scene_id}/meshes/{mesh_id}/faces.bin")).content
        return np.frombuffer(data, "<i4").reshape(-1, 3)

    # ------------------------------------------------------------ picks
    @operation
    def pick(self, scene_id: str, origin, direction, *, all_hits: bool | None = None,
             **options) -> PickHit | AllHits:
        """``POST /scenes/{id}/pick``: the closest hit of one ray.

        Parameters
        ----------
        origin, direction : (3,) float
            ``point = origin + t * direction``; the direction need not be unit, but not zero.
        all_hits : bool, optional
            True: every surface the ray crosses, sorted by t (:class:`AllHits`).
        **options
            ``tmin``, ``tmax``, ``cull_backfaces``, ``mask``, ``objects``, ``exclude``, ``alpha_test``,
            ``alpha_cutoff``, ``line_tolerance``, ``point_tolerance``.
        """
        body = {"origin": [float(x) for x in origin], "direction": [float(x) for x in direction],
                **_given(all_hits=all_hits, **_pick_options(options))}
        answer = (yield Call("POST", f"/scenes/{scene_id}/pick", json=body)).json()
        return AllHits.model_validate(answer) if "hits" in answer else PickHit.model_validate(answer)

    @operation
    def pick_batch(self, scene_id: str, origins, directions, *, records: str = "surface",
                   binary: bool | None = None, **options) -> BatchHits:
        """The closest hit of each of N rays.

        Parameters
        ----------
        origins, directions : (N, 3) float
        records : {"surface", "primitive"}
            Binary form: ``primitive`` also answers what was hit (``primitive``, ``index``, ``s``);
            the JSON form always does.
        binary : bool, optional
            None: ``pick/batch.bin`` (float32 rays, packed records) from ``binary_threshold`` rays
            on, JSON columns below.
        **options
            As :meth:`pick`.

        Returns
        -------
        BatchHits
            Arrays of N (a miss: ``object == -1``, ``t == inf``).
        """
        origins, directions = as_vectors(origins, "origins"), as_vectors(directions, "directions")
        if len(origins) != len(directions):
            raise ValueError(f"origins and directions must have the same length, got {len(origins)} and "
                             f"{len(directions)}")
        given = _pick_options(options)
        path = f"/scenes/{scene_id}/pick/batch"
        if self._binary(len(origins), binary):
            layout = PICK_PRIMITIVE_RECORD if records == "primitive" else PICK_RECORD
            query = _query({**given, **({"records": records} if records != "surface" else {})})
            response = yield Call("POST", path + ".bin", content=pack_rays(origins, directions), params=query)
            found = records_of(response, layout, len(origins), "pick/batch.bin")
            return BatchHits.from_records(found, origins, directions)
        body = {"origins": origins.tolist(), "directions": directions.tolist(), **given}
        return BatchHits.from_json((yield Call("POST", path, json=body)).json())

    @operation
    def pick_camera(self, scene_id: str, camera: dict, pixels, **options) -> list[CameraPickHit]:
        """``POST /scenes/{id}/pick/camera``: one pick per pixel.

        Parameters
        ----------
        camera : dict
            ``position``, ``target``, ``up``, ``fov_y_deg`` (or ``view`` and ``projection``), ``width``, ``height``.
        pixels : (P, 2) float
            Image coordinates within ``[0, width] x [0, height]``.
        """
        body = {**camera, "pixels": np.asarray(pixels, dtype=float).reshape(-1, 2).tolist(), **options}
        answer = (yield Call("POST", f"/scenes/{scene_id}/pick/camera", json=body)).json()
        return [CameraPickHit.model_validate(item) for item in answer["results"]]

    @operation
    def select(self, scene_id: str, camera: dict, *, rect=None, polygon=None, **options) -> Selection:
        """``POST /scenes/{id}/select``: what a rectangle ``[x0, y0, x1, y1]`` or a lasso
        polygon (P, 2) of the camera's image selects; ``mode``, ``containment``, ``visible_only`` ... as options."""
        body = {**camera, **_given(rect=rect, polygon=None if polygon is None else np.asarray(polygon).tolist()),
                **options}
        return Selection.model_validate((yield Call("POST", f"/scenes/{scene_id}/select", json=body)).json())

    @operation
    def idbuffer(self, scene_id: str, camera: dict, **options) -> dict[str, np.ndarray]:
        """``POST /scenes/{id}/idbuffer``: what every pixel shows, as (height, width) planes
        named by the answer's ``X-Idbuffer-Fields`` (``object``, ``triangle``, ``depth``, ...)."""
        response = yield Call("POST", f"/scenes/{scene_id}/idbuffer", json={**camera, **options})
        width, height = int(response.headers["x-idbuffer-width"]), int(response.headers["x-idbuffer-height"])
        planes, offset, data = {}, 0, response.content
        for field in response.headers["x-idbuffer-fields"].split(","):
            # "name:type" or "name:typexN" (N values per pixel, interleaved).
            name, kind = field.split(":")
            kind, _, per_pixel = kind.partition("x")
            dtype, width_of = np.dtype(kind).newbyteorder("<"), int(per_pixel or 1)
            plane = np.frombuffer(data, dtype, width * height * width_of, offset)
            planes[name] = plane.reshape(height, width, width_of) if width_of > 1 else plane.reshape(height, width)
            offset += plane.nbytes
        return planes

    # ------------------------------------------------------------ proximity
    @operation
    def closest(self, scene_id: str, points, *, max_distance: float | None = None, mask: int | None = None,
                objects=None, exclude=None, binary: bool | None = None) -> ClosestPoints:
        """The nearest surface point to each of N points (within ``max_distance``).

        Parameters
        ----------
        points : (N, 3) float
        binary : bool, optional
            None: ``closest.bin`` from ``binary_threshold`` points on (float32; no ``mesh`` column).
        """
        points = as_vectors(points, "points")
        given = _given(max_distance=max_distance, mask=mask, objects=_ids(objects), exclude=_ids(exclude))
        path = f"/scenes/{scene_id}/closest"
        if self._binary(len(points), binary):
            response = yield Call("POST", path + ".bin", content=pack_points(points), params=_query(given))
            return ClosestPoints.from_records(records_of(response, CLOSEST_RECORD, len(points), "closest.bin"))
        answer = (yield Call("POST", path, json={"points": points.tolist(), **given})).json()
        return ClosestPoints.from_json(answer)

    @operation
    def sphere_cast(self, scene_id: str, origins, directions, radius: float, *, tmin: float | None = None,
                    tmax: float | None = None, mask: int | None = None, objects=None, exclude=None,
                    binary: bool | None = None) -> SphereHits:
        """Spheres of ``radius`` swept along N rays: where each first touches a surface.

        Parameters
        ----------
        origins, directions : (N, 3) float
        radius : float
            0 casts plain rays.
        binary : bool, optional
            None: ``sphere-cast.bin`` from ``binary_threshold`` rays on.
        """
        origins, directions = as_vectors(origins, "origins"), as_vectors(directions, "directions")
        given = _given(tmin=tmin, tmax=tmax, mask=mask, objects=_ids(objects), exclude=_ids(exclude))
        path = f"/scenes/{scene_id}/sphere-cast"
        if self._binary(len(origins), binary):
            response = yield Call("POST", path + ".bin", content=pack_rays(origins, directions),
                                  params=_query({"radius": radius, **given}))
            return SphereHits.from_records(records_of(response, SPHERE_RECORD, len(origins), "sphere-cast.bin"))
        body = {"origins": origins.tolist(), "directions": directions.tolist(), "radius": float(radius), **given}
        return SphereHits.from_json((yield Call("POST", path, json=body)).json())

    @operation
    def contains(self, scene_id: str, points, *, signed_distance: bool = False, mask: int | None = None,
                 objects=None, exclude=None, binary: bool | None = None) -> Containment:
        """Inside or outside the scene's closed objects, for each of N points (N, 3)."""
        points = as_vectors(points, "points")
        given = _given(mask=mask, objects=_ids(objects), exclude=_ids(exclude))
        if signed_distance:
            given["signed_distance"] = True
        path = f"/scenes/{scene_id}/contains"
        if self._binary(len(points), binary):
            response = yield Call("POST", path + ".bin", content=pack_points(points), params=_query(given))
            found = records_of(response, CONTAINS_RECORD, len(points), "contains.bin")
            return Containment.from_records(found, signed_distance)
        answer = (yield Call("POST", path, json={"points": points.tolist(), **given})).json()
        return Containment.from_json(answer)

    @operation
    def overlap(self, scene_id: str, shape: dict, mode: str = "objects") -> Selection:
        """``POST /scenes/{id}/overlap``: what touches a solid ``shape`` (``{"kind": "sphere" |
        "aabb" | "obb" | "capsule" | "convex", ...}``); ``mode`` ``objects`` or ``triangles``."""
        answer = yield Call("POST", f"/scenes/{scene_id}/overlap", json={"shape": shape, "mode": mode})
        return Selection.model_validate(answer.json())


def _pick_options(options: dict) -> dict:
    unknown = set(options) - set(PICK_OPTIONS)
    if unknown:
        raise TypeError(f"unknown pick options: {', '.join(sorted(unknown))} (known: {', '.join(PICK_OPTIONS)})")
    given = _given(**options)
    for name in ("objects", "exclude"):
        if name in given:
            given[name] = _ids(given[name])
    return given


def records_of(response: httpx.Response, layout: np.dtype, count: int, what: str) -> np.ndarray:
    return records(response.content, layout, count, what)


def _headers(token: str | None) -> dict:
    headers = {"User-Agent": f"bvh-pick-client/{__version__}"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return headers


class Client(Operations):
    """The service over HTTP, synchronously.

    Parameters
    ----------
    base_url : str
        The service, e.g. ``"http://127.0.0.1:8000"``.
    token : str, optional
        Sent as ``Authorization: Bearer <token>`` (the API key or a scoped token), also on the live channel.
    timeout : float
        Seconds per request.
    retry : RetryPolicy, optional
        When to send a request again (connection errors and 503); writes keep their ``Idempotency-Key``.
    binary_threshold : int
        Batches from this many items on use the binary ``.bin`` operations.
    http : httpx.Client, optional
        A client of your own (its base URL, auth and transport are used as they are).
    """

    def __init__(self, base_url: str = "http://127.0.0.1:8000", *, token: str | None = None, timeout: float = 60.0,
                 retry: RetryPolicy | None = None, binary_threshold: int = BINARY_THRESHOLD,
                 http: httpx.Client | None = None):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.retry = retry or RetryPolicy()
        self.binary_threshold = binary_threshold
        http = http or httpx.Client(base_url=self.base_url, headers=_headers(token), timeout=timeout)
        self.transport = SyncTransport(http, self.retry)

    def live(self, scene_id: str, **options: Any):
        """The scene's live channel, connected: a :class:`bvh_pick_client.live.LiveChannel`
        (use it as a context manager)."""
        from .live import LiveChannel
        options.setdefault("token", self.token)
        options.setdefault("retry", self.retry)
        return LiveChannel.open(self.base_url, scene_id, **options)

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class AsyncClient(Operations):
    """The service over HTTP with asyncio: :class:`Client`'s methods, each a coroutine.

    Parameters are :class:`Client`'s (``http`` an ``httpx.AsyncClient``).
    """

    def __init__(self, base_url: str = "http://127.0.0.1:8000", *, token: str | None = None, timeout: float = 60.0,
                 retry: RetryPolicy | None = None, binary_threshold: int = BINARY_THRESHOLD,
                 http: httpx.AsyncClient | None = None):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.retry = retry or RetryPolicy()
        self.binary_threshold = binary_threshold
        http = http or httpx.AsyncClient(base_url=self.base_url, headers=_headers(token), timeout=timeout)
        self.transport = AsyncTransport(http, self.retry)

    async def live(self, scene_id: str, **options: Any):
        """The scene's live channel, connected (hello read): an
        :class:`bvh_pick_client.live.AsyncLiveChannel` (use it as an async context manager)."""
        from .live import AsyncLiveChannel
        options.setdefault("token", self.token)
        options.setdefault("retry", self.retry)
        options.setdefault("pages", self)
        channel = AsyncLiveChannel(self.base_url, scene_id, **options)
        await channel.connect()
        return channel

    async def close(self) -> None:
        await self.transport.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()
