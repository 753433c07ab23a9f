"""The official Python client (``clients/python``, ``bvh_pick_client``) against a real service.

The README's session runs through ``Client`` and ``AsyncClient`` with the
answers the pages show; batches go in both wire forms and agree with the
float64 brute-force oracles of ``testkit.reference``; the live channel is
driven by two clients that see each other's edits, by a client paging a table
past its hello, and by a stalled client the service resyncs; retried writes
carry one ``Idempotency-Key`` and apply once.
"""

import asyncio
import math
import socket

import httpx
import numpy as np
import pytest

import sample_meshes
from testkit.meshes import pick_rays, sample_mesh
from testkit.reference.proximity import closest_points, sphere_cast, winding_numbers
from testkit.reference.raycast import closest_hits

from bvh_pick_client import (ApiError, AsyncClient, BatchHits, Client, LiveEvent, PickHit, Resync, RetryPolicy,
                             __version__)

PART_1 = "issue 39 part 1, branch openapi: the binary forms' own .bin operations and /upload"
PART_6 = "issue 39 part 6, branch idem: Idempotency-Key"

CAMERA = {"position": [0, -4, 3], "target": [0, 0, 0], "up": [0, 0, 1], "fov_y_deg": 50, "width": 640,
          "height": 480}
LASSO = [[200, 150], [440, 170], [330, 240], [430, 330], [210, 320]]
IDENTITY = np.eye(4)
#: Seconds per request: after a change to bvh/, a query waits for its kernels to compile (minutes).
TIMEOUT = 600.0


def close(got, want, rel=1e-9) -> bool:
    return math.isclose(got, want, rel_tol=rel, abs_tol=1e-12)


def torus() -> tuple[np.ndarray, np.ndarray]:
    return sample_mesh("torus.ply")


def triangles_scene(count: int) -> list[dict]:
    """``count`` one-triangle meshes side by side along x: objects 0 .. count - 1."""
    return [{"name": f"t{i}", "vertices": [[i, 0, 0], [i + 0.5, 0, 0], [i, 0.5, 0]], "faces": [[0, 1, 2]]}
            for i in range(count)]


def translation(x: float, y: float = 0.0, z: float = 0.0) -> np.ndarray:
    matrix = np.eye(4)
    matrix[:3, 3] = (x, y, z)
    return matrix


class Awaiting:
    """A sync ``Client`` with awaitable methods, so one session runs through both clients."""

    def __init__(self, client: Client):
        self.client = client

    def __getattr__(self, name):
        method = getattr(self.client, name)

        async def call(*args, **kwargs):
            return method(*args, **kwargs)

        return call


