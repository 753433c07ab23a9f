"""The scene store's journal: replay past the checkpoint, a torn record dropped, checkpoints
under concurrent edits, another process's edits followed, change events."""

import os
import threading
import time

import numpy as np
import pytest

import bvh
from service.store import edits, journal
from service.store.integrity import SYNC_MARK_FILE
from service.store.store import JOURNAL_SEQ, SCENE_DIR, SceneStore

TRIANGLE = (np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]]))


def moved(x: float) -> np.ndarray:
    matrix = np.eye(4)
    matrix[0, 3] = x
    return matrix


def make_scene(store: SceneStore, count: int = 4) -> str:
    scene = bvh.Scene()
    mesh = scene.add_mesh(*TRIANGLE)
    for index in range(count):
        scene.add_instance(mesh, moved(2.0 * index), name=f"o{index}")
    return store.create(scene, "journal test", 0.0).id


def move(store: SceneStore, scene_id: str, oid: int, x: float):
    return store.record(scene_id, edits.objects_record([oid], moved(x)[None], []))


def table(store: SceneStore, scene_id: str) -> dict:
    stored = store.get(scene_id)
    return {oid: (info.name, info.transform.tolist(), info.pickable) for oid, info in stored.view.objects.items()}


def test_edits_are_replayed_past_the_checkpoint_on_open(tmp_path):
    store = SceneStore(tmp_path)
    scene_id = make_scene(store)
    move(store, scene_id, 1, 10.0)
    store.record(scene_id, edits.objects_record([], np.zeros((0, 4, 4)), [{"id": 2, "name": "two", "pickable": False}]))
    store.record(scene_id, edits.add_record([{"mesh": 0, "transform": moved(5.0).tolist(), "name": "added"}]))
    store.record(scene_id, edits.remove_record([0]))
    store.record(scene_id, edits.vertices_record(0, TRIANGLE[0] * 2))
    expected = table(store, scene_id)
    assert store.get(scene_id).view.version == 5

    reopened = SceneStore(tmp_path)
    assert reopened.open_all() == []
    assert table(reopened, scene_id) == expected
    stored = reopened.get(scene_id)
    assert stored.view.version == 5 and stored.checkpoint_seq == 0
    assert np.array_equal(stored.scene.mesh_vertices(0), TRIANGLE[0] * 2)
    hits = stored.scene.intersect(np.array([[11.5, 0.2, 1.0]]), np.array([[0.0, 0, -1]]))
    assert hits.object.tolist() == [1]


def test_a_torn_last_record_is_dropped_and_cut_off_by_the_next_edit(tmp_path):
    store = SceneStore(tmp_path)
    scene_id = make_scene(store)
    move(store, scene_id, 1, 10.0)
    path = store.get(scene_id).journal_path
    torn = journal.encode(2, edits.OBJECTS, {"changes": [{"id": 0, "name": "never answered"}]})
    with open(path, "ab") as stream:
        stream.write(torn[:len(torn) - 3])

    reopened = SceneStore(tmp_path)
    reopened.open_all()
    assert reopened.get(scene_id).view.version == 1
    assert reopened.get(scene_id).view.objects[0].name == "o0"
    move(reopened, scene_id, 3, 30.0)
    records, end, size, _ = journal.read_file(path)
    assert [r.seq for r in records] == [0, 1, 2] and end == size
    assert table(SceneStore(tmp_path), scene_id) == table(reopened, scene_id)


def test_records_the_checkpoint_holds_are_not_applied_twice(tmp_path):
    # A crash between a checkpoint's save and the journal's restart leaves
    # records the checkpoint already holds: opening skips them.
    store = SceneStore(tmp_path)
    scene_id = make_scene(store)
    store.record(scene_id, edits.add_record([{"mesh": 0, "name": "once"}]))
    move(store, scene_id, 4, 7.0)
    stored = store.get(scene_id)
    stored.scene.save(stored.directory / SCENE_DIR)
    assert stored.scene.annotations[JOURNAL_SEQ] == 2

    for _ in range(2):
        reopened = SceneStore(tmp_path)
        reopened.open_all()
        assert table(reopened, scene_id) == table(store, scene_id)
        assert [info.name for info in reopened.get(scene_id).view.objects.values()].count("once") == 1


