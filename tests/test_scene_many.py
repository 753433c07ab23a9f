"""Placing and removing many objects at once (issue 38): ``Scene.add_instances``
and ``Scene.remove_many`` against the same edits made one object at a time,
and picks against the flattened float64 brute force."""

import numpy as np
import pytest
import trimesh

import bvh
from bvh.scene.checks import MAX_CONDITION
from bvh.scene.saving import saved_top_level

from testkit.meshes import pick_rays, sample_mesh
from testkit.reference.raycast import closest_hits
from .test_scene import flatten, random_transform


def three_meshes(scene):
    return np.array([scene.add_mesh(*sample_mesh(name), name=name)
                     for name in ("torus.ply", "gear.stl", "capsule_quads.obj")])


def random_placements(count, seed, spread=12.0):
    """``(mesh index (N,) of three, transforms (N, 4, 4), names, masks, pickable)``:
    rotated, non-uniformly scaled, a third mirrored, a few unpickable or masked off."""
    rng = np.random.default_rng(seed)
    transforms = np.stack([random_transform(rng, mirror=k % 3 == 1, spread=spread) for k in range(count)])
    which = rng.integers(0, 3, count)
    names = [None if k % 4 == 0 else f"item{k}" for k in range(count)]
    masks = rng.choice(np.array([0xFFFFFFFF, 1, 2, 0], np.uint32), count, p=[0.7, 0.1, 0.1, 0.1])
    pickable = rng.random(count) > 0.1
    return which, transforms, names, masks, pickable


