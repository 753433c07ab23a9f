"""Every acknowledged edit survives ``kill -9`` of a real ``python -m service`` at a random
moment in a stream of edits, and no batch is ever half applied."""

import random
import threading
import time

import httpx
import numpy as np
import pytest

from service.queries.editing import BINARY_MOVE
from tests.conftest import TRIANGLE
from testkit.servers import free_port, kill_9, start_server

SINGLE_EDITORS = 3
PER_EDITOR = 6
GROUP = list(range(SINGLE_EDITORS * PER_EDITOR, SINGLE_EDITORS * PER_EDITOR + 12))


def at(x: float) -> list:
    return [[1, 0, 0, x], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]


class Ledger:
    """Per object: the last value answered 2xx and the last value sent."""

    def __init__(self):
        self.acked: dict[int, float] = {}
        self.sent: dict[int, float] = {}
        self.answered = 0
        self.lock = threading.Lock()

    def send(self, ids, value):
        with self.lock:
            for oid in ids:
                self.sent[oid] = value

    def ack(self, ids, value):
        with self.lock:
            for oid in ids:
                self.acked[oid] = value
            self.answered += 1

    def wait_for_answer(self, since: int, timeout: float = 60.0) -> None:
        """Return once an edit was answered after ``answered`` was ``since``: the stream of
        edits runs (a first edit after a start may take a while on a busy machine)."""
        deadline = time.monotonic() + timeout
        while self.answered <= since and time.monotonic() < deadline:
            time.sleep(0.005)


def _single_editor(base, scene_id, ids, ledger, stop, start_value):
    value = start_value
    with httpx.Client(base_url=base, timeout=5) as client:
        while not stop.is_set():
            for oid in ids:
                value += 1.0
                ledger.send([oid], value)
                try:
                    answer = client.patch(f"/scenes/{scene_id}/objects/{oid}", json={"transform": at(value)})
                except httpx.HTTPError:
                    return
                assert answer.status_code == 200, answer.text
                ledger.ack([oid], value)


def _batch_editor(base, scene_id, ledger, stop, start_value):
    value = start_value
    with httpx.Client(base_url=base, timeout=5) as client:
        while not stop.is_set():
            value += 1.0
            ledger.send(GROUP, value)
            try:
                if int(value) % 2:
                    answer = client.patch(f"/scenes/{scene_id}/objects",
                                          json=[{"id": oid, "transform": at(value)} for oid in GROUP])
                else:
                    records = np.zeros(len(GROUP), BINARY_MOVE)
                    records["id"] = GROUP
                    records["rows"] = np.array(at(value), np.float32)[:3]
                    answer = client.patch(f"/scenes/{scene_id}/objects.bin", content=records.tobytes(),
                                          headers={"content-type": "application/octet-stream"})
            except httpx.HTTPError:
                return
            assert answer.status_code == 200, answer.text
            ledger.ack(GROUP, value)


def _check(base, scene_id, ledger, rounds_note):
    objects = {o["id"]: o["transform"][0][3] for o in httpx.get(f"{base}/scenes/{scene_id}").json()["objects"]}
    for oid, acked in ledger.acked.items():
        assert acked <= objects[oid] <= ledger.sent[oid], (rounds_note, oid, acked, objects[oid], ledger.sent[oid])
    group_values = {objects[oid] for oid in GROUP}
    assert len(group_values) == 1, (rounds_note, "half a batch applied", group_values)
    return objects


@pytest.mark.parametrize("workers", [1, 2])
def test_acknowledged_edits_survive_kill_9_at_random_moments(tmp_path, workers):
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = start_server(tmp_path, port, workers=workers)
    ledger = Ledger()
    try:
        scene_id = httpx.post(f"{base}/scenes", json={"meshes": [TRIANGLE]}).json()["id"]
        entries = [{"mesh": 0, "transform": at(0.0)} for _ in range(len(GROUP) + SINGLE_EDITORS * PER_EDITOR - 1)]
        for entry in entries:
            assert httpx.post(f"{base}/scenes/{scene_id}/objects", json=entry).status_code == 201
        for round_number in range(3):
            if round_number:
                process = start_server(tmp_path, port, workers=workers)
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
        process = start_server(tmp_path, port, workers=workers)
        _check(base, scene_id, ledger, f"seed {seed}, at the end")
    finally:
        kill_9(process)


