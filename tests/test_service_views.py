"""service.store.views.ObjectTable: the object table an edit makes in time that grows with the edit."""

import numpy as np

import bvh
from service.store import views
from service.queries.results import object_json
from service.store.views import ObjectTable


def _scene() -> bvh.Scene:
    scene = bvh.Scene()
    mesh = scene.add_mesh(np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]]), name="tri")
    for index in range(6):
        matrix = np.eye(4)
        matrix[0, 3] = 2.0 * index
        scene.add_instance(mesh, matrix, name=f"o{index}", mask=index + 1, pickable=index % 2 == 0)
    scene.add_shape("sphere", radius=0.5, name="ball")
    scene.add_shape("box", np.diag([1.0, 2.0, 3.0, 1.0]), size=[1.0, 1.0, 1.0])
    return scene


def _expected(scene: bvh.Scene) -> dict:
    return {info.id: object_json(info) for info in scene.objects}


def test_a_table_reads_as_the_scene_does_after_edits_removals_and_additions(monkeypatch):
    scene = _scene()
    table = ObjectTable.of(scene)
    assert {oid: object_json(info) for oid, info in table.items()} == _expected(scene)
    moved = np.eye(4)
    moved[1, 3] = 5.0
    scene.set_transform(2, moved)
    scene.set_name(3, None)
    scene.remove(4)
    added = scene.add_instance(0, name="late")
    table = table.changed(scene, [2, 3, 4, added])
    assert list(table) == sorted(_expected(scene)) and len(table) == len(scene.objects)
    assert {oid: object_json(info) for oid, info in table.items()} == _expected(scene)
    assert 4 not in table and added in table
    assert table.triangles == scene.triangle_count
    np.testing.assert_array_equal(table.bounds, scene.bounds)
    # Past FRESH_ROWS_AFTER changes the rows are copied anew; the table reads the same.
    monkeypatch.setattr(views, "FRESH_ROWS_AFTER", 2)
    fresh = table.changed(scene, [0])
    assert fresh.changes == {} and {oid: object_json(info) for oid, info in fresh.items()} == _expected(scene)


def test_json_of_many_objects_is_what_object_json_gives_each():
    scene = _scene()
    table = ObjectTable.of(scene)
    scene.set_pickable(1, True)
    table = table.changed(scene, [1])
    ids = [7, 1, 0, 99, 6, 3]
    expected = _expected(scene)
    assert table.json(ids) == [expected[oid] for oid in ids if oid in expected]


def test_names_and_kinds_of_many_objects_are_each_objects_own_after_edits_without_making_infos():
    scene = _scene()
    table = ObjectTable.of(scene)
    scene.set_name(2, "renamed")
    scene.remove(5)
    added = scene.add_shape("sphere", radius=1.0, name="late")
    table = table.changed(scene, [2, 5, added])
    ids = [added, 7, 0, 2, 6, 2, 1]
    names, kinds = table.names_and_kinds(np.array(ids))
    assert names == [scene.object(oid).name for oid in ids]
    assert kinds == [scene.object(oid).kind for oid in ids]
    # Read from the rows' columns: no ObjectInfo was made and kept for them.
    assert table._shared["infos"] == {}
    try:
        table.names_and_kinds(np.array([5]))
    except KeyError as error:
        assert error.args == (5,)
    else:
        raise AssertionError("a removed object has no name")


def test_the_longest_name_bounds_every_live_name_and_follows_renames():
    scene = _scene()
    table = ObjectTable.of(scene)
    assert table.longest_name == len("ball")
    scene.set_name(1, "a much longer name")
    table = table.changed(scene, [1])
    assert table.longest_name == len("a much longer name")
    # A later table over the same rows keeps counting the rows' names, the overridden one too:
    # a bound for the answer's size, never below a live name.
    scene.set_name(1, None)
    table = table.changed(scene, [1])
    assert table.longest_name == len("ball")
    fresh = ObjectTable.of(scene)
    assert fresh.longest_name == max(len(info.name) for info in scene.objects if info.name)
    empty = ObjectTable.of(bvh.Scene())
    assert empty.longest_name == 0


def test_the_head_json_of_a_table_is_its_first_live_objects_in_id_order_made_once_per_limit():
    import json

    scene = _scene()
    table = ObjectTable.of(scene)
    scene.remove(2)
    table = table.changed(scene, [2])
    expected = _expected(scene)
    live = sorted(expected)
    assert len(live) > 2
    text, next_after = table.head_json(2)
    # Only the first two, and the id to page on from: the rest is never serialized.
    assert json.loads(text) == [expected[oid] for oid in live[:2]]
    assert next_after == live[1]
    assert table.head_json(2) is table.head_json(2)
    text, next_after = table.head_json(len(live))
    assert json.loads(text) == [expected[oid] for oid in live] and next_after is None
    assert table.head_json(len(live) + 5)[1] is None


def test_a_page_is_the_slice_of_the_sorted_live_ids_after_edits_removals_and_additions(monkeypatch):
    # Rows of 30,000 objects, then changes over them: removals (some of the rows', some of the
    # added), moves and additions; every page against the live ids sorted.
    monkeypatch.setattr(views, "FRESH_ROWS_AFTER", 10_000)
    scene = bvh.Scene()
    mesh = scene.add_mesh(np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]]))
    count = 30_000
    transforms = np.tile(np.eye(4), (count, 1, 1))
    transforms[:, 0, 3] = np.arange(count)
    scene.add_instances(np.zeros(count, np.int64), transforms)
    table = ObjectTable.of(scene)
    rng = np.random.default_rng(38)
    doomed = rng.choice(count, 700, replace=False).tolist()
    scene.remove_many(doomed)
    added = [scene.add_instance(mesh) for _ in range(300)]
    scene.remove_many(added[::3])
    scene.set_transform(17, np.eye(4))
    table = table.changed(scene, doomed + added + [17])
    assert table.changes and table.rows.ids.shape[0] == count
    live = scene.object_rows().ids.tolist()
    assert len(table) == len(live)
    for after in [None, -1, 0, 16, 17, 5000, count - 2, count - 1, count + 5, added[-2], added[-1], 10 ** 15]:
        for limit in (1, 3, 1000, 40_000):
            start = 0 if after is None else np.searchsorted(live, after, side="right")
            expected = live[start:start + limit]
            ids, next_after = table.page(after, limit)
            assert ids == expected, (after, limit)
            assert next_after == (expected[-1] if start + limit < len(live) else None), (after, limit)
    # Paging from the first page to the last lists every live id once.
    listed, after = [], None
    while True:
        ids, after = table.page(after, 997)
        listed += ids
        if after is None:
            break
    assert listed == live
    assert table.json(listed[:5] + [doomed[0], added[0]]) == [object_json(scene.object(oid)) for oid in listed[:5]]