async def readme_session(api) -> None:
    """README.md's and docs/http-api.md's sessions, through the client, with the answers they show."""
    vertices, faces = torus()
    scene = await api.upload_scene(sample_meshes.path("torus.ply"), name="torus")
    sid = scene.id
    assert (scene.name, scene.state, scene.object_count, scene.triangles) == ("torus", "ok", 1, 2304)
    assert scene.objects[0].name == "torus" and scene.objects[0].mask == 4294967295
    assert scene.objects_next_after is None
    assert scene.objects[0].bounds[0] == [-1.350000023841858, -1.350000023841858, -0.3499999940395355]

    hit = await api.pick(sid, [0, 0, 5], [0.2, 0, -1])
    assert isinstance(hit, PickHit) and hit.hit and hit.primitive == "triangle"
    assert close(hit.t, 4.658979256406773) and close(hit.distance, 4.751245228368427)
    assert (hit.object.id, hit.object.name, hit.mesh, hit.triangle) == (0, "torus", 0, 12)
    assert all(close(a, b) for a, b in zip(hit.barycentric, [0.24708398573697143, 0.0, 0.7529160142630286]))
    assert hit.nearest_vertex.index == 7 and hit.nearest_edge == [7, 6] and hit.front_face

    batch = await api.pick_batch(sid, [[0, 0, 5], [5, 5, 5]], [[0.2, 0, -1], [0, 0, -1]])
    assert isinstance(batch, BatchHits)
    assert batch.hit.tolist() == [True, False] and batch.object.tolist() == [0, -1]
    assert batch.triangle.tolist() == [12, -1] and batch.primitive.tolist() == [0, -1]
    assert close(batch.t[0], 4.658979256406773) and batch.t[1] == np.inf
    assert close(batch.v[0], 0.7529160142630286) and np.isnan(batch.u[1]) and np.isnan(batch.point[1]).all()

    camera = await api.pick_camera(sid, CAMERA, [[320.5, 240.5]])
    assert not camera[0].hit and close(camera[0].ray.direction[1], 0.7994163609686451)

    selection = await api.select(sid, CAMERA, rect=[200, 150, 440, 330])
    assert [(item.id, item.name, item.triangles) for item in selection.objects] == [(0, "torus", None)]
    assert (await api.select(sid, CAMERA, rect=[200, 150, 440, 330], containment="window")).objects == []
    lasso = await api.select(sid, CAMERA, polygon=LASSO, mode="triangles")
    visible = await api.select(sid, CAMERA, polygon=LASSO, mode="triangles", visible_only=True)
    assert len(lasso.objects[0].triangles) == 1460 and len(visible.objects[0].triangles) == 686
    assert lasso.objects[0].triangles[:5] == [109, 110, 111, 112, 113]

    planes = await api.idbuffer(sid, CAMERA)
    assert planes["object"].shape == (480, 640) and int((planes["object"] >= 0).sum()) == 40_158

    nearest = await api.closest(sid, [[0.7, 0.4, 1.5], [5, 0, 0]], max_distance=3)
    assert nearest.found.tolist() == [True, False] and nearest.triangle.tolist() == [157, -1]
    assert close(nearest.distance[0], 1.1653818953544948) and nearest.mesh.tolist() == [0, -1]
    swept = await api.sphere_cast(sid, [[0, 0, 5]], [[0.2, 0, -1]], 0.1)
    assert swept.hit.tolist() == [True] and swept.triangle.tolist() == [12]
    assert close(swept.t[0], 4.560700401068741)
    inside = await api.contains(sid, [[1, 0, 0], [0, 0, 0]], signed_distance=True)
    assert inside.inside.tolist() == [True, False] and inside.object.tolist() == [0, -1]
    assert close(inside.signed_distance[0], -0.3462753848775034) and close(inside.signed_distance[1],
                                                                           0.6486082887162911)
    overlap = await api.overlap(sid, {"kind": "sphere", "center": [1, 0, 0.5], "radius": 0.3}, mode="triangles")
    assert overlap.objects[0].triangles[:13] == [6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 54]
    assert overlap.objects[0].triangles[-1] == 2273

    moved = await api.update_object(sid, 0, transform=translation(2))
    assert moved.transform[0] == [1.0, 0.0, 0.0, 2.0] and moved.bounds[0][0] == 0.6499999761581421
    added = await api.add_objects(sid, {"mesh": 0, "name": "copy"})
    assert [(item.id, item.name, item.triangles) for item in added.objects] == [(1, "copy", 2304)]
    first = await api.objects_page(sid, limit=1)
    assert ([item.id for item in first.objects], first.next_after, first.object_count, first.version) == ([0], 0, 2, 2)
    second = await api.objects_page(sid, after=0, limit=1)
    assert ([item.id for item in second.objects], second.next_after) == ([1], None)
    edit = await api.update_objects(sid, [{"id": 0, "transform": IDENTITY}, {"id": 1, "name": "second",
                                                                            "pickable": False}])
    assert (edit.version, edit.count) == (3, 2)
    assert [(item.name, item.pickable) for item in edit.objects] == [("torus", True), ("second", False)]
    with pytest.raises(ApiError) as refused:
        await api.update_objects(sid, [{"id": 1, "name": "x"}, {"id": 7, "mask": 1}])
    assert (refused.value.status, refused.value.detail) == (404, "entry 1: no object 7 in this scene")
    assert [item.name for item in await api.all_objects(sid)] == ["torus", "second"]

    stored = await api.mesh_vertices(sid, 0, exact=True)
    assert stored.dtype == np.float64 and np.array_equal(stored, vertices)
    fetched = await api.mesh_vertices(sid, 0)                     # vertices.bin: float32
    assert fetched.dtype == np.float32 and np.array_equal(fetched, vertices.astype(np.float32))
    assert np.array_equal(await api.mesh_faces(sid, 0), faces)

    glb = await api.export_glb(sid)
    assert glb[:4] == b"glTF"
    again = await api.upload_scene(glb, filename="torus.glb")
    assert [(item.id, item.name, item.pickable) for item in again.objects] == [(0, "torus", True),
                                                                             (1, "second", False)]
    assert again.triangles == 4608
    await api.delete_scene(again.id)

    refit = await api.replace_vertices(sid, 0, fetched * 1.5)     # 1,152 vertices: vertices.bin
    assert (refit.version, refit.mesh, refit.vertices, refit.objects) == (4, 0, 1152, [0, 1])
    with pytest.raises(ApiError) as refused:
        await api.replace_vertices(sid, 0, fetched[:10])
    assert refused.value.status == 422 and refused.value.detail.startswith("refit needs the mesh's 1152 vertices")
    with pytest.raises(ApiError) as refused:
        await api.pick(sid, [0, 0, 5], [0, 0, 0])
    assert (refused.value.status, refused.value.detail) == (422, "direction must not be the zero vector")
    assert sid in [summary.id for summary in await api.list_scenes()]
    await api.delete_scene(sid)
    with pytest.raises(ApiError) as refused:
        await api.get_scene(sid)
    assert refused.value.status == 404


