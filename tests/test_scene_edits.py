"""Scene edits at editor rates (issue 15): moves refit the top level instead
of rebuilding it, set_transforms moves many objects all or nothing, and
saves carry annotations and run beside edits."""

import json
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

import bvh
from bvh.builders.refit import wide_sah_cost
from bvh.scene import versions
from bvh.scene.top_level import REBUILD_RATIO, TopLevel
from bvh.scene.versions import PENDING_LIMIT

from testkit.meshes import pick_rays, sample_mesh
from testkit.reference.raycast import closest_hits
from .test_scene import flatten, random_transform

DATA = Path(__file__).parent / "data"


def _scene(count=200, seed=0):
    """``count`` instances of two sample meshes (a third mirrored, all turned
    and non-uniformly scaled) and two shapes."""
    rng = np.random.default_rng(seed)
    scene = bvh.Scene()
    meshes = [scene.add_mesh(*sample_mesh(name)) for name in ("torus.ply", "gear.stl")]
    for k in range(count):
        scene.add_instance(meshes[k % 2], random_transform(rng, mirror=k % 3 == 0, spread=20.0), name=f"o{k}")
    scene.add_shape("sphere", random_transform(rng, spread=20.0), radius=0.7)
    scene.add_shape("box", random_transform(rng, mirror=True, spread=20.0), size=[1.0, 0.6, 1.6])
    return scene


def _fresh(scene):
    """A scene built anew with ``scene``'s meshes and its objects as they are now."""
    fresh = bvh.Scene()
    meshes = {info.id: fresh.add_mesh(scene.mesh_vertices(info.id), scene.mesh_faces(info.id))
              for info in scene.meshes}
    for info in scene.objects:
        if info.kind == "mesh":
            fresh.add_instance(meshes[info.mesh], info.transform, info.name, info.mask, info.pickable)
        else:
            fresh.add_shape(info.kind, info.transform, info.name, info.mask, info.pickable, **info.params)
    return fresh


def _moves(rng, scene, steps):
    """Random single and batched moves, small (a drag step) and large
    (anywhere, mirrored, non-uniformly scaled), queries between them."""
    ids = np.array([info.id for info in scene.objects])
    for step in range(steps):
        if step % 3 == 2:
            chosen = rng.choice(ids, size=int(rng.integers(1, ids.size)), replace=False)
        else:
            chosen = rng.choice(ids, size=1)
        matrices = []
        for oid in chosen.tolist():
            if rng.random() < 0.5:
                matrix = scene.object(oid).transform.copy()
                matrix[:3, 3] += rng.normal(size=3) * 0.3
            else:
                matrix = random_transform(rng, mirror=rng.random() < 0.5, spread=20.0)
            matrices.append(matrix)
        if chosen.size == 1 and step % 2:
            scene.set_transform(int(chosen[0]), matrices[0])
        else:
            scene.set_transforms(chosen, np.stack(matrices)[:, :3] if step % 4 == 0 else np.stack(matrices))
        scene.intersect([0.0, 0.0, 50.0], [0.0, 0.0, -1.0])


def _assert_same_hits(ours, theirs):
    for field in ("object", "mesh", "triangle", "t", "u", "v", "point", "normal", "front_face"):
        np.testing.assert_array_equal(getattr(ours, field), getattr(theirs, field), err_msg=field)


