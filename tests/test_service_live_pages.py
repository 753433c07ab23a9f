"""The live channel's tables of a scene over ``PICK_INLINE_OBJECTS``: the ``hello`` and the
``resync`` list the first objects by id with ``object_count`` and ``objects_next_after``, and a
client pages the rest over HTTP while the events keep coming, keeping per object the newest of
pages and events by version (the protocol in ``service.live.session``).

A real uvicorn server on a thread and real WebSocket clients, as in ``test_service_live``.
"""

import os
import random
import threading
import time

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from tests.conftest import TRIANGLE
from tests.test_service_live import LiveServer, opened, receive, stalled_connection
from tests.test_service_live import store_settings  # noqa: F401  (a fixture: each test on both stores)

#: ``PICK_INLINE_OBJECTS`` of the server here: a hello lists at most this many objects.
INLINE = 5


@pytest.fixture(scope="module")
def server(tmp_path_factory, store_settings):  # noqa: F811  (the fixture imported above)
    running = LiveServer(tmp_path_factory.mktemp("live-pages") / "data", inline_objects=INLINE, live_queue=8,
                         **store_settings)
    yield running
    running.stop()


def make_scene(server, count: int) -> str:
    """A scene of ``count`` objects, ids 0 to count - 1 (one triangle each), named ``o<id>``."""
    meshes = [{"name": f"o{index}", **TRIANGLE} for index in range(count)]
    created = server.http.post("/scenes", json={"meshes": meshes})
    assert created.status_code == 201, created.text
    return created.json()["id"]


def get_page(server, scene_id: str, after: int, limit: int) -> dict:
    answer = server.http.get(f"/scenes/{scene_id}/objects", params={"after": after, "limit": limit})
    assert answer.status_code == 200, answer.text
    return answer.json()


def every_object(server, scene_id: str) -> list[dict]:
    """The scene's objects now, paged over HTTP from the first."""
    objects, after = [], None
    while True:
        params = {"limit": 1000} if after is None else {"after": after, "limit": 1000}
        answer = server.http.get(f"/scenes/{scene_id}/objects", params=params).json()
        objects += answer["objects"]
        after = answer["next_after"]
        if after is None:
            return objects


class Table:
    """What a client of the protocol holds: per object id, the version of what it holds and the
    object's JSON (None: removed). A page or an event is taken for an object only when its version
    is above the one held."""

    def __init__(self, table: dict):
        self.version = table["version"]
        self.held = {entry["id"]: (table["version"], entry) for entry in table["objects"]}

    def take(self, objects, version: int) -> None:
        for entry in objects:
            oid = entry if type(entry) is int else entry["id"]
            if self.held.get(oid, (-1, None))[0] < version:
                self.held[oid] = (version, None if type(entry) is int else entry)

    def event(self, message: dict) -> None:
        self.take(message["objects"], message["version"])

    def page(self, answer: dict) -> None:
        # One worker here: a page is never older than the table (else it would be asked again).
        assert answer["version"] >= self.version
        self.take(answer["objects"], answer["version"])

    def objects(self) -> dict:
        return {oid: entry for oid, (_, entry) in self.held.items() if entry is not None}


def naive(table: dict, updates) -> dict:
    """What a client that took every page and event as it came, by arrival alone, would hold."""
    held = {entry["id"]: entry for entry in table["objects"]}
    for kind, message in updates:
        if kind == "event" and message["event"] == "removed":
            for oid in message["objects"]:
                held.pop(oid, None)
        else:
            held.update((entry["id"], entry) for entry in message["objects"])
    return held


def test_a_hello_over_the_limit_lists_the_first_objects_and_where_the_rest_are(server):
    scene_id = make_scene(server, 12)
    with opened(server, scene_id) as (_, hello):
        first = server.http.get(f"/scenes/{scene_id}/objects", params={"limit": INLINE}).json()
        assert first["version"] == hello["version"]
        assert hello == {"type": "hello", "scene": scene_id, "version": first["version"], "object_count": 12,
                         "objects_next_after": INLINE - 1, "objects": first["objects"]}
        assert [entry["id"] for entry in hello["objects"]] == list(range(INLINE))
        # GET /scenes/{id} inlines the same, and paging on from the cursor brings the rest, each once.
        scene = server.http.get(f"/scenes/{scene_id}").json()
        assert (scene["objects"], scene["objects_next_after"]) == (hello["objects"], hello["objects_next_after"])
        rest = get_page(server, scene_id, hello["objects_next_after"], 1000)
        assert rest["next_after"] is None
        assert hello["objects"] + rest["objects"] == every_object(server, scene_id)
        assert [entry["name"] for entry in rest["objects"]] == [f"o{index}" for index in range(INLINE, 12)]


def test_a_scene_at_the_limit_is_all_in_its_hello(server):
    scene_id = make_scene(server, INLINE)
    with opened(server, scene_id) as (_, hello):
        assert hello["object_count"] == INLINE and hello["objects_next_after"] is None
        assert hello["objects"] == every_object(server, scene_id)


