"""Scene.update_mesh: a mesh's vertices move, every instance follows, the
tree is refitted and rebuilt in the background once refits have made it too
costly; and scenes saved before the four-wide trees (format 1) still open."""

import json
import logging
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

import bvh
from bvh.scene.top_level import REBUILD_RATIO

from testkit.meshes import pick_rays, sample_mesh
from testkit.reference.raycast import closest_hits
from .test_scene import flatten, random_transform

DATA = Path(__file__).parent / "data"


def _scene_with_instances(seed=0):
    rng = np.random.default_rng(seed)
    scene = bvh.Scene()
    torus = scene.add_mesh(*sample_mesh("torus.ply"), name="torus")
    gear = scene.add_mesh(*sample_mesh("gear.stl"), name="gear")
    for k in range(12):
        scene.add_instance(torus if k % 2 else gear, random_transform(rng, mirror=k % 3 == 0), name=f"o{k}")
    scene.add_shape("sphere", random_transform(rng), radius=0.5)
    return scene, torus, gear


def assert_agrees_with_flattened_reference(scene, rays=1500, seed=1):
    vertices, faces, owner, local_face = flatten(scene)
    origins, directions = pick_rays(vertices, rays, np.random.default_rng(seed))
    hits = scene.intersect(origins, directions)
    ref_triangle, ref_t, _, _, edge = closest_hits(vertices, faces, origins, directions)
    shape_hit = hits.hit & (hits.mesh < 0)
    meshes_only = ~shape_hit
    agree = (hits.hit == (ref_triangle >= 0))[meshes_only]
    assert agree.mean() >= 0.999
    assert (np.abs(edge[meshes_only][~agree]) < 1e-6).all()
    both = np.flatnonzero(hits.hit & (ref_triangle >= 0) & meshes_only)
    assert np.mean(hits.object[both] == owner[ref_triangle[both]]) >= 0.999
    np.testing.assert_allclose(hits.t[both], ref_t[both], rtol=1e-5, atol=1e-6)


def _wobbled(vertices, amount, seed):
    rng = np.random.default_rng(seed)
    size = np.linalg.norm(vertices.max(axis=0) - vertices.min(axis=0))
    return vertices + rng.normal(size=vertices.shape) * amount * size


@pytest.mark.parametrize("amount", [0.002, 0.05])
def test_every_instance_follows_a_refit_and_agrees_with_the_brute_force(amount):
    scene, torus, _ = _scene_with_instances()
    moved = _wobbled(scene.mesh_vertices(torus), amount, seed=2)
    scene.update_mesh(torus, moved)
    assert np.array_equal(scene.mesh_vertices(torus), moved)
    assert scene.wait_for_rebuilds(timeout=120)
    assert_agrees_with_flattened_reference(scene)
    # Objects' boxes follow their mesh: they hold every moved vertex, and an
    # unturned instance's box is the moved vertices' box exactly.
    for info in scene.objects:
        if info.kind == "mesh" and info.mesh == torus:
            corners = moved @ info.transform[:3, :3].T + info.transform[:3, 3]
            slack = 1e-9 * np.abs(corners).max()
            assert np.all(info.bounds[0] <= corners.min(axis=0) + slack)
            assert np.all(info.bounds[1] >= corners.max(axis=0) - slack)
    still = scene.object(scene.add_instance(torus))
    np.testing.assert_array_equal(still.bounds, [moved.min(axis=0), moved.max(axis=0)])


def test_refit_scene_agrees_with_a_scene_built_from_the_moved_vertices_on_every_ray():
    scene, torus, gear = _scene_with_instances(seed=3)
    vertices, faces = sample_mesh("torus.ply")
    moved = _wobbled(vertices, 0.01, seed=4)
    scene.update_mesh(torus, moved)
    fresh = bvh.Scene()
    fresh_torus = fresh.add_mesh(moved, faces)
    fresh_gear = fresh.add_mesh(*sample_mesh("gear.stl"))
    for info in scene.objects:
        if info.kind == "mesh":
            fresh.add_instance(fresh_torus if info.mesh == torus else fresh_gear, info.transform)
        else:
            fresh.add_shape(info.kind, info.transform, **info.params)
    flat_vertices, _, _, _ = flatten(fresh)
    origins, directions = pick_rays(flat_vertices, 3000, np.random.default_rng(5))
    ours, theirs = scene.intersect(origins, directions), fresh.intersect(origins, directions)
    np.testing.assert_array_equal(ours.object, theirs.object)
    np.testing.assert_allclose(ours.t[ours.hit], theirs.t[ours.hit], rtol=1e-9)


def test_a_large_deformation_triggers_a_background_rebuild_and_the_answers_stay_right(caplog):
    scene, torus, _ = _scene_with_instances(seed=6)
    vertices = scene.mesh_vertices(torus)
    # Scramble positions a lot while keeping every face non-degenerate: each
    # leaf's triangles spread over the whole mesh and the boxes overlap.
    rng = np.random.default_rng(7)
    moved = vertices + rng.uniform(-1.0, 1.0, size=vertices.shape) * np.ptp(vertices, axis=0)
    with caplog.at_level(logging.INFO, logger="bvh"):
        scene.update_mesh(torus, moved)
        ratio = scene.mesh_cost_ratio(torus)
        assert ratio > REBUILD_RATIO
        assert scene.wait_for_rebuilds(timeout=120)
    assert scene.mesh_cost_ratio(torus) == 1.0
    assert any("rebuilt" in record.getMessage() for record in caplog.records)
    assert np.array_equal(scene.mesh_vertices(torus), moved)
    assert_agrees_with_flattened_reference(scene)


