"""The live channel, ``/scenes/{id}/live``: a real uvicorn server on a thread, real WebSocket clients.

Picks and binary batches are checked against the HTTP routes' answers for the
same rays; events are published through the store's ``on_change`` (what the
store calls after a saved edit) from another thread, as the store does.
"""

import asyncio
import json
import os
import socket
import struct
import threading
import time
import uuid
from contextlib import contextmanager

import httpx
import numpy as np
import pytest
import uvicorn
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from service.__main__ import websocket_options
from service.live.hub import KEEP_EVENTS, RESYNC, Subscriber, Window
from service.queries.picking import PRIMITIVE_RECORD, RECORD
from service.settings import Settings
from tests.conftest import TRIANGLE

BELOW = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, -1], [0, 0, 0, 1]]
RAYS = np.array([[0.2, 0.2, 1, 0, 0, -2], [5, 5, 1, 0, 0, -1], [0.1, 0.7, 1, 0, 0, -1], [0.3, 0.3, -3, 0, 0, 1]],
                np.float32)


class LiveServer:
    """``create_app`` served by uvicorn (with the service's WebSocket options) on a free port."""

    def __init__(self, data_dir, **overrides):
        from service.app import create_app

        self.data_dir = data_dir
        #: Where its scenes live (``store`` and its poll interval), for another server on the same scenes.
        self.store_settings = {name: overrides[name] for name in ("store", "store_poll_seconds") if name in overrides}
        settings = Settings(data_dir=data_dir, warm_up=False, **overrides)
        self.app = create_app(settings)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", **websocket_options(settings))
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        headers = {"Authorization": f"Bearer {overrides['api_key']}"} if "api_key" in overrides else {}
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", headers=headers, timeout=600)
        deadline = time.monotonic() + 600
        while True:
            try:
                if self.http.get("/ready").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not become ready"
            time.sleep(0.02)

    def url(self, scene_id: str) -> str:
        return f"ws://127.0.0.1:{self.port}/scenes/{scene_id}/live"

    def scene(self) -> str:
        """A new scene: the unit triangle (object 0, "tri") and a copy 1 below it (object 1, "below")."""
        created = self.http.post("/scenes", json={"name": "live", "meshes": [{"name": "tri", **TRIANGLE}]})
        assert created.status_code == 201, created.text
        scene_id = created.json()["id"]
        added = self.http.post(f"/scenes/{scene_id}/objects", json={"mesh": 0, "name": "below", "transform": BELOW})
        assert added.status_code == 201, added.text
        return scene_id

    def publish(self, scene_id: str, event: dict) -> None:
        """What the store does after a saved edit: call ``on_change`` from its own thread."""
        worker = threading.Thread(target=self.app.state.store.on_change, args=(scene_id, event))
        worker.start()
        worker.join()

    def stop(self):
        self.http.close()
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture(scope="module", params=["embedded", "s3"])
def store_settings(request):
    """Each test of a server here runs on the embedded store and on an object store (a SeaweedFS prefix)."""
    if request.param == "embedded":
        yield {}
        return
    seaweedfs = request.getfixturevalue("seaweedfs")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in seaweedfs.environment().items():
            if name != "PICK_STORE":
                patch.setenv(name, value)
        yield {"store": f"s3://{seaweedfs.bucket}/live-{uuid.uuid4().hex[:12]}", "store_poll_seconds": 0.02}


@pytest.fixture(scope="module")
def server(tmp_path_factory, store_settings):
    running = LiveServer(tmp_path_factory.mktemp("live") / "data", live_queue=8, **store_settings)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def keyed(tmp_path_factory, store_settings):
    running = LiveServer(tmp_path_factory.mktemp("keyed") / "data", api_key="s3cret", **store_settings)
    yield running
    running.stop()


@pytest.fixture
def scene(server) -> str:
    return server.scene()


def receive(ws, timeout: float = 30.0):
    message = ws.recv(timeout=timeout)
    return message if isinstance(message, bytes) else json.loads(message)


def send(ws, message: dict) -> None:
    ws.send(json.dumps(message))


@contextmanager
def opened(server, scene_id, **kwargs):
    """A connection past its hello: ``with opened(...) as (ws, hello)``."""
    with connect(server.url(scene_id), **kwargs) as ws:
        hello = receive(ws)
        assert hello["type"] == "hello", hello
        yield ws, hello


