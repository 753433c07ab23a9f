"""The alpha-tested walks' tighter boxes (bvh.builders.alpha_bounds): each face's
rectangle holds every texel that may pass, checked by sampling the face
densely in Python; the boxes change which nodes a ray enters, never what it
hits (the same answers as the ordinary boxes, on rays aimed at texel
borders as well as at random); a query the rectangles do not bound (a BLEND
cutoff of 0, alpha_test=False) walks the ordinary boxes; a scene saved
before the rectangles opens with them."""

import logging

import numpy as np
import pytest

import bvh
from bvh import AlphaMaterial, MeshAlpha
from bvh.queries.alpha import CLAMP_TO_EDGE, MIRRORED_REPEAT, REPEAT, S_LO
from bvh.builders.alpha_bounds import opaque_rects, tight_nodes
from bvh.io.materials import pack_mesh_alpha
from bvh.walk.nodes import EMPTY_MIN, MAX_X, MIN_X

from testkit.scenes.alpha import foliage, leaf_mask
from testkit.reference.alpha import wrapped


def _rect_of(material: AlphaMaterial, texcoords, vertex_alpha=None) -> np.ndarray:
    """The rectangle of one triangle (corners 0, 1, 2) of ``material``."""
    faces = np.array([[0, 1, 2]])
    packed = pack_mesh_alpha(MeshAlpha([material], np.zeros(1, int), np.asarray(texcoords, np.float64),
                                       vertex_alpha), 3, faces)
    return packed.faces[0, S_LO:].astype(np.float64)


def _may_pass(material: AlphaMaterial, texcoords, u, v, alphas) -> np.ndarray:
    """Whether a hit at each ``(u, v)`` passes under any cutoff the rectangle
    must allow: MASK's own, BLEND's any above zero (written again from bvh.queries.alpha's notes)."""
    st = np.asarray(texcoords, np.float32).astype(np.float64)
    w = 1.0 - u - v
    s = w * st[0, 0] + u * st[1, 0] + v * st[2, 0]
    t = w * st[0, 1] + u * st[1, 1] + v * st[2, 1]
    height, width = material.mask.shape
    modes = {"REPEAT": REPEAT, "CLAMP_TO_EDGE": CLAMP_TO_EDGE, "MIRRORED_REPEAT": MIRRORED_REPEAT}
    column = np.array([wrapped(int(np.floor(x * width)), width, modes[material.wrap_s]) for x in s])
    row = np.array([wrapped(int(np.floor(y * height)), height, modes[material.wrap_t]) for y in t])
    alpha = material.mask[row, column] / 255.0 * material.factor * (w * alphas[0] + u * alphas[1] + v * alphas[2])
    passes = alpha > 0.0 if material.mode == "BLEND" else alpha >= material.cutoff
    return passes, s, t


@pytest.mark.parametrize("mode, wrap, seed", [("MASK", "REPEAT", 1), ("MASK", "MIRRORED_REPEAT", 2),
                                              ("MASK", "CLAMP_TO_EDGE", 3), ("BLEND", "REPEAT", 4)])
def test_every_hit_that_may_pass_lies_in_its_rectangle(mode, wrap, seed):
    rng = np.random.default_rng(seed)
    mask = leaf_mask(seed, 16)
    material = AlphaMaterial(mode, cutoff=0.5, factor=0.9, mask=mask, wrap_s=wrap, wrap_t=wrap)
    inside_somewhere = 0
    for _ in range(20):
        # Texture triangles of every size, some reaching outside [0, 1] to wrap.
        texcoords = rng.uniform(-0.7, 1.7, (3, 2)) * rng.choice([0.1, 0.5, 1.0])
        alphas = rng.uniform(0.5, 1.0, 3)
        rect = _rect_of(material, texcoords, alphas)
        u, v = rng.random((2, 20_000))
        flip = u + v > 1.0
        u[flip], v[flip] = 1.0 - u[flip], 1.0 - v[flip]
        passes, s, t = _may_pass(material, texcoords, u, v, alphas)
        inside = (s >= rect[0]) & (s <= rect[2]) & (t >= rect[1]) & (t <= rect[3])
        assert inside[passes].all()
        inside_somewhere += int(passes.any())
    assert inside_somewhere > 0