def test_moved_scenes_agree_with_fresh_scenes_and_the_brute_force():
    # 80 instances and 1,500 rays: the brute force over every triangle of
    # every instance is what this test spends its time on.
    scene = _scene(count=80)
    scene._snapshot()
    _moves(np.random.default_rng(1), scene, 40)
    # Most snapshots were refits; large moves of many objects make the cost
    # ratio ask for some rebuilds.
    assert scene.top_level_builds < 30
    vertices, faces, owner, _ = flatten(scene)
    origins, directions = pick_rays(vertices, 1500, np.random.default_rng(2), axis_aligned_fraction=0.1)
    hits = scene.intersect(origins, directions)
    # The same transforms give the same inverses and mesh trees, so every
    # field of every ray is the fresh scene's: the top-level tree is only
    # where candidates come from.
    _assert_same_hits(hits, _fresh(scene).intersect(origins, directions))
    ref_triangle, ref_t, _, _, edge = closest_hits(vertices, faces, origins, directions)
    on_mesh = ~(hits.hit & (hits.mesh < 0))
    agree = (hits.hit == (ref_triangle >= 0))[on_mesh]
    assert agree.mean() >= 0.999
    assert (np.abs(edge[on_mesh][~agree]) < 1e-6).all()
    both = np.flatnonzero(hits.hit & (ref_triangle >= 0) & on_mesh)
    assert both.size > 200
    assert np.mean(hits.object[both] == owner[ref_triangle[both]]) >= 0.999
    np.testing.assert_allclose(hits.t[both], ref_t[both], rtol=1e-5, atol=1e-6)


def test_moves_reuse_the_memory_of_snapshots_no_query_holds():
    # An edit's cost may not grow with the number of objects (issue 15): a
    # snapshot is made in the memory of the one before last once nothing
    # reads that one, and a snapshot still held is never written.
    scene = _scene(count=60, seed=9)
    rng = np.random.default_rng(10)
    scene._snapshot()
    _moves(rng, scene, 1)
    first = scene._snapshot()
    addresses = [array.ctypes.data for array in (first.transform, first.bounds, first.inverse, first.top.nodes,
                                                 first.top.cost_terms)]
    del first
    ids = np.array([info.id for info in scene.objects])
    step = np.eye(4)
    step[0, 3] = 0.25
    for oid in ids[:2]:
        scene.set_transform(int(oid), step @ scene.object(int(oid)).transform)
        third = scene._snapshot()
    assert scene.top_level_builds == 1
    assert [array.ctypes.data for array in (third.transform, third.bounds, third.inverse, third.top.nodes,
                                            third.top.cost_terms)] == addresses
    held = third
    kept = [array.copy() for array in (held.transform, held.bounds, held.inverse, held.top.nodes,
                                       held.top.cost_terms)]
    origins, directions = pick_rays(flatten(scene)[0], 500, np.random.default_rng(11))
    with scene.pinned():
        before = scene.intersect(origins, directions)
        _moves(rng, scene, 12)
        _assert_same_hits(scene.intersect(origins, directions), before)
    for array, copy in zip((held.transform, held.bounds, held.inverse, held.top.nodes, held.top.cost_terms), kept):
        assert np.array_equal(array.view(np.uint8), copy.view(np.uint8))
    _assert_same_hits(scene.intersect(origins, directions), _fresh(scene).intersect(origins, directions))


def test_moves_with_no_query_between_them_hold_one_entry_per_object():
    scene = _scene(count=40, seed=12)
    scene._snapshot()
    ids = [info.id for info in scene.objects]
    step = np.eye(4)
    step[1, 3] = 0.001
    for k in range(3 * PENDING_LIMIT):
        oid = ids[k % len(ids)]
        scene.set_transform(oid, step @ scene.object(oid).transform)
    assert len(scene._versions.moved) <= PENDING_LIMIT
    assert sum(part.size for part in scene._versions.moved) <= len(ids) + PENDING_LIMIT
    origins, directions = pick_rays(flatten(scene)[0], 300, np.random.default_rng(13))
    _assert_same_hits(scene.intersect(origins, directions), _fresh(scene).intersect(origins, directions))
    assert scene.top_level_builds == 1