def closed_with(ws) -> tuple[int, str]:
    with pytest.raises(ConnectionClosed):
        while True:
            ws.recv(timeout=30)
    return ws.close_code, ws.close_reason


# ------------------------------------------------------------------ connecting

def test_hello_lists_the_object_table_as_of_its_version(server, scene):
    moved = server.http.patch(f"/scenes/{scene}/objects", json=[{"id": 1, "name": "lower"}])
    assert moved.status_code == 200, moved.text
    with opened(server, scene) as (ws, hello):
        table = server.http.get(f"/scenes/{scene}").json()["objects"]
        # Within PICK_INLINE_OBJECTS: every object, and no cursor to page on from.
        assert hello == {"type": "hello", "scene": scene, "version": moved.json()["version"], "object_count": 2,
                         "objects_next_after": None, "objects": table}
        assert [info["name"] for info in hello["objects"]] == ["tri", "lower"]


def test_unknown_scene_is_said_and_closed_4404(server):
    missing = "0" * 32
    with connect(server.url(missing)) as ws:
        assert receive(ws) == {"type": "error", "id": None, "status": 404, "detail": f"no scene '{missing}'"}
        assert closed_with(ws) == (4404, f"no scene '{missing}'")


def test_a_deleted_scene_closes_the_channel_at_the_next_request(server):
    scene_id = server.scene()
    with opened(server, scene_id) as (ws, _):
        assert server.http.delete(f"/scenes/{scene_id}").status_code == 204
        send(ws, {"type": "pick", "id": 7, "origin": [0.2, 0.2, 1], "direction": [0, 0, -1]})
        assert receive(ws) == {"type": "error", "id": 7, "status": 404, "detail": f"no scene '{scene_id}'"}
        assert closed_with(ws) == (4404, f"no scene '{scene_id}'")


def test_plain_http_get_is_told_to_upgrade(server, scene):
    response = server.http.get(f"/scenes/{scene}/live")
    assert response.status_code == 426 and response.headers["upgrade"] == "websocket"
    assert response.json()["detail"] == (f"/scenes/{scene}/live is a WebSocket: open it with a WebSocket client "
                                         "(ws:// or wss://), which sends this GET with 'Upgrade: websocket'")
    assert server.http.get(f"/scenes/{'0' * 32}/live").status_code == 404


def test_the_openapi_documents_the_protocol_and_its_messages(server):
    schema = server.http.get("/openapi.json").json()
    operation = schema["paths"]["/scenes/{scene_id}/live"]["get"]
    assert "101" in operation["responses"] and "426" in operation["responses"]
    assert "PKB1" in operation["responses"]["101"]["description"]
    names = [ref["$ref"].rsplit("/", 1)[1] for ref in operation["x-client-messages"] + operation["x-server-messages"]]
    assert names == ["AuthMessage", "PickMessage", "EditMessage", "BatchOptionsMessage", "HelloMessage", "PickAnswer",
                     "EditAnswer", "BatchOptionsAnswer", "ErrorMessage", "EventMessage", "ResyncMessage"]
    assert all(name in schema["components"]["schemas"] for name in names)


# ------------------------------------------------------------------ auth

def test_key_in_the_upgrade_header(keyed):
    scene_id = keyed.scene()
    with opened(keyed, scene_id, additional_headers={"Authorization": "Bearer s3cret"}) as (ws, hello):
        assert hello["scene"] == scene_id


def test_key_in_the_first_message(keyed):
    scene_id = keyed.scene()
    with connect(keyed.url(scene_id)) as ws:
        send(ws, {"type": "auth", "key": "s3cret"})
        assert receive(ws)["type"] == "hello"
        send(ws, {"type": "pick", "id": 1, "origin": [0.2, 0.2, 1], "direction": [0, 0, -1]})
        assert receive(ws)["result"]["object"] == {"id": 0, "name": "tri"}
        send(ws, {"type": "auth", "key": "s3cret"})
        assert receive(ws)["detail"] == ("auth is only the first message, when the upgrade carried no key; "
                                         "this connection needs none now")


