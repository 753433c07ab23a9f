"""Exactly-once writes: an ``Idempotency-Key`` (or a live edit's string ``id``) applies a write once,
and a repeat is answered with the first answer: on every write route, across a checkpoint and a
restart, across ``kill -9`` between the journal write and the answer, across worker processes, and
when the repeat arrives while the first is still in flight."""

import io
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import orjson
import pytest

from service.store import journal
from service.store.idempotency import REQUEST_FIELD, KeyEntry, KeyPolicy, KeyTable
from tests.conftest import TRIANGLE
from testkit.servers import free_port, kill_9, start_server

REPLAYED = "idempotent-replayed"
#: The real servers here add instances and read tables, which no query kernel serves: no warm-up.
COLD = {"PICK_WARM_UP": "0"}
OBJ = b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"


def keyed(key: str) -> dict:
    return {"Idempotency-Key": key}


def make_scene(client, key: str | None = None) -> str:
    response = client.post("/scenes", json={"name": "keys", "meshes": [{"name": "tri", **TRIANGLE}]},
                           headers=keyed(key) if key else {})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def scene_state(client, scene_id: str) -> tuple[int, list]:
    """(version, every object's JSON) of a scene."""
    page = client.get(f"/scenes/{scene_id}/objects").json()
    return page["version"], page["objects"]


def twice(send, key: str):
    """Send a write twice under ``key``; the repeat must be the first answer, marked replayed."""
    first, second = send(key), send(key)
    assert first.status_code < 300, first.text
    assert REPLAYED not in first.headers
    assert second.headers.get(REPLAYED) == "true"
    assert (second.status_code, second.content) == (first.status_code, first.content)
    return first