def same_rows(a, b):
    for field in ("ids", "kind", "mesh", "transform", "bounds", "mask", "pickable", "triangles"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert a.names == b.names and a.params == b.params


def same_hits(a, b):
    for field in ("object", "triangle", "t", "point", "normal", "front_face"):
        # Misses have NaN points and normals.
        assert np.array_equal(getattr(a, field), getattr(b, field), equal_nan=field != "object"), field


@pytest.fixture(scope="module")
def placed_both_ways():
    """The same 72 objects placed by ``add_instance`` one by one and by one ``add_instances``."""
    which, transforms, names, masks, pickable = random_placements(72, seed=3)
    one_by_one, at_once = bvh.Scene(), bvh.Scene()
    meshes_one, meshes_all = three_meshes(one_by_one), three_meshes(at_once)
    for k in range(72):
        one_by_one.add_instance(int(meshes_one[which[k]]), transforms[k], names[k], int(masks[k]), bool(pickable[k]))
    ids = at_once.add_instances(meshes_all[which], transforms, names, masks, pickable)
    return one_by_one, at_once, ids


def test_add_instances_makes_what_add_instance_makes(placed_both_ways):
    one_by_one, at_once, ids = placed_both_ways
    assert ids.dtype == np.int64 and np.array_equal(ids, np.arange(72))
    assert len(at_once) == len(one_by_one) == 72
    same_rows(at_once.object_rows(), one_by_one.object_rows())
    for mine, theirs in zip(at_once.objects, one_by_one.objects, strict=True):
        assert (mine.id, mine.name, mine.kind, mine.mesh, mine.mask, mine.pickable, mine.triangles, mine.params) == \
            (theirs.id, theirs.name, theirs.kind, theirs.mesh, theirs.mask, theirs.pickable, theirs.triangles,
             theirs.params)
        assert np.array_equal(mine.transform, theirs.transform) and np.array_equal(mine.bounds, theirs.bounds)
    assert np.array_equal(at_once.bounds, one_by_one.bounds)
    assert at_once.triangle_count == one_by_one.triangle_count
    vertices, _, _, _ = flatten(one_by_one)
    origins, directions = pick_rays(vertices, 1500, np.random.default_rng(4), axis_aligned_fraction=0.1)
    for mask in (0xFFFFFFFF, 1, 2):
        same_hits(at_once.intersect(origins, directions, mask=mask),
                  one_by_one.intersect(origins, directions, mask=mask))
    assert at_once.top_level_builds == 1, "one change: the top level is built once"


def test_picks_of_placed_instances_agree_with_the_brute_force(placed_both_ways):
    _, scene, _ = placed_both_ways
    vertices, faces, owner, local_face = flatten(scene)
    rows = scene.object_rows()
    origins, directions = pick_rays(vertices, 500, np.random.default_rng(5), axis_aligned_fraction=0.1)
    for mask, rays in ((0xFFFFFFFF, 500), (1, 250)):
        origins, directions = origins[:rays], directions[:rays]
        # The reference holds the pickable objects (flatten's) whose mask shares a bit with the query's.
        seen = rows.ids[(rows.mask & mask) != 0]
        kept = np.isin(owner, seen)
        hits = scene.intersect(origins, directions, mask=mask)
        ref_triangle, ref_t, _, _, edge = closest_hits(vertices, faces[kept], origins, directions)
        ref_hit = ref_triangle >= 0
        assert ref_hit.mean() > 0.1
        agree = hits.hit == ref_hit
        assert agree.mean() >= 0.999
        assert (np.abs(edge[~agree]) < 1e-6).all()
        both = hits.hit & ref_hit
        same_object = hits.object[both] == owner[kept][ref_triangle[both]]
        assert same_object.mean() >= 0.999
        same = np.flatnonzero(both)[same_object]
        assert np.allclose(hits.t[same], ref_t[same], rtol=1e-5, atol=1e-6)
        assert (hits.triangle[same] == local_face[kept][ref_triangle[same]]).mean() >= 0.99


def test_many_instances_of_one_mesh_as_a_scalar_id_and_three_row_matrices():
    rng = np.random.default_rng(11)
    sphere = trimesh.creation.icosphere(subdivisions=1)
    count = 20_000
    transforms = np.tile(np.eye(4), (count, 1, 1))
    transforms[:, :3, :3] *= rng.uniform(0.2, 0.6, (count, 1, 1))
    transforms[:, :3, 3] = rng.uniform(-100.0, 100.0, (count, 3))
    loop, batch = bvh.Scene(), bvh.Scene()
    for k in range(count):
        loop.add_instance(loop.add_mesh(sphere.vertices, sphere.faces) if k == 0 else 0, transforms[k])
    mesh = batch.add_mesh(sphere.vertices, sphere.faces)
    ids = batch.add_instances(mesh, transforms[:, :3])
    assert np.array_equal(ids, np.arange(count)) and len(batch) == count
    same_rows(batch.object_rows(), loop.object_rows())
    origins, directions = pick_rays(transforms[:, :3, 3], 3000, rng, axis_aligned_fraction=0.2)
    hits = batch.intersect(origins, directions)
    same_hits(hits, loop.intersect(origins, directions))
    assert hits.hit.mean() > 0.02
    # Against the exact sphere of the object hit: the point lies on its (flat-faced) surface.
    centre = transforms[hits.object[hits.hit], :3, 3]
    radius = transforms[hits.object[hits.hit], 0, 0]
    distance = np.linalg.norm(hits.point[hits.hit] - centre, axis=1) / radius
    assert (distance <= 1.0 + 1e-6).all() and (distance > 0.79).all()
    more = batch.add_instances(np.zeros(10, np.int64), transforms[:10], names=[f"n{k}" for k in range(10)])
    assert np.array_equal(more, np.arange(count, count + 10)) and batch.object(count + 3).name == "n3"
    assert batch.add_instances(mesh, np.zeros((0, 4, 4))).shape == (0,)
    assert len(batch) == count + 10


def refusals(mesh):
    """``(arguments of add_instances, error, message)`` for bad input, each naming the entry at fault."""
    good = np.tile(np.eye(4), (5, 1, 1))
    nan, singular, skewed, far, ill = (good.copy() for _ in range(5))
    nan[3, 1, 2] = np.nan
    singular[2] = np.diag([1.0, 0.0, 1.0, 1.0])
    skewed[4, 3] = (0.0, 0.0, 1.0, 1.0)
    far[1, :3, 3] = 1e38
    ill[0, :3, :3] = np.diag([1.0, 1.0, 1.0 / MAX_CONDITION / 10])
    meshes = np.full(5, mesh)
    return [
        ((mesh + 1, good), bvh.UnknownIdError, f"no mesh {mesh + 1} in this scene"),
        ((np.array([mesh, mesh, -1, mesh, mesh]), good), bvh.UnknownIdError, r"mesh_ids\[2\]: no mesh -1"),
        ((np.array([mesh, 9, 9, mesh, mesh]), good), bvh.UnknownIdError, r"mesh_ids\[1\]: no mesh 9"),
        ((meshes, nan), ValueError, r"transforms\[3\]: transform contains NaN or infinite values"),
        ((meshes, singular), ValueError, r"transforms\[2\]: transform is not invertible"),
        ((meshes, ill), ValueError, r"transforms\[0\]: transform is not invertible"),
        ((meshes, skewed), ValueError, r"transforms\[4\]: transform must be affine"),
        ((meshes, far), ValueError, r"transforms\[1\]: transform places the object beyond"),
        ((meshes, good[:, :, :3]), ValueError, r"transforms must have shape \(N, 4, 4\) or \(N, 3, 4\)"),
        ((meshes, np.eye(4)), ValueError, r"transforms must have shape"),
        ((meshes[:4], good), ValueError, r"mesh_ids must be one integer mesh id or one per transform \(5\)"),
        ((meshes.astype(float), good), ValueError, "mesh_ids must be one integer mesh id"),
        ((True, good), ValueError, "mesh_ids must be one integer mesh id"),
        ((meshes, good.astype(str)), ValueError, "transforms must be an array of real numbers"),
        ((meshes, good, ["a"] * 4), ValueError, r"names must have one name per transform \(5\), got 4"),
        ((meshes, good, ["a", "b", 3, "d", None]), ValueError, r"names\[2\]: name must be a string or None"),
        ((meshes, good, "abcde"), ValueError, "names must be a list"),
        ((meshes, good, None, np.array([1, 2, -1, 4, 5])), ValueError, r"masks\[2\]: mask must be an integer"),
        ((meshes, good, None, np.array([1, 2, 3, 4, 2 ** 32])), ValueError, r"masks\[4\]: mask must be"),
        ((meshes, good, None, np.ones(5)), ValueError, r"masks\[0\]: mask must be an integer"),
        ((meshes, good, None, [1, 2]), ValueError, r"masks must be one mask or one per transform \(5\)"),
        ((meshes, good, None, -1), ValueError, "mask must be an integer"),
        ((meshes, good, None, None, np.ones(5, int)), ValueError, r"pickable\[0\]: pickable must be true or false"),
        ((meshes, good, None, None, [True] * 4), ValueError, r"pickable must be one flag or one per transform"),
        ((meshes, good, None, None, "yes"), ValueError, "pickable must be true or false"),
    ]


def test_refusals_name_the_entry_and_add_nothing():
    scene = bvh.Scene()
    mesh = scene.add_mesh(*sample_mesh("torus.ply"))
    scene.add_instances(mesh, np.tile(np.eye(4), (3, 1, 1)))
    scene.intersect((0.0, 0.0, 9.0), (0.0, 0.0, -1.0))
    before = scene.object_rows()
    for arguments, error, message in refusals(mesh):
        with pytest.raises(error, match=message):
            scene.add_instances(*arguments)
        assert len(scene) == 3
    same_rows(scene.object_rows(), before)
    assert scene.top_level_builds == 1, "a refused placement is no change"
    assert np.array_equal(scene.add_instances(mesh, np.tile(np.eye(4), (2, 1, 1))), [3, 4])


def test_remove_many_is_all_or_nothing(placed_both_ways):
    _, template, _ = placed_both_ways
    rows = template.object_rows()
    scene, one_by_one = bvh.Scene(), bvh.Scene()
    for target in (scene, one_by_one):
        three_meshes(target)
        target.add_instances(rows.mesh, rows.transform, rows.names, rows.mask, rows.pickable)
        target.add_shape("sphere", radius=0.7, name="ball")
        target.add_shape("box", size=[1.0, 2.0, 0.5], name="brick")
        target.remove(5)
    vertices, _, _, _ = flatten(scene)
    origins, directions = pick_rays(vertices, 1000, np.random.default_rng(9))
    scene.intersect(origins[:1], directions[:1])
    builds = scene.top_level_builds
    before = scene.object_rows()
    for ids, error, message in [([1, 2, 999], bvh.UnknownIdError, r"ids\[2\]: no object 999 in this scene"),
                                ([1, 5], bvh.UnknownIdError, r"ids\[1\]: no object 5 in this scene"),
                                ([-1], bvh.UnknownIdError, r"ids\[0\]: no object -1"),
                                ([3, 4, 3], ValueError, r"ids\[2\]: object 3 is given twice \(also ids\[0\]\)"),
                                ([[1, 2]], ValueError, "ids must be a 1-D list of integer object ids"),
                                ([1.0, 2.0], ValueError, "ids must be a 1-D list of integer object ids")]:
        with pytest.raises(error, match=message):
            scene.remove_many(ids)
        same_rows(scene.object_rows(), before)
    gone = np.array([0, 7, 72, 33, 64, 71])  # 72 is the ball; the brick (73) stays
    scene.remove_many(gone)
    for oid in gone.tolist():
        one_by_one.remove(oid)
    assert len(scene) == len(one_by_one) == 74 - 1 - gone.size
    same_rows(scene.object_rows(), one_by_one.object_rows())
    hits = scene.intersect(origins, directions)
    same_hits(hits, one_by_one.intersect(origins, directions))
    assert not np.isin(hits.object, gone).any() and hits.hit.any()
    assert scene.top_level_builds == builds + 1, "one change: one top-level build"
    with pytest.raises(bvh.UnknownIdError, match=r"ids\[1\]: no object 7"):
        scene.remove_many(np.array([1, 7], np.uint64))
    scene.remove_many([])
    assert len(scene) == 74 - 1 - gone.size
    # The shape left after the removals is still traced and selected by its own data.
    down = scene.intersect((0.0, 0.0, 10.0), (0.0, 0.0, -1.0), objects=[73])
    assert down.object[0] == 73 and down.t[0] == 9.75
    half = np.array([0.6, 1.1, 0.3])
    around_brick = np.concatenate([np.vstack([np.eye(3), -np.eye(3)]), np.tile(half, 2)[:, None]], axis=1)
    chosen = scene.select(around_brick, containment="window")
    assert 73 in chosen.object.tolist()
    assert np.array_equal(np.sort(chosen.object), np.sort(one_by_one.select(around_brick, containment="window").object))


def test_a_scene_placed_at_once_saves_and_opens(tmp_path):
    rng = np.random.default_rng(21)
    scene = bvh.Scene()
    meshes = three_meshes(scene)
    count = 5000
    transforms = np.stack([random_transform(rng, mirror=k % 5 == 0, scale_range=(0.1, 0.3), spread=60.0)
                           for k in range(count)])
    names = [f"part-{k}" if k % 2 else None for k in range(count)]
    scene.add_instances(meshes[rng.integers(0, 3, count)], transforms, names, rng.integers(1, 4, count))
    scene.remove_many(rng.choice(count, 500, replace=False))
    scene.add_instances(meshes[0], transforms[:100])
    scene.save(tmp_path / "many")
    opened = bvh.Scene.open(tmp_path / "many")
    assert len(opened) == len(scene) == count - 500 + 100
    same_rows(opened.object_rows(), scene.object_rows())
    origins, directions = pick_rays(transforms[:, :3, 3], 2000, rng, axis_aligned_fraction=0.1)
    hits = opened.intersect(origins, directions)
    same_hits(hits, scene.intersect(origins, directions))
    assert hits.hit.mean() > 0.02


def test_an_opened_scene_answers_from_its_saved_top_level(tmp_path, caplog):
    rng = np.random.default_rng(22)
    scene = bvh.Scene()
    meshes = three_meshes(scene)
    count = 3000
    transforms = np.stack([random_transform(rng, scale_range=(0.1, 0.3), spread=60.0) for _ in range(count)])
    scene.add_instances(meshes[rng.integers(0, 3, count)], transforms)
    origins, directions = pick_rays(transforms[:, :3, 3], 1500, rng, axis_aligned_fraction=0.1)
    scene.intersect(origins[:1], directions[:1])
    moved = rng.choice(count, 40, replace=False)
    scene.set_transforms(moved, transforms[moved] @ np.stack([random_transform(rng, spread=2.0) for _ in moved]))
    scene.save(tmp_path / "many")
    saved_nodes = scene._snapshot().top.nodes.copy()
    opened = bvh.Scene.open(tmp_path / "many")
    same_hits(opened.intersect(origins, directions), scene.intersect(origins, directions))
    assert opened.top_level_builds == 0, "the saved tree answers: none was built"
    assert np.array_equal(opened._snapshot().top.nodes.view(np.int32), saved_nodes.view(np.int32))

    # Moves between opening and the first query (a journal replayed): the saved tree follows them.
    again = bvh.Scene.open(tmp_path / "many")
    # Small moves: the tree stays well under REBUILD_RATIO, so no background build is taken meanwhile.
    step = transforms[moved[:25]].copy()
    step[:, :3, 3] += rng.uniform(-0.5, 0.5, (25, 3))
    for target in (scene, again):
        target.set_transforms(moved[:25], step)
    same_hits(again.intersect(origins, directions), scene.intersect(origins, directions))
    assert again.top_level_builds == 0

    # A tree that is not the objects' is not taken.
    arrays = {"top_nodes": saved_nodes, "top_order": opened._snapshot().top.order}
    table = opened._objects
    bounds = table.bounds[:table.count].copy()
    bounds[7] += 1.0
    with caplog.at_level("WARNING", logger="bvh"):
        assert saved_top_level(arrays, bounds, table.live()) is None
    assert "not the objects' boxes" in caplog.text
    assert saved_top_level({**arrays, "top_order": arrays["top_order"][1:]}, bounds, table.live()) is None
