"""Persistence: a real ``python -m service`` killed with SIGKILL keeps every answered change;
damaged scene directories are skipped; several workers on one data directory see each other's changes."""

import json
import logging
import shutil
import signal
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

import bvh
import sample_meshes
from service.store import cache as cache_module
from service.store.store import SceneStore
from tests.conftest import TRIANGLE
from testkit.servers import free_port, start_server

ROOT = Path(__file__).resolve().parents[1]
MOVE = [[1, 0, 0, 3], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]


def test_changes_survive_kill_9(tmp_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = start_server(tmp_path, port)
    try:
        with open(sample_meshes.path("torus.ply"), "rb") as stream:
            created = httpx.post(f"{base}/scenes/upload", files={"file": ("torus.ply", stream)}, data={"name": "ring"})
        assert created.status_code == 201, created.text
        scene = created.json()
        scene_id = scene["id"]
        assert httpx.patch(f"{base}/scenes/{scene_id}/objects/0", json={"transform": MOVE, "name": "moved"}
                           ).status_code == 200
        added = httpx.post(f"{base}/scenes/{scene_id}/objects", json={"shape": "sphere", "radius": 0.25})
        assert added.status_code == 201
        second = httpx.post(f"{base}/scenes", json={"meshes": [TRIANGLE]}).json()["id"]
        assert httpx.delete(f"{base}/scenes/{second}").status_code == 204
        before = httpx.get(f"{base}/scenes/{scene_id}").json()
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()

    process = start_server(tmp_path, port)
    try:
        after = httpx.get(f"{base}/scenes/{scene_id}").json()
        assert after == before
        assert [o["name"] for o in after["objects"]] == ["moved", None]
        assert httpx.get(f"{base}/scenes/{second}").status_code == 404
        assert [s["id"] for s in httpx.get(f"{base}/scenes").json()["scenes"]] == [scene_id]
        hit = httpx.post(f"{base}/scenes/{scene_id}/pick", json={"origin": [4.0, 0, 5], "direction": [0, 0, -1]})
        assert hit.json()["object"]["name"] == "moved"
        # An edit of a scene that was opened from disk (memory-mapped) is saved too.
        assert httpx.delete(f"{base}/scenes/{scene_id}/objects/1").status_code == 204
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()

    process = start_server(tmp_path, port)
    try:
        assert [o["id"] for o in httpx.get(f"{base}/scenes/{scene_id}").json()["objects"]] == [0]
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()


def test_damaged_scene_directories_are_skipped_with_a_log_line(make_client, tmp_path, caplog):
    data = tmp_path / "data"
    client = make_client()
    kept = client.post("/scenes", json={"name": "kept", "meshes": [TRIANGLE]}).json()["id"]
    broken = client.post("/scenes", json={"name": "broken", "meshes": [TRIANGLE]}).json()["id"]
    no_metadata = client.post("/scenes", json={"name": "no metadata", "meshes": [TRIANGLE]}).json()["id"]
    manifest = data / "scenes" / broken / "scene" / "manifest.json"
    manifest.write_text(manifest.read_text()[:40])
    (data / "scenes" / no_metadata / "service.json").unlink()
    (data / "scenes" / "not-a-scene-id").mkdir()
    leftover = data / "staging" / "999999999-0123"
    leftover.mkdir()

    with caplog.at_level(logging.INFO, logger="service"):
        restarted = make_client()
    assert [s["id"] for s in restarted.get("/scenes").json()["scenes"]] == [kept]
    messages = [record.getMessage() for record in caplog.records]
    assert any("skipping damaged scene directory" in m and broken in m for m in messages), messages
    assert any(no_metadata in m and "service.json" in m for m in messages), messages
    assert not leftover.exists()
    assert restarted.get(f"/scenes/{broken}").status_code == 404


def test_workers_see_each_others_changes(make_client):
    # Two apps on one data directory, as two uvicorn workers would be.
    first, second = make_client(), make_client()
    scene_id = first.post("/scenes", json={"meshes": [{"name": "tri", **TRIANGLE}]}).json()["id"]
    assert second.get(f"/scenes/{scene_id}").json()["objects"][0]["name"] == "tri"
    assert [s["id"] for s in second.get("/scenes").json()["scenes"]] == [scene_id]

    assert first.patch(f"/scenes/{scene_id}/objects/0", json={"transform": MOVE}).status_code == 200
    hit = second.post(f"/scenes/{scene_id}/pick", json={"origin": [3.2, 0.2, 1], "direction": [0, 0, -1]}).json()
    assert hit["hit"] and hit["nearest_vertex"]["point"] == pytest.approx([3, 0, 0])

    # Edits from both sides land on the newest state: neither loses the other's.
    assert second.patch(f"/scenes/{scene_id}/objects/0", json={"name": "renamed"}).status_code == 200
    added = first.post(f"/scenes/{scene_id}/objects", json={"mesh": 0}).json()["objects"][0]["id"]
    objects = {o["id"]: o for o in second.get(f"/scenes/{scene_id}").json()["objects"]}
    assert objects[0]["name"] == "renamed" and objects[0]["transform"][0][3] == 3.0 and added in objects

    assert first.delete(f"/scenes/{scene_id}").status_code == 204
    assert second.get(f"/scenes/{scene_id}").status_code == 404
    assert second.post(f"/scenes/{scene_id}/pick", json={"origin": [0, 0, 1], "direction": [0, 0, -1]}
                       ).status_code == 404


def test_a_save_without_its_change_token_is_still_seen_after_the_recheck_interval(tmp_path, monkeypatch):
    # A process killed between its save and its new change token: the others
    # skip the manifest's stat while the token stands, but only for RECHECK_SECONDS.
    monkeypatch.setattr(cache_module, "RECHECK_SECONDS", 0.2)
    reader, writer = SceneStore(tmp_path), SceneStore(tmp_path)
    scene = bvh.Scene()
    scene.add_instance(scene.add_mesh(np.array(TRIANGLE["vertices"], float), np.array(TRIANGLE["faces"])), name="a")
    scene_id = writer.create(scene, "s", 0.0).id
    assert reader.get(scene_id).view.objects[0].name == "a"
    assert reader.get(scene_id).view.objects[0].name == "a"

    monkeypatch.setattr(writer.changes, "announce", lambda: None)
    writer.edit(scene_id, lambda target: target.set_name(0, "b"))
    assert reader.get(scene_id).view.objects[0].name == "a"
    time.sleep(0.25)
    assert reader.get(scene_id).view.objects[0].name == "b"

    # With its token, a change is seen at once.
    monkeypatch.undo()
    writer.edit(scene_id, lambda target: target.set_name(0, "c"))
    assert reader.get(scene_id).view.objects[0].name == "c"


def test_a_crash_while_creating_leaves_no_scene(tmp_path):
    store = SceneStore(tmp_path)
    store.open_all()

    class Unsaveable:
        def save(self, directory, annotations=None):
            Path(directory).mkdir()
            (Path(directory) / "half.npy").write_bytes(b"half")
            raise OSError("disk full")

    with pytest.raises(OSError):
        store.create(Unsaveable(), "never", 0.0)
    assert list((tmp_path / "scenes").iterdir()) == [] and list((tmp_path / "staging").iterdir()) == []


def test_two_worker_processes_answer_alike(tmp_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = start_server(tmp_path, port, workers=2)
    try:
        scene_id = httpx.post(f"{base}/scenes", json={"meshes": [TRIANGLE]}).json()["id"]
        for step in range(1, 9):
            # A new connection each time: the kernel hands it to either worker.
            moved = httpx.patch(f"{base}/scenes/{scene_id}/objects/0",
                                json={"transform": [[1, 0, 0, step], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]})
            assert moved.status_code == 200
            hit = httpx.post(f"{base}/scenes/{scene_id}/pick",
                             json={"origin": [step + 0.2, 0.2, 1], "direction": [0, 0, -1]}).json()
            assert hit["hit"] and hit["point"][0] == pytest.approx(step + 0.2), (step, hit)
        assert httpx.delete(f"{base}/scenes/{scene_id}").status_code == 204
        for _ in range(4):
            assert httpx.get(f"{base}/scenes/{scene_id}").status_code == 404
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_data_directory_written_before_the_wide_trees_still_opens(make_client, tmp_path, caplog):
    """tests/data/service_data_v1 was written by the service when scenes were
    saved in format 1: it opens (the trees rebuilt, with a log line) and
    answers the pick it answered then."""
    data_dir = tmp_path / "old-data"
    shutil.copytree(ROOT / "tests" / "data" / "service_data_v1", data_dir)
    expected = json.loads((ROOT / "tests" / "data" / "service_data_v1_pick.json").read_text())
    with caplog.at_level(logging.INFO, logger="bvh"):
        client = make_client(data_dir=data_dir)
    assert any("format version 1" in record.getMessage() for record in caplog.records)
    response = client.post(f"/scenes/{expected['scene']}/pick", json={"origin": [0.1, 0.05, 5],
                                                                      "direction": [0, 0, -1]})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["object"] == expected["pick"]["object"] and answer["triangle"] == expected["pick"]["triangle"]
    assert answer["t"] == pytest.approx(expected["pick"]["t"], rel=1e-9)
    assert client.get(f"/scenes/{expected['scene']}").json()["name"] == "saved by format 1"