def test_checkpoints_under_concurrent_edits_lose_nothing(tmp_path):
    store = SceneStore(tmp_path, checkpoint_records=25, checkpoint_seconds=0.05)
    scene_id = make_scene(store, count=8)
    last = {}
    failures = []

    def editor(oid: int):
        try:
            for step in range(1, 120):
                move(store, scene_id, oid, float(step))
                last[oid] = float(step)
        except Exception as error:  # reported below
            failures.append(error)

    threads = [threading.Thread(target=editor, args=(oid,)) for oid in range(8)]
    for thread in threads:
        thread.start()
    for _ in range(5):
        store.checkpoint(scene_id)
    for thread in threads:
        thread.join()
    assert failures == []
    store.checkpoint(scene_id)
    stored = store.get(scene_id)
    assert stored.view.version == 8 * 119
    assert stored.checkpoint_seq > 0
    records, _, _, _ = journal.read_file(stored.journal_path)
    assert records[0].kind == edits.BASE and records[0].seq == stored.checkpoint_seq

    reopened = SceneStore(tmp_path)
    reopened.open_all()
    assert {oid: rows[1][0][3] for oid, rows in table(reopened, scene_id).items()} == last
    store.close()


def test_another_process_edits_are_followed_and_numbered_in_one_sequence(tmp_path):
    first, second = SceneStore(tmp_path), SceneStore(tmp_path)
    scene_id = make_scene(first)
    assert second.get(scene_id).view.version == 0
    followed = second.get(scene_id)

    move(first, scene_id, 0, 3.0)
    assert second.get(scene_id) is followed and followed.view.version == 1
    assert followed.view.objects[0].transform[0, 3] == 3.0
    _, _, view = move(second, scene_id, 1, 4.0)
    assert view.version == 2
    assert first.get(scene_id).view.objects[1].transform[0, 3] == 4.0

    # A checkpoint restarts the journal: the other process goes on from the new file.
    first.checkpoint(scene_id)
    move(first, scene_id, 2, 5.0)
    assert second.get(scene_id) is followed and followed.view.version == 3

    # Missing the records a checkpoint took in: the other process reopens.
    third = SceneStore(tmp_path)
    stale = third.get(scene_id)
    move(first, scene_id, 3, 6.0)
    first.checkpoint(scene_id)
    move(first, scene_id, 3, 7.0)
    current = third.get(scene_id)
    assert current is not stale and current.view.version == 5
    assert table(third, scene_id) == table(first, scene_id) == table(second, scene_id)


def test_change_events_come_for_own_and_followed_edits(tmp_path):
    first, second = SceneStore(tmp_path), SceneStore(tmp_path)
    scene_id = make_scene(first)
    second.get(scene_id)
    seen = {"first": [], "second": []}
    done = threading.Semaphore(0)

    def listener(name):
        def on_change(sid, event):
            seen[name].append((sid, event))
            done.release()
        return on_change

    first.on_change, second.on_change = listener("first"), listener("second")
    move(first, scene_id, 1, 9.0)
    second.get(scene_id)
    first.record(scene_id, edits.remove_record([2]))
    second.get(scene_id)
    for _ in range(4):
        assert done.acquire(timeout=10)
    for name in seen:
        (sid, event), (_, removal) = seen[name]
        assert sid == scene_id
        assert event["event"] == "moved" and event["version"] == 1
        assert [o["id"] for o in event["objects"]] == [1] and event["objects"][0]["transform"][0][3] == 9.0
        assert removal == {"event": "removed", "objects": [2], "version": 2}
    first.close()
    second.close()