@pytest.mark.parametrize("first,detail", [
    ({"type": "auth", "key": "guess"}, "wrong API key"),
    ({"type": "auth"}, 'missing API key: the auth message needs "key", the key as a string'),
    ({"type": "pick", "origin": [0, 0, 1], "direction": [0, 0, -1]},
     "missing API key: the first message must be {\"type\": \"auth\", \"key\": \"<key>\"}, or the upgrade must "
     "carry 'Authorization: Bearer <key>'"),
])
def test_a_wrong_or_missing_key_is_said_then_closed_1008(keyed, first, detail):
    scene_id = keyed.scene()
    with connect(keyed.url(scene_id)) as ws:
        send(ws, first)
        assert receive(ws) == {"type": "error", "id": None, "status": 401, "detail": detail}
        code, reason = closed_with(ws)
        # A close reason holds 123 bytes: a longer detail is cut there, with "...".
        assert code == 1008 and detail.startswith(reason.removesuffix("..."))


def test_a_wrong_key_in_the_header_is_refused_before_anything(keyed):
    scene_id = keyed.scene()
    with connect(keyed.url(scene_id), additional_headers={"Authorization": "Bearer guess"}) as ws:
        assert receive(ws) == {"type": "error", "id": None, "status": 401, "detail": "wrong API key"}
        assert closed_with(ws) == (1008, "wrong API key")


def test_an_unknown_scene_is_not_told_before_the_key(keyed):
    with connect(keyed.url("0" * 32)) as ws:
        send(ws, {"type": "auth", "key": "guess"})
        assert receive(ws)["detail"] == "wrong API key"
        assert closed_with(ws)[0] == 1008


# ------------------------------------------------------------------ picks

PICKS = [
    {"origin": [0.1, 0.7, 1.0], "direction": [0, 0, -2]},
    {"origin": [2, 2, 1], "direction": [0, 0, -1]},
    {"origin": [0.2, 0.2, 1], "direction": [0, 0, -1], "tmin": 1.5},
    {"origin": [0.2, 0.2, 1], "direction": [0, 0, -1], "exclude": [0], "cull_backfaces": True},
    {"origin": [0.2, 0.2, 1], "direction": [0, 0, -1], "all_hits": True},
    {"origin": [0.2, 0.2, -0.5], "direction": [0, 0, 1], "mask": 1, "tmax": 10},
]


def test_pick_answers_are_what_post_pick_answers(server, scene):
    with opened(server, scene) as (ws, _):
        for number, body in enumerate(PICKS):
            expected = server.http.post(f"/scenes/{scene}/pick", json=body)
            assert expected.status_code == 200, expected.text
            send(ws, {"type": "pick", "id": f"p{number}", **body})
            assert receive(ws) == {"type": "pick", "id": f"p{number}", "result": expected.json()}
        send(ws, {"type": "pick", "origin": [0.2, 0.2, 1], "direction": [0, 0, -1]})
        answer = receive(ws)
        assert answer["id"] is None and answer["result"]["t"] == pytest.approx(1.0)


def test_pipelined_answers_come_in_order_with_their_ids(server, scene):
    """Picks, refusals, options and binary batches sent without waiting: one answer each, in order."""
    ids = []
    with opened(server, scene) as (ws, _):
        for number in range(300):
            kind = number % 5
            if kind == 3:
                ws.send(b"PKB1" + struct.pack("<I", number) + RAYS.tobytes())
            elif kind == 4:
                send(ws, {"type": "batch_options", "id": number, "tmax": 100 + number})
            elif kind == 2:
                send(ws, {"type": "pick", "id": number, "origin": [0, 0, 1], "direction": [0, 0, 0]})
            else:
                send(ws, {"type": "pick", "id": number, "origin": [0.2, 0.2, 1 + number], "direction": [0, 0, -1]})
            ids.append(number)
        for number in ids:
            answer = receive(ws)
            if number % 5 == 3:
                assert answer[:8] == b"PKB1" + struct.pack("<I", number)
                continue
            assert answer["id"] == number
            if number % 5 == 2:
                assert answer["detail"] == "direction must not be the zero vector"
            elif number % 5 == 4:
                assert answer["result"]["tmax"] == 100 + number
            else:
                assert answer["result"]["t"] == pytest.approx(1 + number)