def test_small_refits_do_not_rebuild():
    scene, torus, _ = _scene_with_instances(seed=8)
    scene.update_mesh(torus, _wobbled(scene.mesh_vertices(torus), 0.001, seed=9))
    assert 0.9 < scene.mesh_cost_ratio(torus) < REBUILD_RATIO
    assert scene.wait_for_rebuilds(timeout=0)


def test_update_mesh_refuses_bad_input_and_keeps_the_mesh():
    scene, torus, _ = _scene_with_instances(seed=10)
    before = scene.mesh_vertices(torus).copy()
    with pytest.raises(bvh.UnknownIdError, match="no mesh 7 in this scene"):
        scene.update_mesh(7, before)
    with pytest.raises(ValueError, match=r"refit needs the mesh's \d+ vertices, got 3"):
        scene.update_mesh(torus, before[:3])
    bad = before.copy()
    bad[5, 1] = np.nan
    with pytest.raises(ValueError, match=r"vertices contain NaN or infinite values \(first at row 5\)"):
        scene.update_mesh(torus, bad)
    faces = scene.mesh_faces(torus)
    collapsed = before.copy()
    collapsed[faces[0]] = before[faces[0][0]]
    with pytest.raises(ValueError, match="refit cannot change which faces are zero-area"):
        scene.update_mesh(torus, collapsed)
    assert np.array_equal(scene.mesh_vertices(torus), before)
    assert_agrees_with_flattened_reference(scene, rays=300)


def test_adding_the_original_arrays_after_a_refit_is_a_new_mesh():
    scene, torus, _ = _scene_with_instances(seed=11)
    vertices, faces = sample_mesh("torus.ply")
    scene.update_mesh(torus, vertices + 1.0)
    again = scene.add_mesh(vertices, faces)
    assert again != torus
    assert np.array_equal(scene.mesh_vertices(again), vertices)


def test_a_refit_is_saved_and_reopened(tmp_path):
    scene, torus, _ = _scene_with_instances(seed=12)
    scene.save(tmp_path / "s")
    moved = _wobbled(scene.mesh_vertices(torus), 0.01, seed=13)
    scene.update_mesh(torus, moved)
    scene.save(tmp_path / "s")
    reopened = bvh.Scene.open(tmp_path / "s")
    assert np.array_equal(reopened.mesh_vertices(torus), moved)
    vertices, _, _, _ = flatten(scene)
    origins, directions = pick_rays(vertices, 500, np.random.default_rng(14))
    a, b = scene.intersect(origins, directions), reopened.intersect(origins, directions)
    np.testing.assert_array_equal(a.object, b.object)
    np.testing.assert_array_equal(a.t, b.t)


def test_picks_during_refits_see_the_old_or_the_new_mesh_never_a_mix():
    # Two exact poses of one mesh, far apart: every hit must match one pose's
    # answer entirely, whatever refit runs meanwhile.
    scene = bvh.Scene()
    vertices, faces = sample_mesh("torus.ply")
    mesh = scene.add_mesh(vertices, faces)
    scene.add_instance(mesh)
    poses = [vertices, vertices * 1.5]
    origins, directions = pick_rays(vertices, 200, np.random.default_rng(15))
    answers = []
    for pose in poses:
        reference = bvh.Scene()
        reference.add_instance(reference.add_mesh(pose, faces))
        answers.append(reference.intersect(origins, directions).t)
    stop = threading.Event()
    seen = []

    def pick():
        while not stop.is_set():
            seen.append(scene.intersect(origins, directions).t)

    picker = threading.Thread(target=pick)
    picker.start()
    try:
        for k in range(30):
            scene.update_mesh(mesh, poses[k % 2])
    finally:
        stop.set()
        picker.join()
    assert seen
    for t in seen:
        assert any(np.array_equal(t, answer) for answer in answers)


def test_a_format_1_scene_opens_rebuilt_with_a_log_line_and_saves_as_format_2(tmp_path, caplog):
    directory = tmp_path / "old"
    shutil.copytree(DATA / "scene_format_v1", directory)
    with caplog.at_level(logging.INFO, logger="bvh"):
        scene = bvh.Scene.open(directory)
    assert any("format version 1" in r.getMessage() and "rebuilt" in r.getMessage() for r in caplog.records)
    assert [m.name for m in scene.meshes] == ["icosphere", "box"]
    assert [o.name for o in scene.objects] == ["ball", "ball2", "crate", "probe"]
    expected = json.loads((DATA / "scene_format_v1_picks.json").read_text())
    hits = scene.intersect(np.array(expected["origins"]), np.array(expected["directions"]))
    assert hits.object.tolist() == expected["object"]
    assert hits.triangle.tolist() == expected["triangle"]
    hit = hits.hit
    np.testing.assert_allclose(hits.t[hit], np.array(expected["t"], dtype=float)[hit], rtol=1e-9)
    scene.save(directory)
    assert json.loads((directory / "manifest.json").read_text())["version"] == 2
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="bvh"):
        again = bvh.Scene.open(directory)
    assert not any("rebuilt" in r.getMessage() for r in caplog.records)
    assert again.intersect(np.array(expected["origins"]), np.array(expected["directions"])).object.tolist() \
        == expected["object"]
