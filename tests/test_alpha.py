"""Alpha-tested picking (issue 17): glTF MASK and BLEND materials let rays
through their transparent texels, for closest, any and all hits, checked
against the float64 brute force of testkit/reference/alpha.py on generated
GLB files whose rays aim at texel centres (half a texel from any border)."""

import numpy as np
import pytest

import bvh
from bvh import AlphaMaterial, MeshAlpha

from testkit.scenes.alpha import TEXELS, checker_card_scene, checkerboard, grid_rays, quad, tree_scene, write_glb
from testkit.reference.alpha import CLAMP_TO_EDGE, MIRRORED_REPEAT, REPEAT, closest_nodes, distinct_crossings, trace


def _load(glb: bytes):
    scene = bvh.load(glb, file_type="glb")
    nodes = {"card": 0, "tree": 0, "wall": 1, "tree2": 2}
    node_of_object = {info.id: nodes[info.name] for info in scene.objects}
    return scene, node_of_object


def _nodes(objects: np.ndarray, node_of_object: dict) -> np.ndarray:
    return np.array([node_of_object.get(int(o), -1) if o >= 0 else -1 for o in objects], np.int64)


def _check_against_reference(glb, truth, origins, directions, **options):
    scene, node_of_object = _load(glb)
    answers = trace(truth, origins, directions, alpha_test=options.get("alpha_test", True),
                    blend_cutoff=options.get("alpha_cutoff", 0.5))
    hits = scene.intersect(origins, directions, **options)
    np.testing.assert_array_equal(_nodes(hits.object, node_of_object), closest_nodes(answers))
    expected_t = np.array([crossings[0][0] if crossings else np.inf for crossings in answers])
    np.testing.assert_allclose(hits.t, expected_t, rtol=1e-6, atol=1e-6)
    occluded = scene.occluded(origins, directions, **options)
    np.testing.assert_array_equal(occluded, closest_nodes(answers) >= 0)
    every = scene.intersect_all(origins, directions, **options)
    np.testing.assert_array_equal(np.bincount(every.ray, minlength=origins.shape[0]), distinct_crossings(answers))
    return scene, hits, answers


def test_checkerboard_lets_rays_through_transparent_texels():
    glb, truth = checker_card_scene()
    origins, directions = grid_rays(0.0, 1.0, 0.0, 1.0)
    scene, hits, _ = _check_against_reference(glb, truth, origins, directions)
    # Texel (row, column) of a ray at (x, y): column floor(8x), row floor(8(1 - y)): row 0 is the image's top.
    column = np.floor(origins[:, 0] * TEXELS).astype(int)
    row = np.floor((1.0 - origins[:, 1]) * TEXELS).astype(int)
    opaque = checkerboard()[row, column] == 255
    card = next(info.id for info in scene.objects if info.name == "card")
    wall = next(info.id for info in scene.objects if info.name == "wall")
    assert opaque.sum() == 32
    np.testing.assert_array_equal(hits.object, np.where(opaque, card, wall))
    np.testing.assert_allclose(hits.t[opaque], 5.0)
    np.testing.assert_allclose(hits.t[~opaque], 6.0)


def test_alpha_test_off_hits_every_texel():
    glb, truth = checker_card_scene()
    origins, directions = grid_rays(0.0, 1.0, 0.0, 1.0)
    _, hits, _ = _check_against_reference(glb, truth, origins, directions, alpha_test=False)
    assert (hits.t < 5.5).all()


def test_at_the_cutoff_exactly_a_ray_hits():
    # glTF MASK: opaque where alpha >= alphaCutoff. Texels 127, 128, 129 against a cutoff of exactly 128 / 255.
    mask = np.full((TEXELS, TEXELS), 128, np.uint8)
    mask[:, :3] = 127
    mask[:, 5:] = 129
    glb, truth = checker_card_scene(cutoff=128 / 255, mask=mask)
    origins, directions = grid_rays(0.0, 1.0, 0.0, 1.0)
    _, hits, _ = _check_against_reference(glb, truth, origins, directions)
    column = np.floor(origins[:, 0] * TEXELS).astype(int)
    np.testing.assert_array_equal(hits.t < 5.5, column >= 3)