def test_the_client_is_versioned_with_the_api(server):
    assert __version__ == server.openapi["info"]["version"]


def test_the_readme_session_through_the_sync_client(server):
    with Client(server.url, timeout=TIMEOUT) as client:
        assert client.ready() and client.health()
        asyncio.run(readme_session(Awaiting(client)))


def test_the_readme_session_through_the_async_client(server):
    async def run():
        async with AsyncClient(server.url, timeout=TIMEOUT) as client:
            assert await client.ready()
            await readme_session(client)

    asyncio.run(run())


# ------------------------------------------------------------------ batches in numpy, both forms

class Recorder:
    """The paths a client requested (an httpx event hook)."""

    def __init__(self):
        self.paths: list[str] = []

    def __call__(self, request: httpx.Request) -> None:
        self.paths.append(request.url.path)


@pytest.fixture(scope="module")
def torus_scene(server) -> str:
    vertices, faces = torus()
    with Client(server.url, timeout=TIMEOUT) as client:
        return client.create_scene([{"name": "torus", "vertices": vertices, "faces": faces}], name="torus").id


def float32_exact(array) -> np.ndarray:
    """Values a float32 holds exactly: both wire forms then send the very same rays."""
    return np.asarray(array, np.float32).astype(np.float64)


def test_batch_picks_in_both_forms_agree_with_the_brute_force(server, torus_scene):
    server.require("post", "/scenes/{scene_id}/pick/batch.bin", PART_1)
    vertices, faces = torus()
    rng = np.random.default_rng(39)
    origins, directions = (float32_exact(a) for a in pick_rays(vertices, 1500, rng, axis_aligned_fraction=0.1))
    triangle, t, _, _, edge = closest_hits(vertices, faces, origins, directions)
    clear = np.abs(edge) > 1e-4                 # rays that graze no edge: rounding cannot decide them
    assert clear.sum() > 1450 and (triangle[clear] >= 0).sum() > 500
    recorder = Recorder()
    http = httpx.Client(base_url=server.url, event_hooks={"request": [recorder]}, timeout=TIMEOUT)
    with Client(server.url, timeout=TIMEOUT, http=http, binary_threshold=1000) as client:
        as_json = client.pick_batch(torus_scene, origins, directions, binary=False)
        automatic = client.pick_batch(torus_scene, origins, directions, records="primitive")
        small = client.pick_batch(torus_scene, origins[:10], directions[:10])
    assert recorder.paths == [f"/scenes/{torus_scene}/pick/batch", f"/scenes/{torus_scene}/pick/batch.bin",
                              f"/scenes/{torus_scene}/pick/batch"]
    for hits in (as_json, automatic):
        assert hits.triangle.shape == (1500,) and hits.normal.shape == (1500, 3)
        assert np.array_equal(hits.triangle[clear], triangle[clear])
        assert np.array_equal(hits.hit[clear], triangle[clear] >= 0)
        found = clear & (triangle >= 0)
        assert np.allclose(hits.t[found], t[found], rtol=1e-5, atol=1e-5)
        assert np.allclose(hits.point[found], origins[found] + t[found, None] * directions[found], atol=1e-4)
        assert (hits.t[~hits.hit] == np.inf).all() and np.isnan(hits.normal[~hits.hit]).all()
        assert np.array_equal(hits.primitive, np.where(hits.hit, 0, -1))
    assert np.array_equal(as_json.object, automatic.object)
    assert np.allclose(as_json.normal[as_json.hit], automatic.normal[automatic.hit], atol=1e-5)
    assert np.array_equal(small.triangle, as_json.triangle[:10])