def test_the_rectangle_is_the_opaque_texels_and_half_a_texel():
    mask = np.zeros((8, 8), np.uint8)
    mask[3, 5] = 255
    # A triangle covering the whole image (clamped beyond it): only texel (row 3, column 5) may pass.
    clamped = AlphaMaterial("MASK", mask=mask, wrap_s="CLAMP_TO_EDGE", wrap_t="CLAMP_TO_EDGE")
    rect = _rect_of(clamped, [[0.0, 0.0], [2.0, 0.0], [0.0, 2.0]])
    np.testing.assert_allclose(rect, [4.5 / 8, 2.5 / 8, 6.5 / 8, 4.5 / 8], rtol=1e-6)
    # A triangle of the image that does not reach the texel: nothing passes.
    rect = _rect_of(AlphaMaterial("MASK", mask=mask), [[0.0, 0.0], [0.5, 0.0], [0.0, 0.5]])
    assert rect[0] > rect[2]
    # Below the cutoff everywhere (factor), and an opaque face's whole triangle.
    assert _rect_of(AlphaMaterial("MASK", factor=0.4, mask=mask), [[0, 0], [1, 0], [0, 1]])[0] > 0.5
    whole = _rect_of(AlphaMaterial("MASK", mask=np.full((8, 8), 255, np.uint8)), [[0, 0], [1, 0], [0, 1]])
    np.testing.assert_array_equal(whole, [0.0, 0.0, 1.0, 1.0])


def test_rects_of_faces_without_texture_or_too_many_texels_keep_the_triangle():
    rects = opaque_rects(np.array([[0, 0, 1e6, 0, 0, 1e6, 1, 1, 1]], np.float32), np.zeros(1, np.int32),
                         np.array([[1, 0.5, 1.0, 0, 8, 8, REPEAT, REPEAT]]), np.zeros(64, np.uint8))
    np.testing.assert_array_equal(rects[0], [0.0, 0.0, 1e6, 1e6])
    no_texture = np.array([[1, 0.5, 1.0, 0, 0, 0, REPEAT, REPEAT], [1, 0.5, 0.2, 0, 0, 0, REPEAT, REPEAT]])
    faces = np.array([[0, 0, 1, 0, 0, 1, 1, 1, 1]] * 2, np.float32)
    rects = opaque_rects(faces, np.array([0, 1], np.int32), no_texture, np.zeros(0, np.uint8))
    np.testing.assert_array_equal(rects[0], [0.0, 0.0, 1.0, 1.0])
    assert rects[1, 0] > rects[1, 2]


def _foliage(cards: int, seed: int, mode: str = "MASK"):
    """A crown of ``cards`` randomly turned leaf cards over an opaque ground."""
    return foliage(cards, seed, masks=4, texels=16, spread=2.0, ground=(-5.0, -5.0, -3.0, 10.0), mode=mode)