def test_pages_and_events_merged_by_version_make_the_scene_whatever_the_order(server):
    """A client pages the objects past its hello, three at a time, while objects are moved, renamed,
    added and removed: between pages (some on pages already read, some on pages to come) and by
    another thread throughout. The pages and the events (read by a thread of their own), merged
    by version in any order, make the scene as GET of each object finds it at the end; taken by
    arrival alone, pages read before an event overwrite it."""
    scene_id = make_scene(server, 40)
    http = server.http
    rng = random.Random(38)
    stop = threading.Event()
    added = []
    removed = set()
    lock = threading.Lock()

    failures = []

    def remove(client, oid: int) -> None:
        with lock:
            if oid in removed:
                return
            removed.add(oid)
        assert client.delete(f"/scenes/{scene_id}/objects/{oid}").status_code == 204

    def edit_at_random() -> None:
        # A client of its own: this thread's requests run beside the pager's.
        client = httpx.Client(base_url=http.base_url, timeout=60)
        try:
            for step in range(300):
                if stop.is_set():
                    return
                if step % 7 == 6:
                    remove(client, rng.randrange(40))
                elif step % 5 == 4:
                    answer = client.post(f"/scenes/{scene_id}/objects", json={"mesh": 0, "name": f"new{step}"})
                    assert answer.status_code == 201, answer.text
                    added.append(answer.json()["objects"][0]["id"])
                else:
                    shift = [[1, 0, 0, rng.uniform(-5, 5)], [0, 1, 0, rng.uniform(-5, 5)], [0, 0, 1, 0],
                             [0, 0, 0, 1]]
                    answer = client.patch(f"/scenes/{scene_id}/objects",
                                          json=[{"id": rng.randrange(40), "transform": shift, "name": f"r{step}"}])
                    assert answer.status_code in (200, 404), answer.text
                time.sleep(0.003)
        except Exception as error:  # noqa: BLE001  (reported by the test's thread)
            failures.append(error)
        finally:
            client.close()

    with opened(server, scene_id) as (ws, hello):
        assert (hello["object_count"], hello["objects_next_after"]) == (40, INLINE - 1)
        arrivals = []   # ("event" | "page", message), in the order the client got them

        def read_events() -> None:
            try:
                while True:
                    message = receive(ws, timeout=60)
                    assert message["type"] == "event", message
                    with lock:
                        arrivals.append(("event", message))
            except (ConnectionClosed, TimeoutError):
                return

        reader = threading.Thread(target=read_events, daemon=True)
        reader.start()
        editor = threading.Thread(target=edit_at_random, daemon=True)
        editor.start()
        pages = []
        after = hello["objects_next_after"]
        while after is not None:
            answer = get_page(server, scene_id, after, 3)
            with lock:
                arrivals.append(("page", answer))
            pages.append(answer)
            listed = [entry["id"] for entry in answer["objects"]]
            if listed:
                # After this page: one of its objects renamed and one removed, so that this page,
                # taken after their events, would bring back what they changed.
                renamed = http.patch(f"/scenes/{scene_id}/objects/{listed[0]}", json={"name": f"after{after}"})
                assert renamed.status_code in (200, 404), renamed.text
                remove(http, listed[-1])
                # And an object of a page to come, moved before its page is read.
                ahead = listed[-1] + 4
                if ahead < 40:
                    http.patch(f"/scenes/{scene_id}/objects/{ahead}", json={"name": f"ahead{after}"})
            after = answer["next_after"]
            time.sleep(0.01)
        stop.set()
        editor.join()
        assert not failures, failures
        last = http.patch(f"/scenes/{scene_id}/objects", json=[{"id": hello["objects"][0]["id"], "name": "last"}])
        assert last.status_code == 200, last.text
        final = last.json()["version"]
        deadline = time.monotonic() + 60
        while not any(kind == "event" and message["version"] >= final for kind, message in list(arrivals)):
            assert time.monotonic() < deadline, "the events up to the last edit did not all come"
            time.sleep(0.01)

    assert len(pages) >= 10 and added and len(removed) >= 10
    events = [message for kind, message in arrivals if kind == "event"]
    assert all(message["version"] > hello["version"] for message in events)
    # The truth: every object the client heard of, read one by one now.
    heard = {entry["id"] for entry in hello["objects"]}
    heard |= {entry if type(entry) is int else entry["id"] for _, message in arrivals for entry in message["objects"]}
    heard |= set(added)
    truth = {}
    for oid in sorted(heard):
        answer = http.get(f"/scenes/{scene_id}/objects/{oid}")
        assert answer.status_code in (200, 404), answer.text
        if answer.status_code == 200:
            truth[oid] = answer.json()
    assert {entry["id"]: entry for entry in every_object(server, scene_id)} == truth

    orders = {"as they came": arrivals,
              "events first": [("event", m) for m in events] + [("page", p) for p in pages],
              "pages first": [("page", p) for p in pages] + [("event", m) for m in events]}
    for name, updates in orders.items():
        table = Table(hello)
        for kind, message in updates:
            table.page(message) if kind == "page" else table.event(message)
        assert table.objects() == truth, name
    # The versions are what makes it so: pages taken after newer events undo them.
    assert naive(hello, orders["events first"]) != truth


def test_a_resync_over_the_limit_lists_the_first_objects_and_where_the_rest_are(server):
    """A client too far behind (PICK_LIVE_QUEUE, 8 here) is sent the table afresh, bounded as the
    hello: the first objects, the count and the cursor, at the scene's version."""
    scene_id = make_scene(server, 12)
    big = os.urandom(400_000).hex()
    with stalled_connection(server, scene_id) as stalled, opened(server, scene_id) as (reader, hello):
        for version in range(hello["version"] + 1, hello["version"] + 61):
            event = {"event": "changed", "version": version, "objects": [{"id": version % 2, "name": big}]}
            server.app.state.store.on_change(scene_id, event)
            assert receive(reader, timeout=10)["version"] == version
        assert any(subscriber.resyncs for subscriber in server.app.state.live_hub.subscribers(scene_id))
        while True:
            message = receive(stalled, timeout=10)
            if message["type"] == "resync":
                break
            assert message["type"] == "event"
        # The events were made up: the scene itself is as it was at the hello.
        assert message == {"type": "resync", "version": hello["version"], "object_count": 12,
                           "objects_next_after": INLINE - 1, "objects": hello["objects"]}
        assert len(message["objects"]) == INLINE