def test_moves_queued_while_the_event_thread_is_busy_go_out_as_one_event(tmp_path):
    store = SceneStore(tmp_path)
    scene_id = make_scene(store)
    seen, busy, release = [], threading.Event(), threading.Event()

    def on_change(sid, event):
        if not seen:
            busy.set()
            assert release.wait(10)
        seen.append(event)

    store.on_change = on_change
    move(store, scene_id, 0, 5.0)
    assert busy.wait(10)
    # Queued while the first event is with the listener: two runs of moves around a removal.
    move(store, scene_id, 1, 6.0)
    move(store, scene_id, 2, 7.0)
    move(store, scene_id, 1, 8.0)
    store.record(scene_id, edits.remove_record([3]))
    move(store, scene_id, 2, 9.0)
    deadline = time.monotonic() + 10
    while store.events.queue.qsize() < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    release.set()
    deadline = time.monotonic() + 10
    while len(seen) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [(event["event"], event["version"]) for event in seen] == [
        ("moved", 1), ("moved", 4), ("removed", 5), ("moved", 6)]
    # Each object once, in the order first moved, with its JSON at the run's last version.
    assert [(o["id"], o["transform"][0][3]) for o in seen[1]["objects"]] == [(1, 8.0), (2, 7.0)]
    assert seen[2]["objects"] == [3]
    assert [(o["id"], o["transform"][0][3]) for o in seen[3]["objects"]] == [(2, 9.0)]
    store.close()


def test_a_refused_record_changes_nothing_and_is_not_journaled(tmp_path):
    store = SceneStore(tmp_path)
    scene_id = make_scene(store)
    before = table(store, scene_id)
    singular = np.zeros((2, 4, 4))
    singular[:, 3, 3] = 1
    with pytest.raises(ValueError, match=r"transforms\[0\] \(object 1\)"):
        store.record(scene_id, edits.objects_record([1, 2], singular, [{"id": 0, "name": "no"}]))
    with pytest.raises(bvh.UnknownIdError, match="entry 1: no object 99 in this scene"):
        store.record(scene_id, edits.objects_record([1], moved(1.0)[None], [{"id": 99, "name": "no"}]))
    assert table(store, scene_id) == before
    stored = store.get(scene_id)
    assert stored.view.version == 0
    assert [r.seq for r in journal.read_file(stored.journal_path)[0]] == [0]
    assert os.path.getsize(stored.journal_path) == stored.journal_end


def test_a_folded_run_of_object_edits_leaves_the_scene_as_the_run_does():
    rng = np.random.default_rng(3)
    records = []
    for seq in range(1, 200):
        ids = rng.choice(6, size=rng.integers(1, 4), replace=False)
        moved = [oid for oid in ids if rng.random() < 0.7]
        changes = [{"id": int(oid), "name": f"n{seq}", "pickable": bool(rng.random() < 0.8)}
                   for oid in ids if oid not in moved or rng.random() < 0.3]
        matrices = np.stack([moved_matrix(rng) for _ in moved]) if moved else np.zeros((0, 4, 4))
        # Half the runs' moves come as float32 top rows, as the binary batch sends them.
        transforms = matrices[:, :3].astype(np.float32) if seq % 2 else matrices
        record = edits.objects_record(moved, transforms, changes)
        record.seq = seq
        records.append(record)
    one_by_one, folded = _six(), _six()
    for record in records:
        edits.apply(one_by_one, record)
    (merged,) = edits.folded(records)
    assert merged.seq == 199
    edits.apply(folded, merged)
    assert [_described(info) for info in one_by_one.objects] == [_described(info) for info in folded.objects]


def moved_matrix(rng) -> np.ndarray:
    matrix = np.eye(4)
    matrix[:3, 3] = rng.normal(size=3)
    matrix[0, 0] = rng.uniform(0.5, 2.0)
    return matrix


def _six() -> bvh.Scene:
    scene = bvh.Scene()
    mesh = scene.add_mesh(*TRIANGLE)
    for index in range(6):
        scene.add_instance(mesh, moved(2.0 * index))
    return scene


def _described(info) -> tuple:
    return info.id, info.name, info.pickable, info.mask, info.transform.tolist(), info.bounds.tolist()