def test_binary_batches_answer_what_the_http_binary_batch_does(server, scene):
    plain = server.http.post(f"/scenes/{scene}/pick/batch.bin", content=RAYS.tobytes(),
                             headers={"content-type": "application/octet-stream"})
    narrowed = server.http.post(f"/scenes/{scene}/pick/batch.bin?tmin=1.5&exclude=1", content=RAYS.tobytes(),
                                headers={"content-type": "application/octet-stream"})
    assert plain.status_code == narrowed.status_code == 200
    assert plain.content != narrowed.content
    many = np.tile(RAYS, (100, 1))
    many_http = server.http.post(f"/scenes/{scene}/pick/batch.bin", content=many.tobytes(),
                                 headers={"content-type": "application/octet-stream"})
    with opened(server, scene) as (ws, _):
        ws.send(b"PKB1" + struct.pack("<I", 4000000000) + RAYS.tobytes())
        answer = receive(ws)
        assert answer == b"PKB1" + struct.pack("<I", 4000000000) + plain.content
        records = np.frombuffer(answer[8:], RECORD)
        assert records["object"].tolist() == [0, -1, 0, 1]
        # More rays than are traced on the event loop: a worker thread, the same records.
        ws.send(b"PKB1" + struct.pack("<I", 1) + many.tobytes())
        assert receive(ws) == b"PKB1" + struct.pack("<I", 1) + many_http.content
        send(ws, {"type": "batch_options", "id": "o", "tmin": 1.5, "exclude": [1]})
        assert receive(ws) == {"type": "batch_options", "id": "o", "result": {
            "tmin": 1.5, "tmax": None, "cull_backfaces": False, "mask": None, "objects": None, "exclude": [1],
            "alpha_test": True, "alpha_cutoff": 0.5, "line_tolerance": 0.0, "point_tolerance": 0.0,
            "records": "surface"}}
        ws.send(b"PKB1" + struct.pack("<I", 2) + RAYS.tobytes())
        assert receive(ws) == b"PKB1" + struct.pack("<I", 2) + narrowed.content
        # 44-byte records with what was hit, as the HTTP route's records=primitive.
        primitive = server.http.post(f"/scenes/{scene}/pick/batch.bin?tmin=1.5&exclude=1&records=primitive",
                                     content=RAYS.tobytes(), headers={"content-type": "application/octet-stream"})
        assert len(primitive.content) == 44 * RAYS.shape[0]
        send(ws, {"type": "batch_options", "id": "p", "tmin": 1.5, "exclude": [1], "records": "primitive"})
        assert receive(ws)["result"]["records"] == "primitive"
        ws.send(b"PKB1" + struct.pack("<I", 3) + RAYS.tobytes())
        assert receive(ws) == b"PKB1" + struct.pack("<I", 3) + primitive.content
        records = np.frombuffer(primitive.content, PRIMITIVE_RECORD)
        assert records["primitive"].tolist() == [0 if hit else -1 for hit in records["object"] >= 0]


@pytest.mark.parametrize("message,status,detail", [
    ({"type": "pick", "id": 1, "origin": [0, 0, "NaN"], "direction": [0, 0, -1]}, 422,
     "origin[2]: Input should be a valid number, got 'NaN'"),
    ({"type": "pick", "id": 1, "origin": [0, 0, 1], "direction": [0, 0, 0]}, 422,
     "direction must not be the zero vector"),
    ({"type": "pick", "id": 1, "origin": [0, 0, 1], "direction": [0, 0, -1], "colour": 1}, 422,
     "colour: unknown field"),
    ({"type": "pick", "id": 1, "direction": [0, 0, -1]}, 422, "origin: Field required"),
    ({"type": "pick", "id": 1, "origin": [0, 0, 1], "direction": [0, 0, -1], "tmin": 2, "tmax": 1}, 422,
     "tmax (1.0) must not be less than tmin (2.0)"),
    ({"type": "pick", "id": 1, "origin": [0, 0, 1], "direction": [0, 0, -1], "objects": [99]}, 404,
     "no object 99"),
    ({"type": "pick", "id": 1, "origin": [0, 0, 1e31], "direction": [0, 0, -1]}, 422, "origins must lie within"),
    ({"type": "batch_options", "id": 1, "mask": -1}, 422, "mask: Input should be greater than or equal to 0"),
    ({"type": "batch_options", "id": 1, "records": 44}, 422, "records: Input should be 'surface' or 'primitive', "
                                                              "got 44"),
    ({"type": "edit", "id": 1}, 422, "objects: Field required"),
    ({"type": "jump", "id": 1}, 422, "unknown message type 'jump': send pick, edit or batch_options "
                                     "(binary frames are batch picks)"),
    ({"id": 1}, 422, 'a message needs a "type": pick, edit or batch_options'),
    ({"type": "pick", "id": [1], "origin": [0, 0, 1], "direction": [0, 0, -1]}, 422,
     "id: must be a JSON scalar (a string, a finite number, true, false or null), echoed in the answer"),
])
def test_a_refused_message_is_answered_and_the_connection_stays_open(server, scene, message, status, detail):
    with opened(server, scene) as (ws, _):
        send(ws, message)
        answer = receive(ws)
        assert answer["type"] == "error" and answer["status"] == status and detail in answer["detail"], answer
        assert answer["id"] == (None if isinstance(message.get("id"), list) else message.get("id"))
        send(ws, {"type": "pick", "id": "after", "origin": [0.2, 0.2, 1], "direction": [0, 0, -1]})
        assert receive(ws)["result"]["object"]["id"] == 0


