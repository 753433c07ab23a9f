"""Damaged data is found, never served as if whole, and never written over: a torn journal tail
told from damage, checkpoints checked on every open path, damaged scenes read-only, and the
operator's ``verify`` and ``repair`` (service.store.integrity, service.store.repair)."""

import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest

import bvh
from service.store import edits, journal
from service.store.errors import SceneDamaged, SceneReadOnly, StorageFull
from service.store.integrity import (SYNC_MARK_FILE, count_records_after, frame_offsets, read_journal,
                                     scan_journal)
from service.store.repair import verify
from service.store.store import SCENE_DIR, SceneStore
from testkit.servers import ROOT, free_port, kill_9, start_server

TRIANGLE = (np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]]))
EDITS = 44


def at(x: float) -> np.ndarray:
    matrix = np.eye(4)
    matrix[0, 3] = x
    return matrix


def make_scene(store: SceneStore, count: int = 4) -> str:
    scene = bvh.Scene()
    mesh = scene.add_mesh(*TRIANGLE)
    for index in range(count):
        scene.add_instance(mesh, at(2.0 * index), name=f"o{index}")
    return store.create(scene, "integrity test", 0.0).id


def move(store: SceneStore, scene_id: str, oid: int, x: float):
    return store.record(scene_id, edits.objects_record([oid], at(x)[None], []))


def xs(stored) -> dict:
    return {oid: info.transform[0, 3] for oid, info in stored.view.objects.items()}


def edited(tmp_path, count: int = EDITS) -> tuple[str, str, list]:
    """A scene with ``count`` moves journaled after its checkpoint; its id, journal path, and the
    object positions after each acknowledged move (index k: after k moves)."""
    store = SceneStore(tmp_path)
    scene_id = make_scene(store)
    states = [xs(store.get(scene_id))]
    for step in range(count):
        move(store, scene_id, step % 4, 100.0 + step)
        states.append(xs(store.get(scene_id)))
    path = store.get(scene_id).journal_path
    # Not close(): that would write the checkpoint due, and restart the journal.
    store.evict(scene_id)
    return scene_id, path, states


def flip(path, offset: int) -> None:
    with open(path, "r+b") as stream:
        stream.seek(offset)
        byte = stream.read(1)
        stream.seek(offset)
        stream.write(bytes([byte[0] ^ 0x40]))


def digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if Path(path).exists() else "missing"