def test_refitted_boxes_hold_every_moved_object():
    scene = _scene(count=120, seed=3)
    _moves(np.random.default_rng(4), scene, 30)
    snap = scene._snapshot()
    nodes = snap.top.nodes
    for info in scene.objects:
        if info.kind != "mesh":
            continue
        world = scene.mesh_vertices(info.mesh) @ info.transform[:3, :3].T + info.transform[:3, 3]
        row, slot = snap.top.leaf_row[info.id], snap.top.leaf_slot[info.id]
        lo = nodes[row, [slot, slot + 4, slot + 8]]
        hi = nodes[row, [slot + 12, slot + 16, slot + 20]]
        assert (lo <= world.min(axis=0)).all() and (hi >= world.max(axis=0)).all()
        # Each ancestor's slot holds its child row's boxes.
        while snap.top.row_parent[row] >= 0:
            parent, parent_slot = snap.top.row_parent[row], snap.top.row_parent_slot[row]
            assert (nodes[parent, [parent_slot + 4 * a for a in range(3)]] <= lo).all()
            assert (nodes[parent, [parent_slot + 12 + 4 * a for a in range(3)]] >= hi).all()
            row = parent


def test_a_refit_to_the_same_transforms_gives_the_built_tree_bit_for_bit():
    scene = _scene(count=80, seed=5)
    built = scene._snapshot().top.nodes.copy()
    ids = [info.id for info in scene.objects]
    scene.set_transforms(ids, np.stack([scene.object(oid).transform for oid in ids]))
    assert scene.top_level_builds == 1
    assert np.array_equal(scene._snapshot().top.nodes.view(np.int32), built.view(np.int32))
    assert scene.top_level_cost_ratio() == 1.0


def test_the_tracked_cost_is_the_trees_sah_cost_and_a_degraded_tree_is_rebuilt():
    scene = _scene(count=150, seed=6)
    ids = np.array([info.id for info in scene.objects])
    rng = np.random.default_rng(7)
    scene._snapshot()
    assert scene.top_level_builds == 1
    ratios = []
    for _ in range(60):
        # Scramble a few objects at a time: boxes once near each other fly
        # apart, and their ancestors' boxes grow over the whole scene.
        chosen = rng.choice(ids, size=8, replace=False)
        scene.set_transforms(chosen, np.stack([random_transform(rng, spread=60.0) for _ in chosen]))
        ratios.append(scene.top_level_cost_ratio())
        snap = scene._snapshot()
        exact = wide_sah_cost(snap.top.nodes, snap.top.nodes.view(np.int32), 1.0, 1.0)
        assert snap.top.cost == pytest.approx(exact, rel=1e-9)
        assert ratios[-1] <= REBUILD_RATIO
    assert scene.top_level_builds > 1, "a refit past the ratio rebuilds"
    assert max(ratios) > 1.2
    assert 1.0 in ratios


def test_masks_pickable_and_names_do_not_rebuild():
    scene = _scene(count=60, seed=8)
    scene._snapshot()
    before = scene._snapshot().top.nodes
    scene.set_mask(3, 0b10)
    scene.set_pickable(4, False)
    scene.set_name(5, "renamed")
    snap = scene._snapshot()
    assert scene.top_level_builds == 1 and snap.top.nodes is before
    assert not snap.enabled[4] and snap.enabled[3] and snap.mask[3] == 0b10
    origins = np.array([scene.object(k).bounds.mean(axis=0) + [0.0, 0.0, 50.0] for k in (3, 4)])
    directions = np.tile([0.0, 0.0, -1.0], (2, 1))
    _assert_same_hits(scene.intersect(origins, directions, mask=0b1),
                      _fresh(scene).intersect(origins, directions, mask=0b1))


def _state(scene):
    return [(o.id, o.transform.tobytes(), o.bounds.tobytes()) for o in scene.objects]