@pytest.mark.parametrize("frame,detail", [
    ('{"type": "pick", "origin": [0, 0, NaN], "direction": [0, 0, -1]}', "origin[2]: Input should be a finite number"),
    ('{"type": "pick", "origin": [0, 0, 1], "direction": [0, 0, -1e999]}',
     "direction[2]: Input should be a finite number"),
    ('{"type": "pick", "origin": [0, 0, 1], ', "the message is not valid JSON: EOF while parsing"),
    ("[1, 2]", 'a message is a JSON object with a "type": pick, edit or batch_options'),
    (b"PKB", "a binary frame starts with an 8-byte header: the 4 bytes 'PKB1' and the request id as a little-endian "
             "uint32; this one starts with b'PKB'"),
    (b"PKB1\x05\x00\x00\x00" + bytes(25), "the binary frame's rays (after its 8-byte header) has 25 bytes, which is "
                                           "not a whole number of rays (24 bytes each: 6 little-endian float32)"),
    (b"PKB1\x05\x00\x00\x00", "the binary frame's rays (after its 8-byte header) is empty: send at least one ray"),
])
def test_unreadable_frames_are_answered_in_words(server, scene, frame, detail):
    with opened(server, scene) as (ws, _):
        ws.send(frame)
        answer = receive(ws)
        assert answer["type"] == "error" and answer["status"] == 422 and detail in answer["detail"], answer
        assert answer["id"] == (5 if isinstance(frame, bytes) and len(frame) >= 8 else None)
        send(ws, {"type": "pick", "id": 2, "origin": [0.2, 0.2, 1], "direction": [0, 0, -1]})
        assert receive(ws)["id"] == 2


def test_too_many_rays_in_a_binary_frame_is_413(tmp_path):
    small = LiveServer(tmp_path / "data", max_rays=3)
    try:
        scene_id = small.scene()
        with opened(small, scene_id) as (ws, _):
            ws.send(b"PKB1\x09\x00\x00\x00" + RAYS.tobytes())
            assert receive(ws) == {"type": "error", "id": 9, "status": 413, "detail":
                                   "4 rays in one request; the limit is 3 (PICK_MAX_RAYS)"}
    finally:
        small.stop()


# ------------------------------------------------------------------ events

def moved(oid: int, x: float, version: int) -> dict:
    return {"event": "moved", "version": version, "objects": [{"id": oid, "name": f"o{oid}", "x": x}]}


def test_subscribers_receive_the_events_published_through_on_change(server, scene):
    with opened(server, scene) as (first, _), opened(server, scene) as (second, _):
        server.publish(scene, moved(0, 1.5, 3))
        server.publish(scene, {"event": "removed", "objects": [1], "version": 4})
        for ws in (first, second):
            assert receive(ws) == {"type": "event", **moved(0, 1.5, 3)}
            assert receive(ws) == {"type": "event", "event": "removed", "objects": [1], "version": 4}
        # Another scene's events go to its own subscribers only.
        server.publish(server.scene(), moved(0, 9.0, 5))
        send(first, {"type": "pick", "id": "next", "origin": [0.2, 0.2, 1], "direction": [0, 0, -1]})
        assert receive(first)["id"] == "next"