@pytest.mark.parametrize("wrap", [(REPEAT, REPEAT), (CLAMP_TO_EDGE, CLAMP_TO_EDGE),
                                  (MIRRORED_REPEAT, MIRRORED_REPEAT), (REPEAT, MIRRORED_REPEAT),
                                  (MIRRORED_REPEAT, CLAMP_TO_EDGE)])
def test_wrap_modes(wrap):
    # Texture coordinates from -1 to 2 over the card: three repeats of an asymmetric mask.
    mask = np.zeros((TEXELS, TEXELS), np.uint8)
    mask[np.triu_indices(TEXELS)] = 255
    mask[0, :3] = 0
    glb, truth = checker_card_scene(mask=mask, wrap=wrap, st=((-1.0, -1.0), (2.0, 2.0)))
    # The card is 24 texels across: rays through every one of them, on their centres.
    xs = (np.arange(3 * TEXELS) + 0.5) / (3 * TEXELS)
    gx, gy = np.meshgrid(xs, xs)
    origins = np.column_stack([gx.ravel(), gy.ravel(), np.full(gx.size, 5.0)])
    directions = np.tile([0.0, 0.0, -1.0], (origins.shape[0], 1))
    _, hits, _ = _check_against_reference(glb, truth, origins, directions)
    # Every wrap mode makes a different picture; each is also a picture of the mask.
    assert 0 < (hits.t < 5.5).sum() < origins.shape[0]


def test_blend_uses_the_query_cutoff():
    # Alpha rising by column: 0, 36, 73, ... 255.
    mask = np.tile(np.round(np.linspace(0, 255, TEXELS)).astype(np.uint8), (TEXELS, 1))
    glb, truth = checker_card_scene(mode="BLEND", mask=mask)
    origins, directions = grid_rays(0.0, 1.0, 0.0, 1.0)
    column = np.floor(origins[:, 0] * TEXELS).astype(int)
    for cutoff in (0.0, 0.25, 0.5, 0.75, 1.0):
        _, hits, _ = _check_against_reference(glb, truth, origins, directions, alpha_cutoff=cutoff)
        np.testing.assert_array_equal(hits.t < 5.5, mask[0, column] / 255.0 >= cutoff)
    _, default, _ = _check_against_reference(glb, truth, origins, directions)
    np.testing.assert_array_equal(default.t < 5.5, mask[0, column] / 255.0 >= 0.5)


def test_vertex_colour_alpha_multiplies():
    # No texture: alpha is baseColorFactor x COLOR_0's alpha, interpolated. Corners' alphas 0, 1, 1, 0
    # (bottom left, bottom right, top right, top left): alpha grows with x on both halves of the quad.
    colors = np.array([[1, 1, 1, 0.0], [1, 1, 1, 1.0], [1, 1, 1, 1.0], [1, 1, 1, 0.0]])
    glb, truth = checker_card_scene(mask=np.full((TEXELS, TEXELS), 255, np.uint8), colors=colors)
    origins, directions = grid_rays(0.0, 1.0, 0.0, 1.0)
    _, hits, _ = _check_against_reference(glb, truth, origins, directions)
    np.testing.assert_array_equal(hits.t < 5.5, origins[:, 0] > 0.5)


def test_tree_of_cards_against_the_reference():
    glb, truth = tree_scene()
    origins, directions = grid_rays(-1.0, 3.0, -1.0, 3.0)
    scene, hits, answers = _check_against_reference(glb, truth, origins, directions)
    # Some rays pass through leaves to the wall, some stop on them.
    tree = next(info.id for info in scene.objects if info.name == "tree")
    on_leaves = (hits.object == tree) & (hits.triangle >= 2)
    assert on_leaves.any() and (hits.object != tree).any()
    # The per-face materials of one mesh of several primitives: the trunk is opaque everywhere.
    assert scene.meshes[scene.object(tree).mesh].alpha_tested
    _check_against_reference(glb, truth, origins, directions, alpha_test=False)


def test_ray_window_and_mask_still_apply():
    glb, truth = checker_card_scene()
    scene, _ = _load(glb)
    origins, directions = grid_rays(0.0, 1.0, 0.0, 1.0)
    answers = trace(truth, origins, directions, tmax=5.5)
    np.testing.assert_array_equal(scene.occluded(origins, directions, tmax=5.5), closest_nodes(answers) >= 0)