@pytest.mark.parametrize("entry, change, error, message", [
    (2, lambda ids, m: ids.__setitem__(2, 999), bvh.UnknownIdError,
     "transforms[2] (object 999): no object 999 in this scene"),
    (4, lambda ids, m: ids.__setitem__(4, ids[1]), ValueError,
     "transforms[4] (object {oid}): object {oid} is given twice (also transforms[1])"),
    (3, lambda ids, m: m.__setitem__((3, 0, 1), np.nan), ValueError,
     "transforms[3] (object {oid}): transform contains NaN or infinite values"),
    (1, lambda ids, m: m.__setitem__((1, 3, 0), 0.5), ValueError,
     "transforms[1] (object {oid}): transform must be affine: its last row must be [0, 0, 0, 1], "
     "got [0.5, 0.0, 0.0, 1.0]"),
    (5, lambda ids, m: m.__setitem__((5, slice(0, 3), 0), m[5, :3, 1]), ValueError,
     "transforms[5] (object {oid}): transform is not invertible: its 3x3 part is singular"),
    (0, lambda ids, m: m.__setitem__((0, 0, 3), 1e38), ValueError,
     "transforms[0] (object {oid}): transform places the object beyond 1e+37 from the origin"),
])
def test_set_transforms_is_all_or_nothing(entry, change, error, message):
    scene = _scene(count=40, seed=9)
    scene.remove(7)
    rng = np.random.default_rng(10)
    ids = np.array([3, 11, 12, 20, 30, 39])
    matrices = np.stack([random_transform(rng) for _ in ids])
    # A bad entry after the first one must not win over it.
    matrices[5, 0, 3] = np.nan if entry < 5 else matrices[5, 0, 3]
    change(ids, matrices)
    origins, directions = pick_rays(flatten(scene)[0], 500, np.random.default_rng(11))
    hits, state = scene.intersect(origins, directions), _state(scene)
    with pytest.raises(error) as raised:
        scene.set_transforms(ids, matrices)
    expected = message.format(oid=ids[entry])
    assert str(raised.value).strip("'\"").startswith(expected)
    assert _state(scene) == state
    _assert_same_hits(scene.intersect(origins, directions), hits)
    with pytest.raises(bvh.UnknownIdError, match=r"transforms\[0\] \(object 7\): no object 7"):
        scene.set_transforms([7], np.eye(4)[None])


def test_set_transforms_refuses_malformed_arrays_and_takes_rows_of_three():
    scene = _scene(count=10, seed=12)
    with pytest.raises(ValueError, match=r"transforms must have shape \(2, 4, 4\) or \(2, 3, 4\)"):
        scene.set_transforms([0, 1], np.eye(4))
    with pytest.raises(ValueError, match="object_ids must be a 1-D list of integer object ids"):
        scene.set_transforms([0.0, 1.0], np.tile(np.eye(4), (2, 1, 1)))
    with pytest.raises(ValueError, match="object_ids must be a 1-D list of integer object ids"):
        scene.set_transforms([True], np.eye(4)[None])
    scene.set_transforms([], np.zeros((0, 4, 4)))
    moved = random_transform(np.random.default_rng(13))
    scene.set_transforms(np.array([4], np.uint32), moved[None, :3])
    single = _scene(count=10, seed=12)
    single.set_transform(4, moved)
    assert np.array_equal(scene.object(4).transform, moved)
    assert np.array_equal(scene.object(4).bounds, single.object(4).bounds)
    # set_transform keeps its own messages.
    with pytest.raises(ValueError, match="^transform contains NaN or infinite values$"):
        scene.set_transform(4, np.full((4, 4), np.nan))


def test_set_transforms_is_one_change_for_queries():
    scene = _scene(count=30, seed=14)
    rng = np.random.default_rng(15)
    ids = np.arange(30)
    matrices = np.stack([random_transform(rng, spread=20.0) for _ in ids])
    fresh_before = _fresh(scene)
    origins, directions = pick_rays(flatten(scene)[0], 400, np.random.default_rng(16))
    seen = []
    with scene.batch():
        scene.set_transforms(ids, matrices)
        thread = threading.Thread(target=lambda: seen.append(scene.intersect(origins, directions)))
        thread.start()
        thread.join()
    _assert_same_hits(seen[0], fresh_before.intersect(origins, directions))
    _assert_same_hits(scene.intersect(origins, directions), _fresh(scene).intersect(origins, directions))