def events_until(ws, kind: str) -> dict:
    """The next event of this kind (answers and other events before it are skipped)."""
    while True:
        message = receive(ws)
        if message["type"] == "event" and message["event"] == kind:
            return message


def test_http_edits_reach_every_subscriber_as_events(server, scene):
    with opened(server, scene) as (ws, _):
        answer = server.http.patch(f"/scenes/{scene}/objects", json=[{"id": 0, "transform": BELOW}])
        assert answer.status_code == 200, answer.text
        event = events_until(ws, "moved")
        assert event == {"type": "event", "event": "moved", "version": answer.json()["version"],
                         "objects": [server.http.get(f"/scenes/{scene}/objects/0").json()]}
        renamed = server.http.patch(f"/scenes/{scene}/objects/1", json={"name": "lower", "pickable": False})
        event = events_until(ws, "changed")
        assert event["objects"] == [renamed.json()] and event["version"] == answer.json()["version"] + 1
        shifted = [[x, y, z + 0.5] for x, y, z in TRIANGLE["vertices"]]
        refit = server.http.put(f"/scenes/{scene}/meshes/0/vertices", json={"vertices": shifted})
        assert refit.status_code == 200, refit.text
        event = events_until(ws, "vertices")
        assert event["mesh"] == 0 and event["version"] == refit.json()["version"]
        assert sorted(info["id"] for info in event["objects"]) == [0, 1]
        assert all(info["bounds"][1][2] == pytest.approx(info["transform"][2][3] + 0.5) for info in event["objects"])
        assert server.http.delete(f"/scenes/{scene}/objects/1").status_code == 204
        assert events_until(ws, "removed")["objects"] == [1]


def test_another_workers_edits_reach_this_workers_subscribers(server, scene):
    """Two apps on one data directory, as two workers: a client of the second, which gets no
    request at all, hears of an edit made through the first."""
    other = LiveServer(server.data_dir, **server.store_settings)
    try:
        with opened(other, scene) as (ws, _):
            answer = server.http.patch(f"/scenes/{scene}/objects", json=[{"id": 1, "transform": BELOW,
                                                                          "name": "elsewhere"}])
            assert answer.status_code == 200, answer.text
            event = receive(ws, timeout=10)
            assert event == {"type": "event", "event": "changed", "version": answer.json()["version"],
                             "objects": answer.json()["objects"]}
    finally:
        other.stop()


def test_edits_over_the_channel_answer_as_patch_does_and_reach_the_others(server, scene):
    with opened(server, scene) as (editor, _), opened(server, scene) as (watcher, _):
        send(editor, {"type": "edit", "id": "e1", "objects": [{"id": 0, "transform": BELOW, "name": "low"}]})
        answer = None
        while answer is None:
            message = receive(editor)
            if message["type"] == "edit":
                answer = message
        result = answer["result"]
        assert answer["id"] == "e1" and result["count"] == 1
        assert result["objects"] == [server.http.get(f"/scenes/{scene}/objects/0").json()]
        assert result["objects"][0]["name"] == "low" and result["objects"][0]["transform"] == BELOW
        seen = receive(watcher)
        assert seen["type"] == "event" and seen["version"] == result["version"]
        assert seen["objects"] == result["objects"]
        # The edit is in place for the picks that follow it on the channel.
        send(editor, {"type": "pick", "id": "p", "origin": [0.2, 0.2, 1], "direction": [0, 0, -1]})
        pick = events_skipped(editor)
        assert pick["result"]["object"]["name"] == "low" and pick["result"]["t"] == pytest.approx(2.0)


def events_skipped(ws) -> dict:
    """The next message that is not an event."""
    while True:
        message = receive(ws)
        if message["type"] != "event":
            return message