def test_persistence_round_trip(tmp_path):
    glb, truth = tree_scene()
    scene, _ = _load(glb)
    origins, directions = grid_rays(-1.0, 3.0, -1.0, 3.0)
    before = scene.intersect(origins, directions)
    scene.save(tmp_path / "saved")
    opened = bvh.Scene.open(tmp_path / "saved")
    after = opened.intersect(origins, directions)
    np.testing.assert_array_equal(after.object, before.object)
    np.testing.assert_array_equal(after.t, before.t)
    pack = opened._meshes.committed()
    # The masks are memory-mapped from the scene's files, like the rest of the pack.
    assert isinstance(pack.alpha_texels, np.memmap) or isinstance(pack.alpha_texels.base, np.memmap)
    assert pack.alpha_texels.dtype == np.uint8 and pack.alpha_texels.size == 6 * TEXELS * TEXELS
    # A copy into another scene keeps the materials.
    copy = bvh.Scene()
    copy.add_scene(opened)
    np.testing.assert_array_equal(copy.intersect(origins, directions).t, before.t)


def test_scene_saved_before_alpha_opens(tmp_path):
    from bvh.scene.mesh_pack import ALPHA_ARRAY_NAMES
    from bvh.io.persistence import read_arrays, write_arrays

    glb, _ = checker_card_scene()
    scene, _ = _load(glb)
    scene.save(tmp_path / "new")
    metadata, arrays = read_arrays(tmp_path / "new")
    old = {name: np.array(value) for name, value in arrays.items() if name not in ALPHA_ARRAY_NAMES}
    write_arrays(tmp_path / "old", old, metadata)
    opened = bvh.Scene.open(tmp_path / "old")
    origins, directions = grid_rays(0.0, 1.0, 0.0, 1.0)
    np.testing.assert_allclose(opened.intersect(origins, directions).t, 5.0)
    assert not any(mesh.alpha_tested for mesh in opened.meshes)


def test_damaged_alpha_arrays_are_refused(tmp_path):
    from bvh.io.persistence import read_arrays, write_arrays

    glb, _ = checker_card_scene()
    scene, _ = _load(glb)
    scene.save(tmp_path / "saved")
    metadata, arrays = read_arrays(tmp_path / "saved")
    arrays = {name: np.array(value) for name, value in arrays.items()}
    arrays["alpha_materials"][0, 3] = 10 ** 6
    write_arrays(tmp_path / "damaged", arrays, metadata)
    with pytest.raises(ValueError, match="mask lies outside alpha_texels"):
        bvh.Scene.open(tmp_path / "damaged")


def test_add_mesh_with_alpha_directly():
    card = quad(0.0, 0.0, 0.0)
    scene = bvh.Scene()
    mask = checkerboard()
    alpha = MeshAlpha([AlphaMaterial("MASK", mask=mask)], np.zeros(2, int), card["texcoords"][0])
    scene.add_instance(scene.add_mesh(card["positions"], card["indices"], alpha=alpha))
    origins, directions = grid_rays(0.0, 1.0, 0.0, 1.0)
    hits = scene.intersect(origins, directions)
    assert (hits.object >= 0).sum() == 32
    # The same geometry without alpha is another mesh, not the one added before.
    assert scene.add_mesh(card["positions"], card["indices"]) == 1


@pytest.mark.parametrize("alpha, message", [
    (MeshAlpha([AlphaMaterial("CUT")], np.zeros(2, int)), "mode must be OPAQUE, MASK or BLEND"),
    (MeshAlpha([AlphaMaterial("MASK", factor=2.0)], np.zeros(2, int)), r"factor must be a number in \[0, 1\]"),
    (MeshAlpha([AlphaMaterial("MASK", cutoff=-0.5)], np.zeros(2, int)), "cutoff must be a finite number >= 0"),
    (MeshAlpha([AlphaMaterial("MASK", mask=np.zeros((2, 2)))], np.zeros(2, int), np.zeros((4, 2))),
     "mask must hold uint8"),
    (MeshAlpha([AlphaMaterial("MASK", mask=np.zeros((2, 2), np.uint8))], np.zeros(2, int)),
     "texcoords are required"),
    (MeshAlpha([AlphaMaterial("MASK")], np.array([0, 1])), "face_material must index the 1 materials"),
    (MeshAlpha([AlphaMaterial("MASK")], np.zeros(3, int)), r"face_material must be \(2,\) integers"),
    (MeshAlpha([AlphaMaterial("MASK", wrap_s="TILE")], np.zeros(2, int)), "wrap_s must be REPEAT"),
    (MeshAlpha([AlphaMaterial("MASK")], np.zeros(2, int), vertex_alpha=np.full(4, 1.5)),
     r"vertex_alpha must lie in \[0, 1\]"),
])
def test_malformed_alpha_is_refused(alpha, message):
    card = quad(0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match=message):
        bvh.Scene().add_mesh(card["positions"], card["indices"], alpha=alpha)


