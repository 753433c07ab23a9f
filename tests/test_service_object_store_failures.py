"""Failures in S3 mode with real processes: ``kill -9`` of a service during a stream of edits,
and the object store itself (SeaweedFS) killed and restarted while edits and picks go on."""

import random
import threading
import time

import httpx
import pytest

from tests.conftest import TRIANGLE
from tests.test_service_durability import (GROUP, PER_EDITOR, SINGLE_EDITORS, Ledger, _batch_editor, _check,
                                           _single_editor, at)
from testkit.servers import free_port, kill_9, start_server


def test_acknowledged_edits_survivekill_9_of_a_service_on_the_object_store(s3_environment, tmp_path):
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = start_server(tmp_path, port)
    ledger = Ledger()
    try:
        scene_id = httpx.post(f"{base}/scenes", json={"meshes": [TRIANGLE]}).json()["id"]
        entries = [{"mesh": 0, "transform": at(0.0)} for _ in range(len(GROUP) + SINGLE_EDITORS * PER_EDITOR - 1)]
        for entry in entries:
            assert httpx.post(f"{base}/scenes/{scene_id}/objects", json=entry).status_code == 201
        for round_number in range(3):
            if round_number:
                # A fresh process: a new cache, the scene read from the store alone.
                process = start_server(tmp_path, port)
                objects = _check(base, scene_id, ledger, f"seed {seed}, after round {round_number}")
                start_value = max(objects.values()) + 1000.0
            else:
                start_value = 0.0
            stop = threading.Event()
            editors = [threading.Thread(target=_single_editor, args=(
                base, scene_id, list(range(k * PER_EDITOR, (k + 1) * PER_EDITOR)), ledger, stop, start_value))
                for k in range(SINGLE_EDITORS)]
            editors.append(threading.Thread(target=_batch_editor, args=(base, scene_id, ledger, stop, start_value)))
            answered = ledger.answered
            for editor in editors:
                editor.start()
            ledger.wait_for_answer(answered)
            time.sleep(rng.uniform(0.0, 1.2))
            kill_9(process)
            stop.set()
            for editor in editors:
                editor.join()
            assert len(ledger.acked) > 0
        process = start_server(tmp_path, port)
        _check(base, scene_id, ledger, f"seed {seed}, at the end")
    finally:
        kill_9(process)


@pytest.fixture
def own_seaweedfs(seaweedfs, tmp_path, monkeypatch):
    """A SeaweedFS of this test's own (it is killed and restarted), its environment set."""
    from cluster.seaweedfs import SeaweedFS

    server = SeaweedFS.start(tmp_path / "seaweedfs")
    for name, value in server.environment().items():
        monkeypatch.setenv(name, value)
    yield server
    server.stop()


def test_the_store_killed_and_restarted_during_edits_loses_nothing_acknowledged(own_seaweedfs, make_client, tmp_path):
    from tests.test_service_object_store import remote_store

    client = make_client(store=own_seaweedfs.store_url, store_timeout_seconds=1.5, store_poll_seconds=0.05)
    scene_id = client.post("/scenes", json={"meshes": [TRIANGLE]}).json()["id"]
    for _ in range(3):
        assert client.post(f"/scenes/{scene_id}/objects", json={"mesh": 0, "transform": at(0.0)}).status_code == 201
    acked = {}
    for value in range(1, 6):
        assert client.patch(f"/scenes/{scene_id}/objects/1", json={"transform": at(value)}).status_code == 200
        acked[1] = value
    ray = {"origin": [0.2, 0.2, 1.0], "direction": [0.0, 0.0, -1.0]}

    own_seaweedfs.kill()
    refused = client.patch(f"/scenes/{scene_id}/objects/2", json={"transform": at(50.0)})
    assert refused.status_code == 503, refused.text
    assert refused.headers["Retry-After"] == "2"
    assert refused.json()["detail"] == (
        f"the object store {own_seaweedfs.store_url} did not answer for 1.5 s: this edit is not confirmed (it is "
        f"applied here and is kept if the store comes back; read the scene before repeating it)")
    # Picks on the scene in memory go on.
    picked = client.post(f"/scenes/{scene_id}/pick", json=ray)
    assert picked.status_code == 200 and picked.json()["hit"], picked.text
    # A scene not in memory cannot be opened meanwhile: a 503 saying so, not a 404 or a 500.
    unknown = client.get(f"/scenes/{'0' * 32}")
    assert unknown.status_code == 503 and "is not answering" in unknown.json()["detail"], unknown.text

    # The same server object, so that the fixture stops the restarted process.
    own_seaweedfs.process = own_seaweedfs.restart().process
    deadline = time.monotonic() + 30
    while True:
        answer = client.patch(f"/scenes/{scene_id}/objects/1", json={"transform": at(7.0)})
        if answer.status_code == 200:
            acked[1] = 7.0
            break
        assert answer.status_code == 503 and time.monotonic() < deadline, answer.text
        time.sleep(0.2)
    fresh = remote_store(own_seaweedfs.store_url, tmp_path / "fresh")
    try:
        objects = fresh.get(scene_id).view.objects
        assert objects[1].transform[0, 3] == acked[1]
        # The unconfirmed edit was kept once the store came back, as its message says it may be.
        assert objects[2].transform[0, 3] == 50.0
    finally:
        fresh.close()