def damage(kind: str, path: str) -> None:
    """Damage a journal as the issue's cases do."""
    data = Path(path).read_bytes()
    records, _ = journal.read_records(data)
    offsets = frame_offsets(data, len(records)) + [len(data)]
    if kind == "flip":
        flip(path, len(data) // 2)
    elif kind == "truncated to 0":
        os.truncate(path, 0)
    elif kind == "truncated at an odd offset":
        os.truncate(path, (len(data) // 2) | 1)
    elif kind == "sequence gap":
        Path(path).write_bytes(data[:offsets[20]] + data[offsets[21]:])
    elif kind == "missing":
        os.unlink(path)


# ---------------------------------------------------------------- telling a torn tail from damage

def test_a_torn_tail_is_dropped_and_damage_is_told_apart(tmp_path):
    _, path, _ = edited(tmp_path, count=10)
    whole = Path(path).read_bytes()
    torn = journal.encode(11, edits.OBJECTS, {"changes": [{"id": 0, "name": "never answered"}]})
    Path(path).write_bytes(whole + torn[:-3])
    scan = scan_journal(read_journal(path), 0)
    assert scan.damage is None and scan.torn == len(torn) - 3 and [r.seq for r in scan.records] == list(range(11))

    # The same bytes, one flipped in record 4: records 5-10 are valid after it, so it is damage.
    offsets = frame_offsets(whole, 11)
    flip(path, offsets[4] + 12)
    scan = scan_journal(read_journal(path), 0)
    assert scan.damage is not None and scan.damage.offset == offsets[4]
    assert scan.damage.records_after == 6 and scan.damage.records_before == 3
    assert [r.seq for r in scan.records] == [0, 1, 2, 3]
    assert f"journal {path}: a record fails its checksum or is unreadable (byte offset {offsets[4]}); 6 valid " \
           f"records follow the damage" == scan.damage.describe()


def test_a_broken_last_record_below_the_sync_mark_is_damage_and_above_it_a_torn_tail(tmp_path):
    _, path, _ = edited(tmp_path, count=5)
    data = Path(path).read_bytes()
    last = frame_offsets(data, 6)[5]
    flip(path, len(data) - 2)
    scan = scan_journal(read_journal(path), 0)
    assert scan.damage is not None and scan.damage.offset == last and "synced up to byte" in scan.damage.problem
    # Without the mark (a journal of an older version) it cannot be told from a torn tail.
    os.unlink(Path(path).parent / SYNC_MARK_FILE)
    scan = scan_journal(read_journal(path), 0)
    assert scan.damage is None and scan.torn == len(data) - last


@pytest.mark.parametrize("kind, problem, after", [
    ("flip", "fails its checksum", None),
    ("truncated to 0", "the journal is empty", 0),
    ("truncated at an odd offset", "it was truncated", 0),
    ("sequence gap", "record 21 follows record 19 (records are missing)", 24),
    ("missing", "the journal is missing, though its sync mark says it was synced", 0),
])
def test_each_kind_of_damage_is_found_with_where_and_how_many_records_follow(tmp_path, kind, problem, after):
    _, path, _ = edited(tmp_path)
    damage(kind, path)
    scan = scan_journal(read_journal(path), 0)
    assert scan.damage is not None and problem in scan.damage.problem, scan.damage
    if after is not None:
        assert scan.damage.records_after == after
    else:
        assert 0 < scan.damage.records_after < EDITS
    assert scan.damage.records_before + scan.damage.records_after <= EDITS


def test_valid_records_are_found_past_damage_wherever_they_start():
    records = [journal.encode(seq, edits.REMOVE, {"ids": [seq]}) for seq in range(1, 30)]
    data = bytes(137) + b"".join(records[:10]) + b"\xff" * 55 + b"".join(records[10:])
    assert count_records_after(data, 0, 0) == 29
    assert count_records_after(data, 0, 15) == 14
    assert count_records_after(bytes(5000), 0, 0) == 0


# ---------------------------------------------------------------- a damaged scene is read-only

def test_a_damaged_journal_opens_read_only_with_the_edits_before_it_and_is_never_written(tmp_path):
    scene_id, path, states = edited(tmp_path)
    damage("flip", path)
    before = digest(path)
    store = SceneStore(tmp_path)
    assert store.open_all() == []
    stored = store.get(scene_id)
    assert stored.state == "damaged" and str(path) in stored.reason and "byte offset" in stored.reason
    kept = stored.damage.records_before
    assert xs(stored) == states[kept] and stored.view.version == kept
    # Picks are answered from it: object 0 where the kept edits left it.
    hits = stored.scene.intersect(np.array([[xs(stored)[0] + 0.2, 0.2, 1.0]]), np.array([[0.0, 0, -1]]))
    assert hits.object.tolist() == [0]
    for write in (lambda: move(store, scene_id, 0, 7.0),
                  lambda: store.edit(scene_id, lambda scene: scene.add_instance(0)),
                  lambda: store.delete(scene_id)):
        with pytest.raises(SceneReadOnly, match=f"scene {scene_id} is damaged and read-only"):
            write()
    store.checkpoint(scene_id)
    store.close()
    assert digest(path) == before
    assert store.damaged()["read-only"] == {scene_id: stored.reason}


def test_a_checkpoint_with_a_flipped_byte_in_any_array_is_refused_on_every_open_path(tmp_path):
    store = SceneStore(tmp_path)
    scene_id = make_scene(store)
    move(store, scene_id, 1, 5.0)
    follower = SceneStore(tmp_path)
    assert follower.get(scene_id).view.version == 1
    store.checkpoint(scene_id)
    directory = tmp_path / "scenes" / scene_id / SCENE_DIR
    manifest = json.loads((directory / "manifest.json").read_text())
    kinds = sorted(manifest["arrays"])
    assert len(kinds) >= 10
    for name in kinds:
        entry = manifest["arrays"][name]
        if entry["bytes"] <= 128:  # the .npy header alone: no data to flip
            continue
        file = directory / entry["file"]
        flip(file, entry["bytes"] - 1)
        # Start-up, a lazy first request, and the report all find it.
        fresh = SceneStore(tmp_path)
        assert fresh.open_all() == [scene_id]
        with pytest.raises(SceneDamaged):
            SceneStore(tmp_path).get(scene_id)
        lines, damaged = verify(tmp_path)
        assert damaged and f"DAMAGED {scene_id}" in lines[0] and entry["file"] in lines[0]
        flip(file, entry["bytes"] - 1)
    # A follower reopening after another process's checkpoint checks the files it has not checked.
    assert follower.get(scene_id).view.version == 1
    move(store, scene_id, 2, 6.0)
    store.checkpoint(scene_id)
    manifest = json.loads((directory / "manifest.json").read_text())
    entry = manifest["arrays"]["transforms"] if "transforms" in manifest["arrays"] else next(
        entry for entry in manifest["arrays"].values() if entry["bytes"] > 128)
    flip(directory / entry["file"], entry["bytes"] - 1)
    move(store, scene_id, 3, 7.0)
    with pytest.raises(SceneDamaged):
        follower.get(scene_id)
    assert follower.loaded() == [] and scene_id in follower.damaged()["refused"]
    store.close()


def test_a_sync_that_fails_for_a_full_disk_is_refused_and_undone(tmp_path, monkeypatch):
    from service.store import journal_writer

    store = SceneStore(tmp_path)
    scene_id = make_scene(store)
    move(store, scene_id, 0, 3.0)
    real = os.fdatasync

    def full(descriptor):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal_writer.os, "fdatasync", full)
    with pytest.raises(StorageFull, match="the disk of the scene store is full, so nothing was changed"):
        move(store, scene_id, 0, 4.0)
    monkeypatch.setattr(journal_writer.os, "fdatasync", real)
    # Undone on the writer's failure (a thread of its own): in memory and in the journal.
    for _ in range(200):
        if store.get(scene_id).writer is None:
            break
        import time
        time.sleep(0.01)
    assert xs(store.get(scene_id))[0] == 3.0
    records = journal.read_file(store.get(scene_id).journal_path)[0]
    assert [r.seq for r in records] == [0, 1]
    move(store, scene_id, 0, 5.0)
    store.close()
    assert xs(SceneStore(tmp_path).get(scene_id))[0] == 5.0


def test_the_object_stores_cache_checks_what_it_downloads(s3_environment, tmp_path):
    from tests.test_service_object_store import remote_store

    a = remote_store(s3_environment, tmp_path / "a")
    try:
        scene_id = make_scene(a)
        objects = a.backend.objects
        prefix = f"scenes/{scene_id}/checkpoints/{0:020d}"
        manifest = json.loads(objects.get(f"{prefix}/manifest.json"))
        entry = next(entry for entry in manifest["arrays"].values() if entry["bytes"] > 128)
        data = bytearray(objects.get(f"{prefix}/{entry['file']}"))
        data[-1] ^= 0x40
        objects.put(f"{prefix}/{entry['file']}", bytes(data))
        b = remote_store(s3_environment, tmp_path / "b")
        try:
            with pytest.raises(SceneDamaged):
                b.get(scene_id)
            assert b.loaded() == [] and scene_id in b.damaged()["refused"]
        finally:
            b.close()
    finally:
        a.close()


# ---------------------------------------------------------------- real processes, the operator's tools

JOURNAL_CASES = ["flip", "truncated to 0", "truncated at an odd offset", "sequence gap", "missing"]
ARRAY_CASES = ["array flipped", "array missing"]
MOVE = {"transform": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]}


def python_service(*arguments) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "service", *map(str, arguments)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))