def test_annotations_round_trip(tmp_path):
    scene = _scene(count=5, seed=17)
    assert scene.annotations == {}
    scene.save(tmp_path / "s", annotations={"journal": 41, "by": "store"})
    opened = bvh.Scene.open(tmp_path / "s")
    assert opened.annotations == {"journal": 41, "by": "store"}
    assert json.loads((tmp_path / "s" / "manifest.json").read_text())["metadata"]["annotations"] == \
        {"journal": 41, "by": "store"}
    opened.annotations["journal"] = 0
    assert opened.annotations["journal"] == 41, "a copy, not the scene's own"
    # A save without annotations keeps the scene's own, as annotate changed them.
    opened.annotate("journal", 42)
    opened.save(tmp_path / "s")
    assert bvh.Scene.open(tmp_path / "s").annotations == {"journal": 42, "by": "store"}
    opened.save(tmp_path / "s", annotations={})
    assert bvh.Scene.open(tmp_path / "s").annotations == {}
    for bad, problem in [([1], "must be a dict"), ({1: 2}, "string keys"), ({"x": float("nan")}, "JSON data"),
                         ({"x": object()}, "JSON data"), ({"x": "y" * 70000}, "more than 65536")]:
        with pytest.raises(ValueError, match=problem):
            opened.save(tmp_path / "t", annotations=bad)
    assert not (tmp_path / "t" / "manifest.json").exists()


def test_a_scene_saved_before_annotations_opens_with_none(tmp_path):
    directory = tmp_path / "old"
    shutil.copytree(DATA / "scene_format_v1", directory)
    assert bvh.Scene.open(directory).annotations == {}


def test_saves_during_edits_write_consistent_scenes(tmp_path):
    scene = _scene(count=100, seed=18)
    ids = np.array([info.id for info in scene.objects if info.kind == "mesh"])
    stop = threading.Event()
    errors = []

    def mover():
        # Every batch moves all mesh objects by one shared translation:
        # a consistent save has a single translation for all of them.
        rng = np.random.default_rng(19)
        base = np.stack([scene.object(int(oid)).transform for oid in ids])
        step = 0
        while not stop.is_set():
            step += 1
            moved = base.copy()
            moved[:, :3, 3] += step * 0.01
            scene.set_transforms(ids, moved)
            scene.intersect(rng.normal(size=(4, 3)) * 5, rng.normal(size=(4, 3)))

    def saver(k):
        try:
            for round_ in range(4):
                scene.save(tmp_path / "s", annotations={"saver": k, "round": round_})
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    base = np.stack([scene.object(int(oid)).transform for oid in ids])
    thread = threading.Thread(target=mover)
    thread.start()
    savers = [threading.Thread(target=saver, args=(k,)) for k in range(2)]
    for s in savers:
        s.start()
    for s in savers:
        s.join()
    stop.set()
    thread.join()
    assert not errors
    opened = bvh.Scene.open(tmp_path / "s")
    assert opened.annotations["round"] == 3
    shifts = np.stack([opened.object(int(oid)).transform[:3, 3] for oid in ids]) - base[:, :3, 3]
    np.testing.assert_allclose(shifts, shifts[0:1].repeat(len(ids), axis=0), atol=1e-9)
    origins, directions = pick_rays(flatten(opened)[0], 500, np.random.default_rng(20))
    _assert_same_hits(opened.intersect(origins, directions), _fresh(opened).intersect(origins, directions))


def test_open_of_many_instances_gives_the_boxes_of_one_by_one_placement(tmp_path):
    scene = _scene(count=50, seed=21)
    scene.remove(10)
    scene.save(tmp_path / "s")
    opened = bvh.Scene.open(tmp_path / "s")
    assert len(opened) == len(scene)
    for a, b in zip(opened.objects, scene.objects):
        assert np.array_equal(a.bounds, b.bounds) and np.array_equal(a.transform, b.transform)