@pytest.mark.parametrize("options, message", [
    ({"alpha_cutoff": 1.5}, r"alpha_cutoff must be a number in \[0, 1\]"),
    ({"alpha_cutoff": "half"}, r"alpha_cutoff must be a number in \[0, 1\]"),
    ({"alpha_test": "yes"}, "alpha_test must be True or False"),
])
def test_bad_query_options_are_refused(options, message):
    glb, _ = checker_card_scene()
    scene, _ = _load(glb)
    origins, directions = grid_rays(0.0, 1.0, 0.0, 1.0)
    for query in (scene.intersect, scene.occluded, scene.intersect_all):
        with pytest.raises(ValueError, match=message):
            query(origins, directions, **options)


def test_texcoord_set_and_opaque_materials_from_gltf():
    # The mask is read at TEXCOORD_1 (the texture's texCoord); TEXCOORD_0 would pick other texels.
    card = quad(0.0, 0.0, 0.0, st=((0.0, 0.0), (1.0, 1.0)))
    card["texcoords"][1] = card["texcoords"][0][:, ::-1].copy()
    card["material"] = 0
    opaque = quad(2.0, 0.0, 0.0)
    opaque["material"] = 1
    mask = np.zeros((TEXELS, TEXELS), np.uint8)
    mask[:, :TEXELS // 2] = 255
    glb = write_glb([[card], [opaque]], [{"alphaMode": "MASK", "mask": mask, "texCoord": 1},
                                         {"alphaMode": "OPAQUE", "mask": np.zeros((2, 2), np.uint8)}],
                    [{"mesh": 0, "name": "card"}, {"mesh": 1, "name": "opaque"}])
    scene = bvh.load(glb, file_type="glb")
    origins, directions = grid_rays(0.0, 3.0, 0.0, 1.0)
    hits = scene.intersect(origins, directions)
    on_card = origins[:, 0] < 1.0
    # TEXCOORD_1 swaps s and t: the mask's left half is the card's top half (t < 0.5 is y > 0.5).
    np.testing.assert_array_equal(hits.object[on_card] >= 0, origins[on_card, 1] > 0.5)
    # OPAQUE ignores its texture's alpha; the gap between the cards is a miss.
    np.testing.assert_array_equal(hits.object[origins[:, 0] > 2.0] >= 0, True)
    tested = {info.name: scene.meshes[info.mesh].alpha_tested for info in scene.objects}
    assert tested == {"card": True, "opaque": False}


def test_a_texture_set_the_primitive_lacks_is_refused_by_name():
    card = quad(0.0, 0.0, 0.0)
    card["material"] = 0
    glb = write_glb([[card]], [{"alphaMode": "MASK", "mask": checkerboard(), "texCoord": 1}], [{"mesh": 0}])
    with pytest.raises(ValueError, match="could not read the alpha of this GLB file's materials: material 0's "
                                         "baseColorTexture reads TEXCOORD_1, which a primitive of mesh 0 does "
                                         "not have"):
        bvh.load(glb, file_type="glb")


def test_geometries_that_do_not_line_up_are_read_without_alpha(caplog):
    import json
    import struct

    from bvh.io.gltf_materials import GltfFile

    glb, _ = checker_card_scene()
    (length,) = struct.unpack_from("<I", glb, 12)
    document = json.loads(glb[20:20 + length])
    geometries = [type("Geometry", (), {"vertices": np.zeros((3, 3)), "metadata": {}})()]
    GltfFile(document, glb).tag_geometries(geometries)
    assert "bvh_alpha" not in geometries[0].metadata
    assert "do not line up with the file's 2 primitives" in caplog.text
