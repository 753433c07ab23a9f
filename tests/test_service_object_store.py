"""Scenes in a real S3-compatible store (SeaweedFS): opened in another process's cache, edits
followed, one writer per journal number, checkpoints, meshes added, deletion, the store down."""

import threading
import time

import numpy as np
import pytest

import bvh
from service.store import edits
from service.api.errors import EditConflict, StoreUnavailable
from service.store.store import SceneNotFound

TRIANGLE = (np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]]))


def moved(x: float) -> np.ndarray:
    matrix = np.eye(4)
    matrix[0, 3] = x
    return matrix


def remote_store(location, directory, **options):
    from service.store.object_store import ObjectStore
    from service.store.s3 import ObjectStoreBackend
    from service.store.store import SceneStore

    timeout = options.pop("timeout", 5.0)
    backend = ObjectStoreBackend(ObjectStore(location, timeout=timeout), directory,
                                 poll_seconds=options.pop("poll_seconds", 0.02))
    return SceneStore(backend, **options)


def make_scene(store, count: int = 4) -> str:
    scene = bvh.Scene()
    mesh = scene.add_mesh(*TRIANGLE)
    for index in range(count):
        scene.add_instance(mesh, moved(2.0 * index), name=f"o{index}")
    return store.create(scene, "object store test", 0.0).id


def move(store, scene_id: str, oid: int, x: float):
    return store.record(scene_id, edits.objects_record([oid], moved(x)[None], []))


def table(store, scene_id: str) -> dict:
    stored = store.get(scene_id)
    return {oid: (info.name, info.transform.tolist(), info.pickable) for oid, info in stored.view.objects.items()}


def picks(store, scene_id: str) -> list:
    origins = np.array([[x + 0.2, 0.2, 1.0] for x in np.arange(-1.0, 30.0, 0.5)])
    directions = np.tile([0.0, 0.0, -1.0], (len(origins), 1))
    hits = store.get(scene_id).scene.intersect(origins, directions)
    return hits.object.tolist()


def wait_for(condition, timeout: float = 5.0) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise AssertionError("not seen in time")
        time.sleep(0.005)
    return time.monotonic() - started


@pytest.fixture
def two_stores(s3_environment, tmp_path):
    stores = [remote_store(s3_environment, tmp_path / "a"), remote_store(s3_environment, tmp_path / "b")]
    yield stores
    for store in stores:
        store.close()