def test_proximity_batches_in_both_forms_agree_with_the_brute_force(server, torus_scene):
    for path in ("closest", "sphere-cast", "contains"):
        server.require("post", f"/scenes/{{scene_id}}/{path}.bin", PART_1)
    vertices, faces = torus()
    rng = np.random.default_rng(40)
    points = float32_exact(rng.uniform(-1.6, 1.6, (400, 3)) * [1, 1, 0.5])
    reference = closest_points(vertices, faces, points)
    winding = winding_numbers(vertices, faces, points)
    clear = reference.distance > 1e-3             # points on the surface: inside or outside is rounding
    angles = rng.uniform(0, 2 * np.pi, 300)
    origins = float32_exact(np.stack([np.cos(angles), np.sin(angles), np.full_like(angles, 3.0)], axis=1))
    directions = float32_exact(np.tile([0.0, 0.0, -1.0], (300, 1)))
    swept = sphere_cast(vertices, faces, origins, directions, 0.05)
    with Client(server.url, timeout=TIMEOUT, binary_threshold=250) as client:
        for binary in (False, None):
            nearest = client.closest(torus_scene, points, binary=binary)
            assert nearest.found.all()
            assert np.allclose(nearest.distance, reference.distance, atol=1e-5)
            assert np.allclose(nearest.point, reference.point, atol=1e-4) or binary is None
            inside = client.contains(torus_scene, points, signed_distance=True, binary=binary)
            assert np.array_equal(inside.inside[clear], winding[clear] > 0.5)
            assert np.allclose(np.abs(inside.signed_distance), reference.distance, atol=1e-5)
            cast = client.sphere_cast(torus_scene, origins, directions, 0.05, binary=binary)
            assert cast.hit.all() and np.allclose(cast.t, swept.t, atol=1e-5)
        assert nearest.mesh is None                 # the binary records do not carry it


def test_moves_and_vertices_in_both_forms(server):
    server.require("patch", "/scenes/{scene_id}/objects.bin", PART_1)
    server.require("put", "/scenes/{scene_id}/meshes/{mesh_id}/vertices.bin", PART_1)
    vertices, faces = torus()
    with Client(server.url, timeout=TIMEOUT, binary_threshold=1000) as client:
        scene = client.create_scene(triangles_scene(1100) + [{"name": "torus", "vertices": vertices,
                                                               "faces": faces}])
        ids = np.arange(1100)
        transforms = np.stack([translation(0.25 * i, 1.5, -0.125) for i in ids])
        moved = client.move_objects(scene.id, ids, transforms)            # 1,100 moves: binary
        assert (moved.count, moved.objects) == (1100, None)
        few = client.move_objects(scene.id, [0, 1], transforms[:2, :3, :] + translation(1)[:3] - np.eye(4)[:3])
        assert few.count == 2 and [item.transform[0][3] for item in few.objects] == [1.0, 1.25]
        table = client.all_objects(scene.id, page_size=300)
        assert [item.transform[1][3] for item in table[:1100]] == [1.5] * 1100
        assert [item.transform[0][3] for item in table[2:1100]] == [0.25 * i for i in range(2, 1100)]
        torus_mesh = table[1100].mesh
        refit = client.replace_vertices(scene.id, torus_mesh, vertices * 2, binary=True)
        assert refit.vertices == 1152 and refit.objects == [1100]
        assert np.array_equal(client.mesh_vertices(scene.id, torus_mesh),
                              (vertices * 2).astype(np.float32))
        assert np.array_equal(client.mesh_faces(scene.id, torus_mesh), faces)
        client.delete_scene(scene.id)