def _answers(base: str, scene_id: str) -> dict:
    """Every write route on a scene: name to its answer."""
    return {
        "patch": httpx.patch(f"{base}/scenes/{scene_id}/objects/0", json=MOVE),
        "batch": httpx.patch(f"{base}/scenes/{scene_id}/objects", json=[{"id": 1, **MOVE}]),
        "add": httpx.post(f"{base}/scenes/{scene_id}/objects", json={"mesh": 0}),
        "add mesh": httpx.post(f"{base}/scenes/{scene_id}/objects",
                               json={"vertices": TRIANGLE[0].tolist(), "faces": TRIANGLE[1].tolist()}),
        "vertices": httpx.put(f"{base}/scenes/{scene_id}/meshes/0/vertices",
                              json={"vertices": (TRIANGLE[0] * 2).tolist()}),
        "delete object": httpx.delete(f"{base}/scenes/{scene_id}/objects/2"),
        "delete scene": httpx.delete(f"{base}/scenes/{scene_id}"),
    }


def test_damaged_files_of_a_killed_server_are_reported_served_read_only_verified_and_repaired(tmp_path, monkeypatch):
    # Every edit stays in the journal: no checkpoint restarts it meanwhile.
    monkeypatch.setenv("PICK_CHECKPOINT_SECONDS", "3600")
    monkeypatch.setenv("PICK_CHECKPOINT_RECORDS", "100000")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = start_server(tmp_path, port)
    scenes, states = {}, {}
    try:
        for case in JOURNAL_CASES + ARRAY_CASES:
            scene_id = httpx.post(f"{base}/scenes", json={"meshes": [{"vertices": TRIANGLE[0].tolist(),
                                                                     "faces": TRIANGLE[1].tolist()}]}).json()["id"]
            history = [httpx.get(f"{base}/scenes/{scene_id}").json()]
            if case == "missing":
                # Adding a mesh saves a checkpoint: the journal after it is then required.
                assert httpx.post(f"{base}/scenes/{scene_id}/objects", json={
                    "vertices": TRIANGLE[0].tolist(), "faces": TRIANGLE[1].tolist()}).status_code == 201
                history.append(httpx.get(f"{base}/scenes/{scene_id}").json())
            for _ in range(3):
                assert httpx.post(f"{base}/scenes/{scene_id}/objects", json={"mesh": 0}).status_code == 201
                history.append(httpx.get(f"{base}/scenes/{scene_id}").json())
            for step in range(EDITS):
                moved = httpx.patch(f"{base}/scenes/{scene_id}/objects/{step % 4}",
                                    json={"transform": at(10.0 + step).tolist()})
                assert moved.status_code == 200
                history.append(httpx.get(f"{base}/scenes/{scene_id}").json())
            scenes[case], states[case] = scene_id, history
    finally:
        kill_9(process)

    journals = {case: tmp_path / "scenes" / scenes[case] / "journal" for case in scenes}
    for case in JOURNAL_CASES:
        damage(case, journals[case])
    checkpoint = tmp_path / "scenes" / scenes["array flipped"] / SCENE_DIR
    manifest = json.loads((checkpoint / "manifest.json").read_text())
    vertices = next(entry for name, entry in manifest["arrays"].items() if "vertices" in name)
    flip(checkpoint / vertices["file"], vertices["bytes"] - 1)
    checkpoint = tmp_path / "scenes" / scenes["array missing"] / SCENE_DIR
    manifest = json.loads((checkpoint / "manifest.json").read_text())
    os.unlink(checkpoint / next(iter(manifest["arrays"].values()))["file"])
    digests = {case: digest(journals[case]) for case in JOURNAL_CASES}

    process = start_server(tmp_path, port)
    try:
        listed = {scene["id"]: scene for scene in httpx.get(f"{base}/scenes").json()["scenes"]}
        assert set(listed) == {scenes[case] for case in JOURNAL_CASES}
        for case in JOURNAL_CASES:
            scene_id = scenes[case]
            assert listed[scene_id]["state"] == "damaged" and str(journals[case]) in listed[scene_id]["reason"]
            scene = httpx.get(f"{base}/scenes/{scene_id}").json()
            assert scene["state"] == "damaged" and "byte offset" in scene["reason"], case
            # Never anything but an acknowledged state: the one before the damage.
            served = {key: scene[key] for key in ("objects", "triangles", "bounds")}
            assert served in [{key: state[key] for key in served} for state in states[case]], case
            first = scene["objects"][0]
            hit = httpx.post(f"{base}/scenes/{scene_id}/pick", json={
                "origin": [first["transform"][0][3] + 0.2, 0.2, 1], "direction": [0, 0, -1]})
            assert hit.status_code == 200 and hit.json()["hit"], case
            for name, answer in _answers(base, scene_id).items():
                assert answer.status_code == 409, (case, name, answer.text)
                detail = answer.json()["detail"]
                assert "damaged and read-only" in detail and str(journals[case]) in detail, (case, name)
                assert "byte offset" in detail and "valid record" in detail, (case, name)
        for case in ARRAY_CASES:
            assert httpx.get(f"{base}/scenes/{scenes[case]}").status_code == 404
            assert httpx.post(f"{base}/scenes/{scenes[case]}/pick", json={
                "origin": [0.2, 0.2, 1], "direction": [0, 0, -1]}).status_code == 404
        metrics = httpx.get(f"{base}/metrics").text
        assert 'pick_damaged_scenes{state="read-only"} 5.0' in metrics
        assert 'pick_damaged_scenes{state="refused"} 2.0' in metrics
    finally:
        # A graceful stop writes the checkpoints due: none of a damaged scene.
        process.terminate()
        process.wait(timeout=60)
    assert {case: digest(journals[case]) for case in JOURNAL_CASES} == digests

    checked = python_service("verify", tmp_path)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    for case in JOURNAL_CASES + ARRAY_CASES:
        assert f"DAMAGED {scenes[case]}" in checked.stdout, (case, checked.stdout)
    assert "7 scenes checked" in checked.stdout and "7 damaged" in checked.stdout

    refused = python_service("repair", tmp_path, scenes["flip"])
    assert refused.returncode == 2 and "--accept-loss" in refused.stdout
    assert digest(journals["flip"]) == digests["flip"]
    for case in JOURNAL_CASES:
        repaired = python_service("repair", tmp_path, scenes[case], "--accept-loss")
        assert repaired.returncode == 0 and "repaired" in repaired.stdout, (case, repaired.stdout, repaired.stderr)
        aside = list(journals[case].parent.glob("journal.discarded-*"))
        assert len(aside) == 1, case
    for case in ARRAY_CASES:
        assert python_service("repair", tmp_path, scenes[case], "--accept-loss").returncode == 1
    checked = python_service("verify", tmp_path)
    assert checked.returncode == 1 and "2 damaged" in checked.stdout, checked.stdout
    assert all(f"ok      {scenes[case]}" in checked.stdout for case in JOURNAL_CASES), checked.stdout

    process = start_server(tmp_path, port)
    try:
        for case in JOURNAL_CASES:
            scene = httpx.get(f"{base}/scenes/{scenes[case]}").json()
            assert scene["state"] == "ok" and scene["reason"] is None, case
            assert {key: scene[key] for key in ("objects", "bounds")} in [
                {key: state[key] for key in ("objects", "bounds")} for state in states[case]], case
            moved = httpx.patch(f"{base}/scenes/{scenes[case]}/objects/0", json={"transform": at(-5.0).tolist()})
            assert moved.status_code == 200, (case, moved.text)
    finally:
        kill_9(process)
    process = start_server(tmp_path, port)
    try:
        for case in JOURNAL_CASES:
            assert httpx.get(f"{base}/scenes/{scenes[case]}/objects/0").json()["transform"][0][3] == -5.0
    finally:
        kill_9(process)
    shutil.rmtree(tmp_path / "scenes", ignore_errors=True)