@pytest.mark.parametrize("message,status,detail", [
    ({"type": "edit", "id": 3, "objects": [{"id": 99, "mask": 1}]}, 404, "no object 99"),
    ({"type": "edit", "id": 3, "objects": [{"id": 0}]}, 422, "nothing to change: give transform, pickable, mask or name"),
    ({"type": "edit", "id": 3, "objects": [{"id": 0, "mask": 1}, {"id": 0, "name": "x"}]}, 422,
     "body[1]: object 0 appears twice in the batch"),
    ({"type": "edit", "id": 3, "objects": {"id": 0}}, 422, 'a batch is a JSON list of entries'),
    ({"type": "edit", "id": 3, "objects": [{"id": 0, "mask": 1}], "colour": 2}, 422, "colour: unknown field"),
    ({"type": "edit", "id": 3}, 422, "objects: Field required"),
])
def test_refused_edits_say_why_as_patch_does(server, scene, message, status, detail):
    if set(message) == {"type", "id", "objects"}:
        # The same entries as the body of PATCH /scenes/{id}/objects: the same refusal.
        over_http = server.http.patch(f"/scenes/{scene}/objects", json=message["objects"])
        assert over_http.status_code == status and detail in over_http.json()["detail"]
    with opened(server, scene) as (ws, _):
        send(ws, message)
        answer = receive(ws)
        assert answer["type"] == "error" and answer["id"] == 3, answer
        assert answer["status"] == status and detail in answer["detail"]


def test_events_the_hello_table_already_holds_are_not_sent(server, scene):
    with opened(server, scene) as (ws, hello):
        server.publish(scene, moved(0, 1.0, hello["version"]))
        server.publish(scene, moved(0, 2.0, hello["version"] + 1))
        assert receive(ws) == {"type": "event", **moved(0, 2.0, hello["version"] + 1)}


def test_a_malformed_event_is_dropped_and_the_next_delivered(server, scene):
    with opened(server, scene) as (ws, _):
        server.publish(scene, {"event": "moved", "objects": [{"name": "no id"}], "version": 1})
        server.publish(scene, moved(0, 2.0, 2))
        assert receive(ws) == {"type": "event", **moved(0, 2.0, 2)}