def test_uploads_of_files(server):
    server.require("post", "/scenes/upload", PART_1)
    server.require("post", "/scenes/{scene_id}/objects/upload", PART_1)
    path = sample_meshes.path("torus.ply")
    with Client(server.url, timeout=TIMEOUT) as client:
        scene = client.upload_scene(path, name="torus")
        assert (scene.name, scene.triangles, scene.objects[0].name) == ("torus", 2304, "torus")
        more = client.upload_objects(scene.id, open(path, "rb").read(), filename="torus.ply")
        assert [item.id for item in more.objects] == [1]
        assert client.get_scene(scene.id).triangles == 4608
        client.delete_scene(scene.id)


# ------------------------------------------------------------------ retries and idempotency

class Faulty(httpx.HTTPTransport):
    """A real transport that loses the first answer to each of the first ``faults`` writes: the
    request reaches the service (and is applied), then the client sees the connection drop
    (``drop``) or gets a 503 in its place (``unavailable``)."""

    def __init__(self, faults: int, mode: str):
        super().__init__()
        self.faults = faults
        self.mode = mode
        self.keys: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        write = request.method in ("POST", "PATCH", "PUT", "DELETE") and "Idempotency-Key" in request.headers
        if write:
            self.keys.append(request.headers.get("Idempotency-Key"))
        response = super().handle_request(request)
        if write and self.faults > 0:
            self.faults -= 1
            response.read()
            response.close()
            if self.mode == "drop":
                raise httpx.RemoteProtocolError("the connection dropped before the answer", request=request)
            return httpx.Response(503, headers={"Retry-After": "0"}, json={"detail": "try again"})
        return response


def faulty_client(server, faults: int, mode: str) -> tuple[Client, Faulty]:
    transport = Faulty(faults, mode)
    http = httpx.Client(base_url=server.url, transport=transport, timeout=TIMEOUT)
    return Client(server.url, timeout=TIMEOUT, http=http, retry=RetryPolicy(attempts=4, backoff=0.01)), transport


@pytest.mark.parametrize("mode", ["drop", "unavailable"])
def test_a_retried_write_repeats_its_idempotency_key_and_queries_carry_none(server, mode):
    client, transport = faulty_client(server, 1, mode)
    with client:
        scene = client.create_scene(triangles_scene(2))
        client.pick(scene.id, [0.1, 0.1, 1], [0, 0, -1])
        assert len(transport.keys) == 2 and transport.keys[0] == transport.keys[1]
        assert len(transport.keys[0]) == 32
        client.delete_scene(scene.id)
        assert len(transport.keys) == 3 and transport.keys[2] != transport.keys[0]


@pytest.mark.parametrize("mode", ["drop", "unavailable"])
def test_a_retried_write_applies_once(server, mode):
    if not server.has_idempotency_keys():
        pytest.skip(f"the service does not take Idempotency-Key yet ({PART_6}): a retried add would apply twice")
    with Client(server.url, timeout=TIMEOUT) as plain:
        scene = plain.create_scene(triangles_scene(2))
    client, transport = faulty_client(server, 3, mode)
    with client:
        added = client.add_objects(scene.id, {"mesh": 0, "name": "once"})
        moved = client.update_objects(scene.id, [{"id": 0, "transform": translation(3)}])
        objects = client.all_objects(scene.id)
        assert [item.name for item in objects] == ["t0", "t1", "once"] and added.objects[0].id == 2
        assert moved.version == 2                     # create 0, add 1, move 2: each once
        # The add was answered on its fourth try, each under its one key; the move had a key of its own.
        assert transport.keys[:4] == [transport.keys[0]] * 4 and len(set(transport.keys)) == 2
        # The same key with another body is refused, in the service's words.
        with pytest.raises(ApiError) as refused:
            client.add_objects(scene.id, {"mesh": 0, "name": "other"}, idempotency_key=transport.keys[0])
        assert refused.value.status == 422 and "idempotency key" in refused.value.detail
        client.delete_scene(scene.id)