def test_a_scene_created_in_one_cache_opens_in_another_and_follows_its_edits(two_stores):
    a, b = two_stores
    scene_id = make_scene(a)
    assert b.loaded() == []
    assert table(b, scene_id) == table(a, scene_id)
    assert picks(b, scene_id) == picks(a, scene_id)
    assert b.loaded() == [scene_id]
    assert b.get(scene_id).directory != a.get(scene_id).directory

    events = []
    b.on_change = lambda sid, event: events.append((sid, event))
    move(a, scene_id, 1, 20.0)
    delay = wait_for(lambda: b.get(scene_id).view.version == 1)
    assert delay < 1.0
    assert table(b, scene_id) == table(a, scene_id)
    assert picks(b, scene_id) == picks(a, scene_id)
    wait_for(lambda: events)
    assert events[0][0] == scene_id and events[0][1]["event"] == "moved" and events[0][1]["version"] == 1
    assert [entry["id"] for entry in events[0][1]["objects"]] == [1]


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")  # an editor's 404 fails it
def test_two_stores_editing_at_once_write_each_number_once_and_the_loser_keeps_nothing(two_stores):
    a, b = two_stores
    scene_id = make_scene(a)
    b.get(scene_id)
    outcomes = {"a": [], "b": []}
    start = threading.Barrier(2)

    def editor(store, name, oid, offset):
        start.wait()
        for step in range(30):
            try:
                stored, _, view = move(store, scene_id, oid, offset + step)
                outcomes[name].append(("ok", view.version, offset + step))
            except EditConflict as error:
                assert "another replica changed the scene at the same moment" in error.detail
                assert "nothing of this edit was kept" in error.detail
                outcomes[name].append(("conflict", error.seq, offset + step))

    threads = [threading.Thread(target=editor, args=(a, "a", 0, 100.0)),
               threading.Thread(target=editor, args=(b, "b", 1, 200.0))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    acknowledged = [version for results in outcomes.values() for kind, version, _ in results if kind == "ok"]
    assert len(acknowledged) == len(set(acknowledged)), "a journal number acknowledged twice"
    conflicts = sum(kind == "conflict" for results in outcomes.values() for kind, _, _ in results)
    assert conflicts > 0, "no race happened: the test proves nothing"

    # A fresh cache reads the store's truth; both stores come to agree with it.
    truth_store = remote_store(a.backend.objects.location, a.backend.root_dir.parent / "truth")
    try:
        truth = table(truth_store, scene_id)
        wait_for(lambda: table(a, scene_id) == truth and table(b, scene_id) == truth)
        for name, oid in (("a", 0), ("b", 1)):
            acked = [x for kind, _, x in outcomes[name] if kind == "ok"]
            # The last acknowledged move of each editor is the state of its object:
            # a dropped (conflicting) move is applied nowhere.
            if acked:
                last_ok = max(range(len(outcomes[name])), key=lambda i: (outcomes[name][i][0] == "ok", i))
                later = [x for kind, _, x in outcomes[name][last_ok + 1:]]
                assert all(kind == "conflict" for kind, _, _ in outcomes[name][last_ok + 1:])
                assert truth[oid][1][0][3] == acked[-1], (name, later)
        assert truth_store.get(scene_id).view.version == max(acknowledged)
    finally:
        truth_store.close()


def test_checkpoints_upload_and_a_fresh_cache_opens_from_checkpoint_and_segments(s3_environment, tmp_path):
    a = remote_store(s3_environment, tmp_path / "a", checkpoint_records=5)
    try:
        scene_id = make_scene(a)
        for step in range(23):
            move(a, scene_id, step % 4, 50.0 + step)
        a.checkpoint(scene_id)
        move(a, scene_id, 0, 99.0)
        paths = a.backend.objects.list(f"scenes/{scene_id}/")
        checkpoints = sorted({path.split("/")[3] for path in paths if "/checkpoints/" in path})
        assert len(checkpoints) <= 2 and int(checkpoints[-1]) >= 20, checkpoints
        assert f"scenes/{scene_id}/journal/{0:020d}" not in paths or int(checkpoints[0]) == 0
        fresh = remote_store(s3_environment, tmp_path / "fresh")
        try:
            assert table(fresh, scene_id) == table(a, scene_id)
            stored = fresh.get(scene_id)
            assert stored.checkpoint_seq == int(checkpoints[-1]) and stored.seq == 24
        finally:
            fresh.close()
    finally:
        a.close()


def test_meshes_added_reach_another_cache_through_a_reload_record(two_stores):
    a, b = two_stores
    scene_id = make_scene(a)
    b.get(scene_id)
    move(a, scene_id, 0, 7.0)
    events = []
    b.on_change = lambda sid, event: events.append(event)

    def add(scene):
        mesh = scene.add_mesh(TRIANGLE[0] * 3, TRIANGLE[1])
        return scene.add_instance(mesh, moved(40.0), name="big")

    _, new_id = a.edit(scene_id, add, describe=lambda oid: edits.Change("added", [oid]))
    wait_for(lambda: new_id in b.get(scene_id).view.objects)
    assert table(b, scene_id) == table(a, scene_id)
    assert picks(b, scene_id) == picks(a, scene_id)
    wait_for(lambda: any(event["event"] == "added" for event in events))
    # Edits after it continue the same sequence, followed as before.
    move(a, scene_id, 1, 8.0)
    wait_for(lambda: table(b, scene_id) == table(a, scene_id))
    paths = a.backend.objects.list(f"scenes/{scene_id}/journal/")
    marker = a.backend.objects.get(paths[-2])
    assert b"reload" in marker


def test_a_deleted_scene_is_gone_everywhere(two_stores):
    a, b = two_stores
    scene_id = make_scene(a)
    b.get(scene_id)
    cache_b = b.get(scene_id).directory
    assert [stored.id for stored in b.list()] == [scene_id]
    a.delete(scene_id)
    assert a.backend.objects.list(f"scenes/{scene_id}/") == []
    with pytest.raises(SceneNotFound):
        a.get(scene_id)
    # The follower forgets the scene, then moves its cache away: wait for both.
    wait_for(lambda: scene_id not in b.loaded() and not cache_b.exists(), timeout=3.0)
    with pytest.raises(SceneNotFound):
        b.get(scene_id)
    assert b.list() == []


def test_the_list_answers_from_summaries_without_opening(two_stores):
    a, b = two_stores
    scene_id = make_scene(a, count=3)
    (listed,) = b.list()
    assert b.loaded() == []
    assert (listed.id, listed.name) == (scene_id, "object store test")
    assert (len(listed.view.objects), listed.view.triangles) == (3, 3)
    assert np.array_equal(listed.view.bounds, a.get(scene_id).view.bounds)


def test_evict_drops_memory_and_cache_and_the_next_request_reopens(two_stores):
    a, _ = two_stores
    scene_id = make_scene(a)
    move(a, scene_id, 2, 11.0)
    directory = a.get(scene_id).directory
    before = table(a, scene_id)
    a.evict(scene_id)
    assert a.loaded() == [] and not directory.exists()
    assert table(a, scene_id) == before and a.loaded() == [scene_id]


def test_a_lost_answer_of_a_conditional_create_is_recognised_by_its_bytes(s3_environment):
    from service.store.object_store import ObjectStore

    objects = ObjectStore(s3_environment)
    assert objects.put_new("x/segment", b"mine")
    assert not objects.put_new("x/segment", b"theirs")
    # A retry meeting its own object: as put_new sees it after a failed first attempt.
    import obstore

    calls = []
    real_put = obstore.put

    def flaky(store, path, data, **options):
        calls.append(path)
        real_put(store, path, data, **options)
        if len(calls) == 1:
            raise ConnectionError("answer lost")

    obstore.put = flaky
    try:
        assert objects.put_new("x/lost", b"bytes")
    finally:
        obstore.put = real_put
    assert len(calls) == 2 and objects.get("x/lost") == b"bytes"


def test_a_store_not_answering_is_a_503_with_retry_after_once_the_retries_are_spent(s3_environment, monkeypatch):
    from cluster.seaweedfs import free_ports
    from service.store.object_store import ObjectStore

    error = StoreUnavailable("s3://scenes/p", "read scenes/x/service.json", ConnectionRefusedError("refused"))
    assert error.status_code == 503 and error.headers == {"Retry-After": "2"}
    assert error.detail == ("the object store s3://scenes/p is not answering (read scenes/x/service.json: "
                            "refused); retry in a few seconds")
    (port,) = free_ports(1)
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    objects = ObjectStore("s3://scenes/nowhere", timeout=0.5)
    started = time.monotonic()
    with pytest.raises(StoreUnavailable) as raised:
        objects.get("scenes/x/service.json")
    assert 0.3 < time.monotonic() - started < 3.0
    assert raised.value.detail.startswith("the object store s3://scenes/nowhere is not answering "
                                          "(read scenes/x/service.json: ")


def test_a_follower_behind_by_collected_segments_catches_up_by_reopening(s3_environment, tmp_path):
    a = remote_store(s3_environment, tmp_path / "a")
    b = remote_store(s3_environment, tmp_path / "b")
    try:
        scene_id = make_scene(a)
        b.get(scene_id)
        b.backend.follower.stop()
        for round_number in range(3):
            for step in range(4):
                move(a, scene_id, step, 10.0 * round_number + step)
            a.checkpoint(scene_id)
        first_segment = a.backend.objects.get(f"scenes/{scene_id}/journal/{1:020d}")
        assert first_segment is None, "its first segment was not collected"
        events = []
        b.on_change = lambda sid, event: events.append(event)
        b.backend.follower.start()
        wait_for(lambda: b.get(scene_id).view.version == 12)
        assert table(b, scene_id) == table(a, scene_id)
        wait_for(lambda: any(event["event"] == "changed" for event in events))
    finally:
        a.close()
        b.close()


def test_the_embedded_store_evicts_and_lists_what_it_holds(tmp_path):
    from service.store.store import SceneStore

    store = SceneStore(tmp_path)
    scene_id = make_scene(store)
    move(store, scene_id, 1, 5.0)
    assert store.loaded() == [scene_id]
    store.evict(scene_id)
    assert store.loaded() == []
    # Its files are the store: the next request reads them again, edit included.
    assert store.get(scene_id).view.objects[1].transform[0, 3] == 5.0
    assert store.loaded() == [scene_id]
    store.evict("0" * 32)


def test_pick_store_is_a_directory_or_an_s3_location(tmp_path):
    from pydantic import ValidationError

    from service.settings import Settings

    assert Settings(data_dir=tmp_path / "d").scene_dir == tmp_path / "d"
    assert not Settings(store="").object_store
    on_path = Settings(store=str(tmp_path / "scenes"), data_dir=tmp_path / "d")
    assert not on_path.object_store and on_path.scene_dir == tmp_path / "scenes"
    remote = Settings(store="s3://bucket/some/prefix", data_dir=tmp_path / "cache")
    assert remote.object_store and remote.scene_dir == tmp_path / "cache"
    with pytest.raises(ValidationError, match="PICK_STORE 's3:///prefix' names no bucket"):
        Settings(store="s3:///prefix")


def test_start_up_removes_the_caches_of_processes_that_are_gone(s3_environment, tmp_path):
    import os

    for name in ("cache-999999999-dead", f"cache-{os.getpid()}-earlier", "cache-1-alive", "notes"):
        (tmp_path / "data" / name).mkdir(parents=True)
    first = remote_store(s3_environment, tmp_path / "data")
    second = remote_store(s3_environment, tmp_path / "data")
    try:
        left = sorted(path.name for path in (tmp_path / "data").iterdir())
        assert left == sorted(["cache-1-alive", "notes", first.data_dir.name, second.data_dir.name])
        assert first.data_dir != second.data_dir and first.data_dir.exists()
    finally:
        first.close()
        second.close()


def test_meshes_added_by_a_store_that_lost_the_race_are_kept_nowhere(two_stores):
    a, b = two_stores
    scene_id = make_scene(a)
    b.get(scene_id)
    b.backend.follower.stop()
    move(a, scene_id, 0, 30.0)  # record 1, which b has not seen

    def add(scene):
        return scene.add_instance(scene.add_mesh(TRIANGLE[0] * 2, TRIANGLE[1]), moved(60.0), name="late")

    with pytest.raises(EditConflict) as raised:
        b.edit(scene_id, add)
    assert raised.value.seq == 1
    # b reads the store's state again: a's move, not its own mesh; its checkpoint upload is gone.
    assert table(b, scene_id) == table(a, scene_id)
    assert len(b.get(scene_id).scene.meshes) == 1
    checkpoints = {path.split("/")[3] for path in a.backend.objects.list(f"scenes/{scene_id}/checkpoints/")}
    assert checkpoints == {f"{0:020d}"}


def test_edits_arriving_while_a_segment_is_put_share_the_next_one(s3_environment, tmp_path):
    store = remote_store(s3_environment, tmp_path / "a")
    try:
        scene_id = make_scene(store, count=8)
        start = threading.Barrier(8)

        def editor(oid):
            start.wait()
            for step in range(10):
                move(store, scene_id, oid, 100.0 * oid + step)

        threads = [threading.Thread(target=editor, args=(oid,)) for oid in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        writer = store.get(scene_id).writer
        assert store.get(scene_id).view.version == 80
        segments = store.backend.objects.list(f"scenes/{scene_id}/journal/")
        assert len(segments) == writer.commits < 80, "no group commit: one put per edit"
        fresh = remote_store(s3_environment, tmp_path / "fresh")
        try:
            assert table(fresh, scene_id) == table(store, scene_id)
        finally:
            fresh.close()
    finally:
        store.close()