def test_an_annotation_set_while_a_save_runs_is_kept(tmp_path, monkeypatch):
    # The store's background checkpoint saves while edits go on, each annotating the journal
    # number it holds: the save writes the number it captured, and must not put that one back
    # as the scene's own afterwards (a later save would label newer state with an older number).
    import bvh.io.persistence

    scene = _scene(count=2, seed=5)
    scene.annotate("journal", 21)
    write_arrays = bvh.io.persistence.write_arrays

    def write_while_an_edit_lands(directory, arrays, metadata, tokens):
        scene.annotate("journal", 23)
        write_arrays(directory, arrays, metadata, tokens)

    monkeypatch.setattr(bvh.io.persistence, "write_arrays", write_while_an_edit_lands)
    scene.save(tmp_path / "s")
    monkeypatch.setattr(bvh.io.persistence, "write_arrays", write_arrays)
    assert bvh.Scene.open(tmp_path / "s").annotations == {"journal": 21}
    assert scene.annotations == {"journal": 23}
    scene.save(tmp_path / "s")
    assert bvh.Scene.open(tmp_path / "s").annotations == {"journal": 23}


def test_a_pinned_thread_answers_from_the_scene_as_the_block_began():
    scene = bvh.Scene()
    square = scene.add_mesh(np.array([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]), np.array([[0, 1, 2], [0, 2, 3]]))
    oid = scene.add_instance(square)
    down = (np.array([[0.5, 0.5, 5.0]]), np.array([[0.0, 0.0, -1.0]]))
    lifted = np.eye(4)
    lifted[2, 3] = 2.0
    version = {"n": 0}
    with scene.pinned(lambda: version["n"]) as seen:
        assert seen == 0

        def edit():
            with scene.batch(answering=False):
                scene.set_transform(oid, lifted)
                version["n"] = 1

        other = threading.Thread(target=edit)
        other.start()
        other.join()
        # This thread still answers from the scene of version 0; another sees version 1.
        assert scene.intersect(*down).t.tolist() == [5.0]
        assert len(scene.select(bvh.Camera.pinhole([0.5, 0.5, 5.0], [0.5, 0.5, 0.0], [0, 1, 0], 60.0, 64, 64)
                                .frustum())) == 1
        elsewhere = []
        reader = threading.Thread(target=lambda: elsewhere.append(scene.intersect(*down).t.tolist()))
        reader.start()
        reader.join()
        assert elsewhere == [[3.0]]
        with scene.pinned(lambda: version["n"]) as inner:
            # A block inside another takes the scene as it is now.
            assert inner == 1 and scene.intersect(*down).t.tolist() == [3.0]
        assert scene.intersect(*down).t.tolist() == [5.0]
    assert scene.intersect(*down).t.tolist() == [3.0]


def _placement_state(scene):
    table = scene._objects
    return [array[:table.count].copy() for array in (table.transform, table.inverse, table.bounds, table.reported)]


@pytest.mark.parametrize("seed", range(3))
def test_the_compiled_path_of_small_moves_places_objects_as_the_general_path(seed, monkeypatch):
    fast, general = _scene(count=60, seed=seed), _scene(count=60, seed=seed)
    rng = np.random.default_rng(100 + seed)
    ids = np.array([info.id for info in fast.objects])
    for step in range(40):
        chosen = rng.choice(ids, size=int(rng.integers(1, 6)), replace=False)
        matrices = np.stack([random_transform(rng, mirror=rng.random() < 0.5, spread=10.0 ** rng.integers(-3, 5))
                             for _ in chosen])
        if step % 5 == 0:
            # Axis-aligned turns and exact scales: answers with zeros and -0.0 in them.
            matrices[0, :3, :3] = [[0.0, 0.0, -2.0], [1.0, 0.0, 0.0], [0.0, 0.5, 0.0]]
        fast.set_transforms(chosen, matrices)
        monkeypatch.setattr(bvh.scene.objects, "FAST_MOVES", 0)
        general.set_transforms(chosen, matrices)
        monkeypatch.setattr(bvh.scene.objects, "FAST_MOVES", 256)
    for ours, theirs in zip(_placement_state(fast), _placement_state(general)):
        assert np.array_equal(ours, theirs) and np.array_equal(np.signbit(ours), np.signbit(theirs))
    origins, directions = pick_rays(flatten(fast)[0], 300, np.random.default_rng(seed))
    _assert_same_hits(fast.intersect(origins, directions), general.intersect(origins, directions))