def test_a_live_edit_sent_twice_with_one_id_applies_once(server):
    if not server.has_idempotency_keys():
        pytest.skip(f"the service does not take idempotency keys yet ({PART_6}): a repeated live edit id "
                    "would apply twice")
    with Client(server.url, timeout=TIMEOUT) as client:
        scene = client.create_scene(triangles_scene(2))
        with client.live(scene.id) as channel:
            first = channel.edit([{"id": 1, "transform": translation(5)}], id="edit-once")
            again = channel.edit([{"id": 1, "transform": translation(5)}], id="edit-once")
            assert first.version == again.version == 1
        assert client.objects_page(scene.id).version == 1
        client.delete_scene(scene.id)


def test_errors_are_not_retried_and_say_what_was_wrong(server):
    client, transport = faulty_client(server, 0, "drop")
    with client:
        with pytest.raises(ApiError) as missing:
            client.update_objects("0" * 32, [{"id": 0, "name": "x"}])
        assert missing.value.status == 404 and len(transport.keys) == 1
        with pytest.raises(ValueError, match=r"origins must have shape \(N, 3\)"):
            client.pick_batch("0" * 32, [[0, 0]], [[0, 0, 1]])


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory):
    """A service of its own with an API key (the restart test kills it)."""
    from tests.clients.conftest import SETTINGS, Server
    running = Server(tmp_path_factory.mktemp("keyed-data"), {**SETTINGS, "PICK_API_KEY": KEY})
    yield running
    running.stop()


KEY = "client-test-key"


def test_the_token_goes_as_a_bearer_header(keyed_server):
    with Client(keyed_server.url, timeout=TIMEOUT, token=KEY) as client:
        scene = client.create_scene(triangles_scene(1))
        with client.live(scene.id) as channel:
            assert channel.pick([0.1, 0.1, 1], [0, 0, -1]).object.id == 0
    with Client(keyed_server.url, timeout=TIMEOUT, token="wrong") as client:
        with pytest.raises(ApiError) as refused:
            client.list_scenes()
        assert refused.value.status == 401
        with pytest.raises(ApiError) as refused:
            client.live(scene.id)
        assert refused.value.status == 401


# ------------------------------------------------------------------ the live channel

def test_two_live_clients_see_each_others_edits(server):
    with Client(server.url, timeout=TIMEOUT) as client:
        scene = client.create_scene(triangles_scene(3))
        with client.live(scene.id) as first, client.live(scene.id) as second:
            assert first.hello["object_count"] == 3 and sorted(first.objects) == [0, 1, 2]
            moved = first.move([0], [translation(0, 4)])
            second.wait_version(moved.version, timeout=10)
            assert second.objects[0]["transform"][1][3] == 4.0
            event = second.next_event(timeout=10)
            assert isinstance(event, LiveEvent) and (event.kind, event.version) == ("moved", moved.version)
            assert [item["id"] for item in event.objects] == [0]
            renamed = second.edit([{"id": 2, "name": "renamed"}])
            first.wait_version(renamed.version, timeout=10)
            assert first.objects[2]["name"] == "renamed"
            client.delete_object(scene.id, 1)
            deleted = client.objects_page(scene.id).version
            first.wait_version(deleted, timeout=10)
            second.wait_version(deleted, timeout=10)
            assert sorted(first.objects) == sorted(second.objects) == [0, 2]
            # Picks over the channel are POST /pick's answers; binary batches the JSON batch's.
            assert first.pick([0.1, 4.1, 1], [0, 0, -1]) == client.pick(scene.id, [0.1, 4.1, 1], [0, 0, -1])
            origins = float32_exact([[0.1, 4.1, 1], [2.1, 0.1, 1], [9, 9, 1]])
            directions = np.tile([0.0, 0.0, -1.0], (3, 1))
            over_live = second.pick_batch(origins, directions)
            over_http = client.pick_batch(scene.id, origins, directions)
            assert over_live.object.tolist() == over_http.object.tolist() == [0, 2, -1]
            assert np.array_equal(over_live.t[:2], over_http.t[:2])
            assert second.batch_options(records="primitive")["records"] == "primitive"
            assert second.pick_batch(origins, directions).primitive.tolist() == [0, 0, -1]
            with pytest.raises(ApiError) as refused:
                first.edit([{"id": 99, "name": "x"}])
            assert refused.value.status == 404 and "no object 99" in refused.value.detail
        client.delete_scene(scene.id)