def test_every_write_route_applies_a_repeat_once(client):
    scene = make_scene(client)
    at = [[1, 0, 0, 2], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    moves = np.zeros(1, [("id", "<i4"), ("rows", "<f4", (3, 4))])
    moves["id"] = 0
    moves["rows"] = np.eye(4, dtype=np.float32)[:3]
    moves["rows"][0, 0, 3] = 5
    writes = [
        ("add an instance", lambda k: client.post(f"/scenes/{scene}/objects", json={"mesh": 0}, headers=keyed(k))),
        ("add a shape", lambda k: client.post(f"/scenes/{scene}/objects", json={"shape": "sphere", "radius": 1},
                                              headers=keyed(k))),
        ("add an inline mesh", lambda k: client.post(f"/scenes/{scene}/objects", json={"name": "m", **TRIANGLE},
                                                     headers=keyed(k))),
        ("upload a file", lambda k: client.post(f"/scenes/{scene}/objects/upload", headers=keyed(k),
                                                files={"file": ("t.obj", io.BytesIO(OBJ))})),
        ("patch a batch", lambda k: client.patch(f"/scenes/{scene}/objects", headers=keyed(k),
                                                 json=[{"id": 0, "transform": at, "name": "moved"}])),
        ("patch packed moves", lambda k: client.patch(f"/scenes/{scene}/objects.bin", content=moves.tobytes(),
                                                      headers={**keyed(k),
                                                               "Content-Type": "application/octet-stream"})),
        ("patch one", lambda k: client.patch(f"/scenes/{scene}/objects/0", json={"mask": 3}, headers=keyed(k))),
        ("put vertices", lambda k: client.put(f"/scenes/{scene}/meshes/0/vertices", headers=keyed(k),
                                              json={"vertices": (np.array(TRIANGLE["vertices"]) * 2).tolist()})),
        ("put packed vertices", lambda k: client.put(
            f"/scenes/{scene}/meshes/0/vertices.bin", headers={**keyed(k), "Content-Type": "application/octet-stream"},
            content=(np.array(TRIANGLE["vertices"], np.float32) * 3).tobytes())),
        ("delete an object", lambda k: client.delete(f"/scenes/{scene}/objects/1", headers=keyed(k))),
    ]
    for what, send in writes:
        before = scene_state(client, scene)
        twice(send, f"key of {what}")
        after = scene_state(client, scene)
        # Applied once: one new version (or a checkpoint's), and a third send changes nothing.
        assert after[0] > before[0], what
        again = send(f"key of {what}")
        assert again.headers.get(REPLAYED) == "true", what
        assert scene_state(client, scene) == after, what
    objects = scene_state(client, scene)[1]
    # The scene's triangle, the shape, the inline mesh's and the file's objects; the first instance removed.
    assert [entry["id"] for entry in objects] == [0, 2, 3, 4]


def test_a_repeated_create_answers_the_scene_it_made(client):
    body = {"name": "made once", "meshes": [{"name": "tri", **TRIANGLE}]}
    first = twice(lambda k: client.post("/scenes", json=body, headers=keyed(k)), "create")
    uploaded = twice(lambda k: client.post("/scenes/upload", headers=keyed(k),
                                           files={"file": ("t.obj", io.BytesIO(OBJ))}), "upload")
    names = [scene["name"] for scene in client.get("/scenes").json()["scenes"]]
    assert sorted(names) == ["made once", "t"]
    assert first.json()["id"] != uploaded.json()["id"]
    # Deleting is idempotent by its state: a repeat finds nothing to delete.
    assert client.delete(f"/scenes/{first.json()['id']}", headers=keyed("delete")).status_code == 204
    assert client.delete(f"/scenes/{first.json()['id']}", headers=keyed("delete")).status_code == 404


def test_a_key_reused_with_another_request_is_refused(client):
    scene = make_scene(client)
    assert client.post(f"/scenes/{scene}/objects", json={"mesh": 0}, headers=keyed("k")).status_code == 201
    version = scene_state(client, scene)
    for other in (lambda: client.post(f"/scenes/{scene}/objects", json={"mesh": 0, "name": "b"}, headers=keyed("k")),
                  lambda: client.patch(f"/scenes/{scene}/objects", json=[{"id": 0, "mask": 1}], headers=keyed("k"))):
        refused = other()
        assert refused.status_code == 422
        assert refused.json()["detail"].startswith("idempotency key reused with a different request")
    assert scene_state(client, scene) == version
    body = {"name": "one", "meshes": [{"name": "tri", **TRIANGLE}]}
    assert client.post("/scenes", json=body, headers=keyed("c")).status_code == 201
    refused = client.post("/scenes", json={**body, "name": "two"}, headers=keyed("c"))
    assert refused.status_code == 422 and "reused" in refused.json()["detail"]
    # A key is a scene's: the same key on another scene is another write.
    other_scene = make_scene(client)
    assert client.post(f"/scenes/{other_scene}/objects", json={"mesh": 0}, headers=keyed("k")).status_code == 201


@pytest.mark.parametrize("key, words", [("", "must be 1 to 200 characters, got 0"),
                                        ("x" * 201, "must be 1 to 200 characters, got 201"),
                                        ("tab\there", "must be printable ASCII characters, got '\\t' at 3")])
def test_bad_keys_are_refused_in_our_words(client, key, words):
    scene = make_scene(client)
    version = scene_state(client, scene)
    for send in (lambda: client.post(f"/scenes/{scene}/objects", json={"mesh": 0}, headers=keyed(key)),
                 lambda: client.patch(f"/scenes/{scene}/objects/0", json={"mask": 1}, headers=keyed(key))):
        refused = send()
        assert refused.status_code == 400
        assert refused.json()["detail"] == f"Idempotency-Key: {words}"
    assert scene_state(client, scene) == version


def test_every_write_operation_declares_the_header(client):
    document = client.get("/openapi.json").json()
    writes = [(path, method, operation) for path, item in document["paths"].items()
              for method, operation in item.items() if method in ("post", "put", "patch", "delete")]
    edits = [(path, method) for path, method, operation in writes
             if not any(word in path for word in ("/pick", "/closest", "/sphere-cast", "/contains", "/overlap",
                                                  "/select", "/idbuffer"))]
    assert len(edits) >= 11
    for path, method, operation in writes:
        if (path, method) in edits:
            header = [p for p in operation.get("parameters", []) if p["name"] == "Idempotency-Key"]
            assert header and header[0]["in"] == "header" and not header[0]["required"], (path, method)
            assert header[0]["schema"]["maxLength"] == 200


def test_keys_survive_checkpoints_and_a_restart(make_client, tmp_path):
    # A checkpoint after every edit: the keys move into each new journal's base record.
    client = make_client(checkpoint_records=1, checkpoint_seconds=0.05)
    scene = make_scene(client, "create")
    answers = {}
    for number in range(5):
        key = f"add {number}"
        answers[key] = client.post(f"/scenes/{scene}/objects", json={"mesh": 0, "name": key}, headers=keyed(key))
    mesh = client.post(f"/scenes/{scene}/objects", json={"name": "m", **TRIANGLE}, headers=keyed("mesh"))
    deadline = time.monotonic() + 30
    journal_path = tmp_path / "data" / "scenes" / scene / "journal"
    while time.monotonic() < deadline:
        records, _, _, _ = journal.read_file(str(journal_path))
        if len(records) == 1 and records[0].fields.get("keys"):
            break
        time.sleep(0.05)
    assert len(records) == 1 and {entry["key"] for entry in records[0].fields["keys"]} >= set(answers)
    state = scene_state(client, scene)
    client.__exit__(None, None, None)

    again = make_client(checkpoint_records=1)
    for key, first in answers.items():
        repeat = again.post(f"/scenes/{scene}/objects", json={"mesh": 0, "name": key}, headers=keyed(key))
        assert repeat.headers.get(REPLAYED) == "true"
        assert (repeat.status_code, repeat.content) == (201, first.content)
    repeat = again.post(f"/scenes/{scene}/objects", json={"name": "m", **TRIANGLE}, headers=keyed("mesh"))
    assert (repeat.status_code, repeat.content) == (201, mesh.content)
    created = again.post("/scenes", json={"name": "keys", "meshes": [{"name": "tri", **TRIANGLE}]},
                         headers=keyed("create"))
    assert created.status_code == 201 and created.json()["id"] == scene and created.headers.get(REPLAYED) == "true"
    assert scene_state(again, scene) == state


def test_a_live_edit_with_a_string_id_applies_once(client):
    scene = make_scene(client)
    edit = {"type": "edit", "id": "drag-1", "objects": [{"id": 0, "name": "live"}]}

    def answer(websocket):
        while True:
            message = websocket.receive_json()
            if message["type"] in ("edit", "error"):
                return message

    with client.websocket_connect(f"/scenes/{scene}/live") as websocket:
        websocket.send_json(edit)
        first = answer(websocket)
    # Sent again on a new connection (a reconnect): the first answer, applied once.
    with client.websocket_connect(f"/scenes/{scene}/live") as websocket:
        websocket.send_json(edit)
        second = answer(websocket)
        websocket.send_json({**edit, "objects": [{"id": 0, "name": "other"}]})
        refused = answer(websocket)
        websocket.send_json({**edit, "id": 7})
        numbered = answer(websocket)
    assert first["type"] == "edit" and second == first
    assert refused["type"] == "error" and refused["status"] == 422
    # A number only correlates: applied again, a new version.
    assert numbered["type"] == "edit" and numbered["result"]["version"] == first["result"]["version"] + 1
    assert scene_state(client, scene)[0] == first["result"]["version"] + 1


def test_the_key_table_is_bounded_and_forgets_past_the_window():
    table = KeyTable(KeyPolicy(retention_seconds=3600, max_keys=3))
    for number in range(5):
        table.add(KeyEntry(f"k{number}", "d", 200, {"n": number}, number + 1, time.time()))
    assert list(table.entries) == ["k2", "k3", "k4"]
    assert table.find("k0", "d") is None and table.find("k4", "d").answer == {"n": 4}
    stale = KeyTable(KeyPolicy(retention_seconds=60))
    stale.add(KeyEntry("old", "d", 200, None, 1, time.time() - 61))
    assert stale.find("old", "d") is None and len(stale) == 0
    heavy = KeyTable(KeyPolicy(max_bytes=10_000))
    for number in range(10):
        heavy.add(KeyEntry(f"h{number}", "d", 200, {"blob": "x" * 3000}, number + 1, time.time()))
    assert len(heavy) == 3 and heavy.held <= 10_000


# ---------------------------------------------------------------- real servers

def send_without_reading(port: int, method: str, path: str, body: bytes, headers: dict) -> socket.socket:
    """Send a request and leave its answer unread (the client that never hears it)."""
    connection = socket.create_connection(("127.0.0.1", port))
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    connection.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n{head}\r\n".encode()
                       + body)
    return connection