def test_edits_arriving_together_on_the_loop_share_one_record_and_a_refused_one_is_alone(tmp_path):
    import asyncio

    store = SceneStore(tmp_path)
    scene_id = make_scene(store, count=8)

    async def together(records):
        return await asyncio.gather(*(store.record_soon(scene_id, record) for record in records),
                                    return_exceptions=True)

    moves = [edits.objects_record([oid], moved(10.0 + oid)[None], []) for oid in range(6)]
    answers = asyncio.run(together(moves))
    assert {view.version for _, _, view in answers} == {1}
    assert [r.seq for r in journal.read_file(store.get(scene_id).journal_path)[0]] == [0, 1]
    assert [table(store, scene_id)[oid][1][0][3] for oid in range(6)] == [10.0 + oid for oid in range(6)]

    # One refused edit among them: the others are applied, each alone.
    refused = edits.objects_record([], np.zeros((0, 4, 4)), [{"id": 99, "name": "nobody"}])
    answers = asyncio.run(together([moves[0], refused, edits.objects_record([1], moved(-1.0)[None], [])]))
    assert isinstance(answers[1], bvh.UnknownIdError) and str(answers[1]) == "no object 99 in this scene"
    assert table(store, scene_id)[1][1][0][3] == -1.0
    assert sorted(view.version for _, _, view in (answers[0], answers[2])) == [2, 3]

    # Two edits of one object: two groups, applied in arrival order.
    answers = asyncio.run(together([edits.objects_record([2], moved(5.0)[None], []),
                                    edits.objects_record([2], moved(6.0)[None], [])]))
    assert [view.version for _, _, view in answers] == [4, 5]
    assert table(store, scene_id)[2][1][0][3] == 6.0
    reopened = SceneStore(tmp_path)
    reopened.open_all()
    assert table(reopened, scene_id) == table(store, scene_id)


def test_a_scene_saved_before_journals_is_served_without_a_reload_per_request(tmp_path, monkeypatch):
    store = SceneStore(tmp_path)
    scene_id = make_scene(store)
    stored = store.get(scene_id)
    # As saved before journals: no journal, and so no sync mark of one.
    os.unlink(stored.journal_path)
    os.unlink(stored.directory / SYNC_MARK_FILE)
    reopened = SceneStore(tmp_path)
    reopened.open_all()
    first = reopened.get(scene_id)
    monkeypatch.setattr(reopened.cache, "reopen", lambda scene_id: pytest.fail("reopened an unchanged scene"))
    assert reopened.get(scene_id, reload=False) is first
    # Its first edit starts a journal after the checkpoint.
    monkeypatch.undo()
    move(reopened, scene_id, 0, 4.0)
    assert [r.seq for r in journal.read_file(first.journal_path)[0]] == [0, 1]
    assert table(SceneStore(tmp_path), scene_id) == table(reopened, scene_id)


def test_the_c_heap_settings_work_here_and_are_no_ops_without_glibc(monkeypatch):
    import ctypes

    from service.ops import memory

    memory.limit_arenas()
    memory.return_free_memory()

    def missing(name):
        raise OSError(f"no {name}")

    monkeypatch.setattr(ctypes, "CDLL", missing)
    assert memory._glibc() == (None, None)
    monkeypatch.setattr(memory, "_mallopt", None)
    monkeypatch.setattr(memory, "_malloc_trim", None)
    assert memory.limit_arenas() is None and memory.return_free_memory() is None


def test_edits_that_wait_for_a_taken_lock_keep_their_arrival_order(tmp_path):
    # A move that found the scene's lock taken (a checkpoint, another
    # worker) waits on the loop; an edit of the same object arriving
    # meanwhile must not overtake it, or a drag would end where it began.
    import asyncio

    store = SceneStore(tmp_path)
    scene_id = make_scene(store, count=4)
    lock = store.cache.lock_for(scene_id)

    async def drag():
        lock.acquire()
        first = asyncio.ensure_future(store.record_soon(scene_id, edits.objects_record([1], moved(5.0)[None], [])))
        for _ in range(3):
            await asyncio.sleep(0)  # the first move tries, finds the lock taken, waits
        lock.release()
        second = asyncio.ensure_future(store.record_soon(scene_id, edits.objects_record([1], moved(6.0)[None], [])))
        renamed = asyncio.ensure_future(store.record_soon(
            scene_id, edits.objects_record([], np.zeros((0, 4, 4)), [{"id": 1, "name": "last"}])))
        return await asyncio.gather(first, second, renamed)

    answers = asyncio.run(drag())
    assert [view.version for _, _, view in answers] == [1, 2, 3]
    assert table(store, scene_id)[1][0] == "last"
    assert table(store, scene_id)[1][1][0][3] == 6.0
    reopened = SceneStore(tmp_path)
    reopened.open_all()
    assert table(reopened, scene_id) == table(store, scene_id)