def test_async_live_clients_see_each_others_edits_and_page_past_the_hello(server):
    async def run():
        async with AsyncClient(server.url, timeout=TIMEOUT) as client:
            scene = await client.create_scene(triangles_scene(120))
            first = await client.live(scene.id, page_size=40)
            second = await client.live(scene.id)
            async with first, second:
                assert first.hello["objects_next_after"] == 49 and len(first.hello) == 5
                await first.wait_complete()
                assert sorted(first.objects) == list(range(120))
                moved = await first.move([100, 110], [translation(0, 1), translation(0, 2)])
                await second.wait_version(moved.version)
                assert [second.objects[i]["transform"][1][3] for i in (100, 110)] == [1.0, 2.0]
                table = {item.id: item.model_dump() for item in await client.all_objects(scene.id)}
                assert {oid: item["transform"] for oid, item in second.objects.items()} == \
                       {oid: item["transform"] for oid, item in table.items()}
                hit = await second.pick([100.1, 1.1, 1], [0, 0, -1])
                assert hit.object.id == 100
            await client.delete_scene(scene.id)

    asyncio.run(run())


def test_a_stalled_live_client_is_resynced_and_its_table_is_the_scene(server):
    """A client that stops reading falls more than PICK_LIVE_QUEUE (2 here) events behind while
    14 edits rename 2,000 objects (sent at once, so that the pause stays short of the server's
    WebSocket ping timeout); once it reads again it gets the service's resync, starts its table
    afresh, pages past the hello, and holds the scene as HTTP lists it."""
    with Client(server.url, timeout=TIMEOUT) as client:
        scene = client.create_scene(triangles_scene(2000))
        stalled_socket = socket.socket()
        stalled_socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled_socket.connect(("127.0.0.1", server.port))
        # A tiny receive buffer, one frame queued, no compression: the service's sends block soon.
        stalled = client.live(scene.id, sock=stalled_socket, max_queue=1, compression=None)
        with stalled, client.live(scene.id) as other:
            stalled.pause()

            async def renames():
                async with AsyncClient(server.url, timeout=TIMEOUT) as writer:
                    # Long names: large events for little work of the service's.
                    return await asyncio.gather(*(writer.update_objects(
                        scene.id, [{"id": i, "name": f"{step:03d}" * 80} for i in range(2000)])
                        for step in range(1, 15)))

            newest = max(edit.version for edit in asyncio.run(renames()))
            stalled.resume()
            seen = []
            while not seen or not isinstance(seen[-1], Resync):
                seen.append(stalled.next_event(timeout=60))
            assert seen[-1].reason == "overflow" and len(seen) < 14
            stalled.wait_version(newest, timeout=60)
            other.wait_version(newest, timeout=60)
            table = {item.id: item.model_dump() for item in client.all_objects(scene.id)}
            assert len(table) == 2000 and stalled.objects == other.objects == table
        client.delete_scene(scene.id)


def test_a_live_client_reconnects_after_the_service_restarts(keyed_server):
    """kill -9 of the service and a new one on the same port: the channel opens again (a Resync
    "reconnect"), its table is the scene's, and it edits on."""
    patient = RetryPolicy(attempts=10_000, backoff=0.05, max_wait=0.25)
    with Client(keyed_server.url, timeout=TIMEOUT, token=KEY, retry=patient) as client:
        scene = client.create_scene(triangles_scene(3))
        with client.live(scene.id, timeout=TIMEOUT) as channel:
            keyed_server.restart()
            event = channel.next_event(timeout=TIMEOUT)
            assert isinstance(event, Resync) and event.reason == "reconnect"
            assert sorted(channel.objects) == [0, 1, 2]
            moved = channel.move([1], [translation(0, 7)])
            channel.wait_version(moved.version, timeout=10)
            assert moved.version == 1 and channel.objects[1]["transform"][1][3] == 7.0
            assert client.get_object(scene.id, 1).transform[1][3] == 7.0