def test_nearly_singular_moves_are_decided_by_the_singular_values():
    # The compiled path's bound leaves these to the SVD: accepted just below the
    # limit on the condition number, refused above it, as set_transform decides.
    scene = _scene(count=4, seed=3)
    turn = random_transform(np.random.default_rng(4))[:3, :3]
    turn /= np.cbrt(np.linalg.det(turn))
    for condition, accepted in ((1e9, True), (1e11, True), (1e13, False)):
        matrix = np.eye(4)
        matrix[:3, :3] = turn @ np.diag([1.0, 1.0, 1.0 / condition])
        if accepted:
            scene.set_transforms([1], matrix[None])
            assert np.array_equal(scene.object(1).transform, matrix)
        else:
            with pytest.raises(ValueError, match=r"transforms\[0\] \(object 1\): transform is not invertible"):
                scene.set_transforms([1], matrix[None])


def test_the_bound_on_the_condition_number_never_accepts_what_the_svd_refuses():
    from bvh.builders.placement import _clearly_invertible
    from bvh.scene.checks import MAX_CONDITION

    rng = np.random.default_rng(5)
    for _ in range(3000):
        u, _r = np.linalg.qr(rng.normal(size=(3, 3)))
        v, _r = np.linalg.qr(rng.normal(size=(3, 3)))
        singular = np.sort(10.0 ** rng.uniform(-14, 2, size=3))[::-1]
        matrix = np.eye(4)
        matrix[:3, :3] = (u * singular) @ v.T * 10.0 ** rng.integers(-20, 20)
        if _clearly_invertible(matrix[None], 0, MAX_CONDITION):
            # The bound is at least the condition number and accepts below half the limit:
            # the SVD's own test passes, with a factor of two to spare for its rounding.
            computed = np.linalg.svd(matrix[:3, :3], compute_uv=False)
            assert computed[-1] > computed[0] / MAX_CONDITION


class _GatedBuilds:
    """Background top-level builds held at their start until ``release``:
    edits can be made while one is under way, deterministically."""

    def __init__(self, monkeypatch):
        self.gate = threading.Event()
        self.entered = threading.Semaphore(0)
        self.started = 0
        build = TopLevel.from_boxes.__func__

        def gated(cls, objects, boxes, count):
            if threading.current_thread().name == "bvh-top-level":
                self.started += 1
                self.entered.release()
                assert self.gate.wait(60.0)
            return build(cls, objects, boxes, count)

        monkeypatch.setattr(TopLevel, "from_boxes", classmethod(gated))
        # Every scene here is large enough for its builds to go to the background.
        monkeypatch.setattr(versions, "SYNC_BUILD_LIMIT", 0)

    def release(self):
        self.gate.set()


def _scramble(scene, rng, ids, count=8):
    chosen = rng.choice(ids, size=count, replace=False)
    scene.set_transforms(chosen, np.stack([random_transform(rng, spread=60.0) for _ in chosen]))


def _degraded_scene(count, seed):
    """``(scene, ids, rng)``: a scene whose objects were scrambled until its
    top level asked for a build."""
    scene = _scene(count=count, seed=seed)
    ids = np.array([info.id for info in scene.objects])
    rng = np.random.default_rng(seed + 1)
    for _ in range(100):
        _scramble(scene, rng, ids)
        if scene.top_level_cost_ratio() > REBUILD_RATIO:
            return scene, ids, rng
    raise AssertionError("scrambling never degraded the top level")