def journaled_keys(path) -> dict:
    """Key to its journal record's answer, of every keyed record in a journal file."""
    try:
        records, _, _, _ = journal.read_file(str(path))
    except FileNotFoundError:
        return {}
    return {record.fields[REQUEST_FIELD]["key"]: record.fields[REQUEST_FIELD] for record in records
            if REQUEST_FIELD in record.fields}


def test_a_retry_after_kill_9_between_the_journal_write_and_the_answer_answers_the_first(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    port = free_port()
    process = start_server(data, port, log_dir=tmp_path, settings=COLD)
    base = f"http://127.0.0.1:{port}"
    try:
        scene = make_scene(httpx.Client(base_url=base, timeout=30))
        journal_path = data / "scenes" / scene / "journal"
        body = orjson.dumps({"mesh": 0, "name": "exactly once"})
        connection = send_without_reading(port, "POST", f"/scenes/{scene}/objects", body,
                                          {"Content-Type": "application/json", "Idempotency-Key": "crash"})
        deadline = time.monotonic() + 30
        while "crash" not in journaled_keys(journal_path) and time.monotonic() < deadline:
            pass
        # The record is written (maybe not yet synced, not yet answered): the process dies now.
        kill_9(process)
        connection.close()
        recorded = journaled_keys(journal_path)
        process = start_server(data, port, log_dir=tmp_path, settings=COLD)
        with httpx.Client(base_url=base, timeout=30) as client:
            retry = client.post(f"/scenes/{scene}/objects", content=body,
                                headers={"Content-Type": "application/json", "Idempotency-Key": "crash"})
            objects = scene_state(client, scene)[1]
        named = [entry for entry in objects if entry["name"] == "exactly once"]
        assert len(named) == 1
        assert retry.status_code == 201
        if "crash" in recorded:
            # Synced before the kill: the retry is the first answer, from the journal.
            assert retry.headers.get(REPLAYED) == "true"
            assert retry.json() == recorded["crash"]["answer"] == {"objects": named}
        else:
            # Torn before its sync (never acknowledged): the retry is the first write.
            assert REPLAYED not in retry.headers and retry.json() == {"objects": named}
    finally:
        kill_9(process)


def test_concurrent_duplicates_apply_once_on_workers_that_follow_each_other(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    port = free_port()
    # Two worker processes: each retry may land on either, which follows the other's journal.
    process = start_server(data, port, workers=2, log_dir=tmp_path, settings=COLD)
    base = f"http://127.0.0.1:{port}"
    try:
        scene = make_scene(httpx.Client(base_url=base, timeout=30))

        def send(key: str, name: str) -> httpx.Response:
            with httpx.Client(base_url=base, timeout=30) as fresh:
                return fresh.post(f"/scenes/{scene}/objects", json={"mesh": 0, "name": name}, headers=keyed(key))

        barrier = threading.Barrier(6)

        def racing(_):
            barrier.wait()
            return send("race", "raced")

        with ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(racing, range(6)))
            spread = list(pool.map(lambda number: send(f"spread {number % 10}", f"spread {number % 10}"), range(40)))
        assert {answer.status_code for answer in answers + spread} == {201}
        assert len({answer.content for answer in answers}) == 1
        assert sum(REPLAYED not in answer.headers for answer in answers) == 1
        for number in range(10):
            same = [answer for answer in spread if answer.json()["objects"][0]["name"] == f"spread {number}"]
            assert len({answer.content for answer in same}) == 1 and len(same) == 4
        with httpx.Client(base_url=base, timeout=30) as client:
            names = [entry["name"] for entry in scene_state(client, scene)[1]]
        assert names.count("raced") == 1
        assert sorted(name for name in names if name and name.startswith("spread")) == [f"spread {n}" for n in range(10)]
    finally:
        kill_9(process)