@contextmanager
def stalled_connection(server, scene_id):
    """A client that reads its hello and then nothing: a tiny receive buffer, no reads."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", server.port))
    with connect(server.url(scene_id), sock=sock, max_queue=1) as ws:
        assert receive(ws)["type"] == "hello"
        yield ws


def test_a_stalled_client_stalls_neither_the_publisher_nor_other_clients(server, scene):
    """The stalled client's socket fills, its events pile up past PICK_LIVE_QUEUE (8 here), and it
    is owed a resync; meanwhile every publish returns at once and the other client gets every
    event; once the stalled client reads again, it gets the whole table at the newest version."""
    # Random hex: per-message compression (negotiated by this client) leaves it about half its size.
    big = os.urandom(400_000).hex()
    publish_seconds = []
    with stalled_connection(server, scene) as stalled, opened(server, scene) as (reader, hello):
        for version in range(hello["version"] + 1, hello["version"] + 61):
            event = {"event": "changed", "version": version, "objects": [{"id": version % 2, "name": big}]}
            started = time.perf_counter()
            server.app.state.store.on_change(scene, event)
            publish_seconds.append(time.perf_counter() - started)
            assert receive(reader, timeout=10)["version"] == version
        assert max(publish_seconds) < 0.01
        assert any(subscriber.resyncs for subscriber in server.app.state.live_hub.subscribers(scene))
        table = server.http.get(f"/scenes/{scene}").json()["objects"]
        seen = []
        while True:
            message = receive(stalled, timeout=10)
            seen.append(message["type"])
            if message["type"] == "resync":
                # The events were made up: the scene itself is as it was at the hello.
                assert message == {"type": "resync", "version": hello["version"], "object_count": 2,
                                   "objects_next_after": None, "objects": table}
                break
            assert message["type"] == "event"
        # Whatever was already on its way or kept as published, then one resync instead of the rest.
        assert len(seen) < 50


def test_events_go_to_a_client_at_most_once_per_event_interval(tmp_path):
    """PICK_LIVE_EVENT_MS (200 here): an event coming within the interval after a hand-out waits
    for its end and goes out with what else came meanwhile, moves as one event; answers do not wait."""
    server = LiveServer(tmp_path / "data", live_event_ms=200.0)
    try:
        scene_id = server.scene()
        with opened(server, scene_id) as (ws, hello):
            version = hello["version"]
            started = time.monotonic()
            server.publish(scene_id, moved(0, 1.0, version + 1))
            assert receive(ws)["version"] == version + 1
            first = time.monotonic()
            assert first - started < 0.15
            server.publish(scene_id, moved(0, 2.0, version + 2))
            server.publish(scene_id, moved(1, 3.0, version + 3))
            send(ws, {"type": "pick", "id": "now", "origin": [0.2, 0.2, 1], "direction": [0, 0, -1]})
            assert receive(ws)["id"] == "now"
            assert time.monotonic() - first < 0.15
            merged = receive(ws)
            assert time.monotonic() - first >= 0.19
            assert merged == {"type": "event", "event": "moved", "version": version + 3,
                              "objects": [{"id": 0, "name": "o0", "x": 2.0}, {"id": 1, "name": "o1", "x": 3.0}]}
            # Other kinds keep their place between runs of moves.
            time.sleep(0.25)
            server.publish(scene_id, moved(0, 4.0, version + 4))
            server.publish(scene_id, moved(1, 5.0, version + 5))
            server.publish(scene_id, {"event": "removed", "objects": [1], "version": version + 6})
            server.publish(scene_id, moved(0, 6.0, version + 7))
            server.publish(scene_id, moved(0, 7.0, version + 8))
            assert receive(ws)["version"] == version + 4
            assert [(event["event"], event["version"], event["objects"]) for event in
                    (receive(ws), receive(ws), receive(ws))] == [
                ("moved", version + 5, [{"id": 1, "name": "o1", "x": 5.0}]),
                ("removed", version + 6, [1]),
                ("moved", version + 8, [{"id": 0, "name": "o0", "x": 7.0}])]
    finally:
        server.stop()


def test_the_event_interval_is_checked():
    with pytest.raises(ValueError, match="live_event_ms"):
        Settings(live_event_ms=-1)


def test_events_a_client_falls_behind_on_are_coalesced_per_object():
    window = Window()
    a = {"id": 0, "name": "a"}
    events = [
        {"event": "moved", "objects": [{**a, "x": 1}], "version": 1},
        {"event": "moved", "objects": [{**a, "x": 2}, {"id": 1, "x": 0}], "version": 2},
        {"event": "added", "objects": [{"id": 5, "x": 0}], "version": 3},
        {"event": "changed", "objects": [{"id": 5, "x": 1}, {"id": 1, "x": 3}], "version": 4},
        {"event": "vertices", "mesh": 2, "objects": [{"id": 6, "b": 1}, {"id": 7, "b": 1}], "version": 5},
        {"event": "removed", "objects": [7, 1], "version": 6},
        {"event": "moved", "objects": [{"id": 6, "x": 9}], "version": 7},
    ]
    for event in events:
        window.add(event)
    assert [json.loads(frame) for frame in window.frames()] == [
        {"type": "event", "event": "added", "objects": [{"id": 5, "x": 1}], "version": 7},
        {"type": "event", "event": "vertices", "mesh": 2, "objects": [{"id": 6, "x": 9}], "version": 7},
        {"type": "event", "event": "moved", "objects": [{**a, "x": 2}], "version": 7},
        {"type": "event", "event": "changed", "objects": [{"id": 6, "x": 9}], "version": 7},
        {"type": "event", "event": "removed", "objects": [1, 7], "version": 7},
    ]


def test_a_subscriber_keeps_events_then_coalesces_then_is_owed_one_resync():
    async def scenario():
        subscriber = Subscriber("s", queue_limit=KEEP_EVENTS + 4)
        for version in range(1, KEEP_EVENTS + 1):
            subscriber.offer(moved(0, version, version), f"frame {version}")
        assert await subscriber.take() == [f"frame {version}" for version in range(1, KEEP_EVENTS + 1)]
        # One more than it keeps: behind, so coalesced (the latest of object 0, and object 1).
        for version in range(1, KEEP_EVENTS + 2):
            subscriber.offer(moved(version % 2, version, version), "")
        assert [json.loads(frame) for frame in await subscriber.take()] == [
            {"type": "event", "event": "moved", "version": KEEP_EVENTS + 1,
             "objects": [{"id": 1, "name": "o1", "x": KEEP_EVENTS + 1}, {"id": 0, "name": "o0", "x": KEEP_EVENTS}]}]
        for version in range(1, KEEP_EVENTS + 6):
            subscriber.offer(moved(0, version, version), "")
        assert subscriber.resyncs == 1
        assert await subscriber.take() is RESYNC
        subscriber.offer(moved(0, 4, 99), "after")
        assert await subscriber.take() == ["after"]

    asyncio.run(scenario())