def test_a_large_scenes_degraded_top_level_is_built_in_the_background_while_refits_answer(monkeypatch):
    builds = _GatedBuilds(monkeypatch)
    scene, ids, rng = _degraded_scene(150, seed=6)
    origins, directions = pick_rays(flatten(scene)[0], 400, np.random.default_rng(8))
    assert builds.entered.acquire(timeout=60.0)
    assert scene.top_level_builds == 1 and builds.started == 1
    # The build waits; edits and queries go on with the refitted tree, which
    # answers as a fresh scene does however degraded it is.
    for step in range(6):
        if step % 2:
            _scramble(scene, rng, ids)
        else:
            # A drag: objects moved a little, the build has them to follow.
            chosen = rng.choice(ids, size=10, replace=False)
            matrices = np.stack([scene.object(int(k)).transform for k in chosen])
            matrices[:, :3, 3] += rng.normal(size=(10, 3)) * 0.05
            scene.set_transforms(chosen, matrices)
        _assert_same_hits(scene.intersect(origins, directions), _fresh(scene).intersect(origins, directions))
    assert scene.top_level_cost_ratio() > REBUILD_RATIO
    assert builds.started == 1, "one build at a time"
    degraded = scene._snapshot().top.cost
    builds.release()
    assert scene.wait_for_rebuilds(60.0)
    # The next query takes the new tree, refitted to the objects moved while it was built.
    hits = scene.intersect(origins, directions)
    assert scene.top_level_builds == 2
    assert scene._snapshot().top.cost < degraded
    _assert_same_hits(hits, _fresh(scene).intersect(origins, directions))
    snap = scene._snapshot()
    for info in scene.objects:
        row, slot = snap.top.leaf_row[info.id], snap.top.leaf_slot[info.id]
        box = snap.top.nodes[row, [slot + 4 * a for a in range(6)]]
        assert (box[:3] <= info.bounds[0]).all() and (box[3:] >= info.bounds[1]).all()
    # The tree taken over answers edits by refits as any other.
    _scramble(scene, rng, ids, count=2)
    _assert_same_hits(scene.intersect(origins, directions), _fresh(scene).intersect(origins, directions))


def test_a_background_build_is_dropped_when_objects_are_added_or_removed_meanwhile(monkeypatch):
    builds = _GatedBuilds(monkeypatch)
    scene, ids, rng = _degraded_scene(120, seed=9)
    scene.add_instance(scene.meshes[0].id, random_transform(rng, spread=20.0))
    # The last object removed: the fresh scene numbers its objects alike.
    scene.remove(scene.add_instance(scene.meshes[1].id, random_transform(rng, spread=20.0)))
    origins, directions = pick_rays(flatten(scene)[0], 300, np.random.default_rng(11))
    _assert_same_hits(scene.intersect(origins, directions), _fresh(scene).intersect(origins, directions))
    assert scene.top_level_builds == 2, "the change built the top level anew, once"
    builds.release()
    assert scene.wait_for_rebuilds(60.0)
    _scramble(scene, rng, ids[1:], count=2)
    _assert_same_hits(scene.intersect(origins, directions), _fresh(scene).intersect(origins, directions))
    assert scene.top_level_builds == 2, "the build of the scene before the change is not taken"


def test_a_background_build_done_during_a_batch_is_taken_after_it(monkeypatch):
    builds = _GatedBuilds(monkeypatch)
    scene, ids, rng = _degraded_scene(120, seed=12)
    origins, directions = pick_rays(flatten(scene)[0], 300, np.random.default_rng(14))
    before = scene.intersect(origins, directions)
    with scene.batch():
        _scramble(scene, rng, ids)
        builds.release()
        assert scene.wait_for_rebuilds(60.0)
        # Queries in the batch see the scene of before it, whole.
        _assert_same_hits(scene.intersect(origins, directions), before)
        assert scene.top_level_builds == 1
    _assert_same_hits(scene.intersect(origins, directions), _fresh(scene).intersect(origins, directions))
    assert scene.top_level_builds == 2