def _rays_at_texel_borders(vertices, faces, rng, count):
    """Rays from random directions through points of the cards whose texture
    coordinates lie on texel borders (the 16-texel grid), where a box one
    texel too tight would show."""
    card = rng.integers(0, (faces.shape[0] - 2) // 2, count)
    s = rng.integers(0, 17, count) / 16.0
    t = rng.random(count)
    swap = rng.random(count) < 0.5
    s[swap], t[swap] = t[swap], s[swap]
    # quad(): corners (x0, y0), (x1, y0), (x1, y1), (x0, y1); texture (0, 1), (1, 1), (1, 0), (0, 0).
    corners = vertices[4 * card[:, None] + np.arange(4)]
    x = corners[:, 0] + s[:, None] * (corners[:, 1] - corners[:, 0])
    targets = x + (1.0 - t)[:, None] * (corners[:, 3] - corners[:, 0])
    directions = rng.normal(size=(count, 3))
    return targets - 8.0 * directions, directions


def _ordinary(scene):
    """Queries of ``scene`` after this walk the ordinary boxes with alpha tested."""
    snap = scene._snapshot()
    snap.tight_nodes = scene._meshes.committed().nodes


def test_tighter_boxes_change_no_answer():
    vertices, faces, alpha = _foliage(60, seed=11)
    scene = bvh.Scene()
    scene.add_instance(scene.add_mesh(vertices, faces, alpha=alpha))
    twin = bvh.Scene()
    twin.add_instance(twin.add_mesh(vertices, faces, alpha=alpha))
    _ordinary(twin)
    rng = np.random.default_rng(5)
    border_origins, border_directions = _rays_at_texel_borders(vertices, faces, rng, 20_000)
    directions = rng.normal(size=(20_000, 3))
    origins = -6.0 * directions / np.linalg.norm(directions, axis=1, keepdims=True) + rng.uniform(-1, 1, (20_000, 3))
    origins = np.concatenate([border_origins, origins])
    directions = np.concatenate([border_directions, directions])
    tight, ordinary = scene.intersect(origins, directions), twin.intersect(origins, directions)
    np.testing.assert_array_equal(tight.t, ordinary.t)
    np.testing.assert_array_equal(tight.object, ordinary.object)
    # Both halves of a card meet at its diagonal: a tie may name either triangle.
    same = tight.triangle == ordinary.triangle
    assert same.mean() > 0.999
    np.testing.assert_array_equal(scene.occluded(origins, directions), twin.occluded(origins, directions))
    every, every_twin = scene.intersect_all(origins, directions), twin.intersect_all(origins, directions)
    np.testing.assert_array_equal(every.ray, every_twin.ray)
    np.testing.assert_array_equal(every.t, every_twin.t)
    # Many of those rays see through a leaf: the boxes were put to the test.
    stripped = bvh.Scene()
    stripped.add_instance(stripped.add_mesh(vertices, faces))
    assert (tight.t > stripped.intersect(origins, directions).t).mean() > 0.1


def test_tighter_boxes_leave_out_transparent_corners():
    vertices, faces, alpha = _foliage(60, seed=11)
    scene = bvh.Scene()
    scene.add_instance(scene.add_mesh(vertices, faces, alpha=alpha))
    pack = scene._meshes.committed()
    tight = tight_nodes(pack)
    used = pack.nodes[:, MIN_X:MIN_X + 4] != EMPTY_MIN
    ordinary_extent = (pack.nodes[:, MAX_X:MAX_X + 4] - pack.nodes[:, MIN_X:MIN_X + 4])[used]
    tight_extent = (tight[:, MAX_X:MAX_X + 4] - tight[:, MIN_X:MIN_X + 4])[used]
    # Never larger, and smaller somewhere.
    assert (tight_extent <= ordinary_extent).all() and (tight_extent < ordinary_extent).mean() > 0.3


def test_alpha_test_off_and_blend_at_cutoff_zero_walk_the_whole_triangles():
    vertices, faces, alpha = _foliage(40, seed=3, mode="BLEND")
    scene = bvh.Scene()
    scene.add_instance(scene.add_mesh(vertices, faces, alpha=alpha))
    stripped = bvh.Scene()
    stripped.add_instance(stripped.add_mesh(vertices, faces))
    rng = np.random.default_rng(8)
    origins, directions = _rays_at_texel_borders(vertices, faces, rng, 10_000)
    expected = stripped.intersect(origins, directions)
    for options in ({"alpha_test": False}, {"alpha_cutoff": 0.0}):
        hits = scene.intersect(origins, directions, **options)
        np.testing.assert_array_equal(hits.t, expected.t)
        np.testing.assert_array_equal(hits.object, expected.object)
    # And a cutoff above zero lets rays through the transparent texels.
    assert (scene.intersect(origins, directions, alpha_cutoff=0.5).t > expected.t).any()


def test_a_refitted_alpha_mesh_gets_new_tighter_boxes():
    vertices, faces, alpha = _foliage(30, seed=4)
    scene = bvh.Scene()
    mesh = scene.add_mesh(vertices, faces, alpha=alpha)
    scene.add_instance(mesh)
    moved = vertices + np.random.default_rng(1).normal(scale=0.3, size=vertices.shape)
    scene.update_mesh(mesh, moved)
    fresh = bvh.Scene()
    fresh.add_instance(fresh.add_mesh(moved, faces, alpha=alpha))
    rng = np.random.default_rng(2)
    origins, directions = _rays_at_texel_borders(moved, faces, rng, 10_000)
    np.testing.assert_array_equal(scene.intersect(origins, directions).t, fresh.intersect(origins, directions).t)


def test_scene_saved_before_the_rectangles_opens_with_them(tmp_path, caplog):
    from bvh.io.persistence import read_arrays, write_arrays

    vertices, faces, alpha = _foliage(30, seed=6)
    scene = bvh.Scene()
    scene.add_instance(scene.add_mesh(vertices, faces, alpha=alpha))
    scene.save(tmp_path / "new")
    metadata, arrays = read_arrays(tmp_path / "new")
    arrays = {name: np.array(value) for name, value in arrays.items()}
    arrays["alpha_faces"] = np.ascontiguousarray(arrays["alpha_faces"][:, :S_LO])
    write_arrays(tmp_path / "old", arrays, metadata)
    with caplog.at_level(logging.INFO, logger="bvh"):
        opened = bvh.Scene.open(tmp_path / "old")
    assert "saved without the alpha-tested faces' rectangles" in caplog.text
    np.testing.assert_array_equal(opened._meshes.committed().alpha_faces, scene._meshes.committed().alpha_faces)
    rng = np.random.default_rng(3)
    origins, directions = _rays_at_texel_borders(vertices, faces, rng, 5_000)
    np.testing.assert_array_equal(opened.intersect(origins, directions).t, scene.intersect(origins, directions).t)
    # The next save writes the rectangles.
    opened.save(tmp_path / "again")
    assert read_arrays(tmp_path / "again")[1]["alpha_faces"].shape[1] == S_LO + 4
    # A damaged old save is refused as damaged, before any texel is read.
    arrays["alpha_materials"][0, 3] = 10 ** 6
    write_arrays(tmp_path / "damaged", arrays, metadata)
    with pytest.raises(ValueError, match="is damaged: an alpha material's mask lies outside alpha_texels"):
        bvh.Scene.open(tmp_path / "damaged")
