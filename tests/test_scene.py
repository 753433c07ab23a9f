"""bvh.Scene against a flattened reference: every transform applied, every
mesh concatenated, every ray tested against every triangle in float64."""

import threading

import numpy as np
import pytest
import trimesh

import bvh
from bvh import primitives

from .meshes import pick_rays, sample_mesh
from .reference_raycast import all_hit_distances, closest_hits


def random_transform(rng, mirror=False, scale_range=(0.5, 2.0), spread=6.0):
    """A random rotation, non-uniform scale (mirrored on one axis if asked) and translation."""
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    scale = rng.uniform(*scale_range, size=3)
    if mirror:
        scale[rng.integers(3)] *= -1.0
    matrix = np.eye(4)
    matrix[:3, :3] = q @ np.diag(scale)
    matrix[:3, 3] = rng.uniform(-spread, spread, size=3)
    return matrix


def flatten(scene):
    """World vertices and faces of every mesh object, with the object and
    face each flattened triangle came from. Mirrored instances get their
    winding reversed, so the flattened normal is the scene's outward normal."""
    vertices, faces, owner, local_face, base = [], [], [], [], 0
    for info in scene.objects:
        if info.kind != "mesh" or not info.pickable:
            continue
        v = scene.mesh_vertices(info.mesh) @ info.transform[:3, :3].T + info.transform[:3, 3]
        f = scene.mesh_faces(info.mesh)
        if np.linalg.det(info.transform[:3, :3]) < 0:
            f = f[:, ::-1]
        vertices.append(v)
        faces.append(f + base)
        owner.append(np.full(len(f), info.id))
        local_face.append(np.arange(len(f)))
        base += len(v)
    return np.concatenate(vertices), np.concatenate(faces), np.concatenate(owner), np.concatenate(local_face)


def reference_normals(vertices, faces, triangle):
    corners = vertices[faces[triangle]]
    n = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    return n / np.linalg.norm(n, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def sixty_instances():
    """60 instances of three sample meshes, a third of them mirrored, all
    rotated and non-uniformly scaled."""
    rng = np.random.default_rng(7)
    scene = bvh.Scene()
    meshes = [scene.add_mesh(*sample_mesh(name), name=name)
              for name in ("torus.ply", "gear.stl", "capsule_quads.obj")]
    for k in range(60):
        scene.add_instance(meshes[k % 3], random_transform(rng, mirror=k % 3 == 1), name=f"item{k}")
    return scene


def test_sixty_instances_agree_with_the_flattened_reference(sixty_instances):
    scene = sixty_instances
    vertices, faces, owner, local_face = flatten(scene)
    rng = np.random.default_rng(1)
    origins, directions = pick_rays(vertices, 2000, rng, axis_aligned_fraction=0.1)
    hits = scene.intersect(origins, directions)
    ref_triangle, ref_t, _, _, edge = closest_hits(vertices, faces, origins, directions)
    ref_hit = ref_triangle >= 0
    assert ref_hit.mean() > 0.3
    agree = hits.hit == ref_hit
    assert agree.mean() >= 0.999
    assert (np.abs(edge[~agree]) < 1e-6).all()
    both = hits.hit & ref_hit
    same_object = hits.object[both] == owner[ref_triangle[both]]
    assert same_object.mean() >= 0.999
    same = np.flatnonzero(both)[same_object]
    ref_normal = reference_normals(vertices, faces, ref_triangle[same])
    assert np.abs(hits.normal[same] - ref_normal).max() <= 1e-3
    assert np.allclose(hits.t[same], ref_t[same], rtol=1e-5, atol=1e-6)
    exact = same[hits.triangle[same] == local_face[ref_triangle[same]]]
    assert exact.size >= 0.99 * same.size
    assert np.allclose(hits.point[same], origins[same] + ref_t[same, None] * directions[same], atol=1e-4)
    # front_face follows the world normal: direction . normal < 0.
    assert np.array_equal(hits.front_face[same], (directions[same] * hits.normal[same]).sum(axis=1) < 0)


def test_cull_backfaces_under_mirroring(sixty_instances):
    """Culling keeps the faces whose (outward) world normal faces the ray,
    mirrored instances included."""
    scene = sixty_instances
    vertices, faces, owner, _ = flatten(scene)
    origins, directions = pick_rays(vertices, 1000, np.random.default_rng(2))
    hits = scene.intersect(origins, directions, cull_backfaces=True)
    ref_triangle, ref_t, _, _, edge = closest_hits(vertices, faces, origins, directions, cull_backfaces=True)
    agree = hits.hit == (ref_triangle >= 0)
    assert agree.mean() >= 0.999
    assert hits.front_face[hits.hit].all()


def test_occluded_and_intersect_all_agree_with_the_reference(sixty_instances):
    scene = sixty_instances
    vertices, faces, _, _ = flatten(scene)
    origins, directions = pick_rays(vertices, 300, np.random.default_rng(3))
    hits = scene.intersect(origins, directions)
    occluded = scene.occluded(origins, directions)
    assert np.array_equal(occluded, hits.hit)
    every = scene.intersect_all(origins, directions)
    assert np.all(np.diff(every.ray) >= 0)
    reference = all_hit_distances(vertices, faces, origins, directions)
    counts = np.bincount(every.ray, minlength=len(origins))
    exact_counts = np.array([len(r) for r in reference])
    # Rays through a shared edge are one crossing for the scene and two for
    # the brute force; pick rays at random points almost never do that.
    assert (counts == exact_counts).mean() >= 0.99
    for ray in np.flatnonzero(counts == exact_counts)[:100]:
        assert np.allclose(every.t[every.ray == ray], reference[ray], rtol=1e-6, atol=1e-7)
    first = np.flatnonzero(np.diff(np.concatenate([[-1], every.ray])) != 0)
    assert np.array_equal(every.object[first], hits.object[every.ray[first]])


def test_shapes_agree_with_the_primitives():
    rng = np.random.default_rng(4)
    scene = bvh.Scene()
    placed = {}
    for kind, params in [("sphere", {"radius": 0.7}), ("box", {"size": (1.0, 2.0, 0.5)}),
                         ("quad", {"size": (2.0, 1.0)}),
                         ("polygon", {"vertices": [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0.5, 0.3, 0], [0, 1, 0]]})]:
        transform = random_transform(rng, mirror=kind == "box", spread=0.0)
        placed[scene.add_shape(kind, transform, name=kind, **params)] = (kind, params, transform)
    for oid, (kind, params, transform) in placed.items():
        others = [k for k in placed if k != oid]
        origins, directions = pick_rays(scene.object(oid).bounds, 500, rng)
        hits = scene.intersect(origins, directions, exclude=others)
        inverse = np.linalg.inv(transform)
        local_o = origins @ inverse[:3, :3].T + inverse[:3, 3]
        local_d = directions @ inverse[:3, :3].T
        if kind == "sphere":
            ref = primitives.ray_sphere(local_o, local_d, [0, 0, 0], params["radius"])
        elif kind == "box":
            half = np.array(params["size"]) / 2
            ref = primitives.ray_aabb(local_o, local_d, -half, half)
        elif kind == "quad":
            w, h = params["size"]
            ref = primitives.ray_polygon(local_o, local_d, [[-w / 2, -h / 2, 0], [w / 2, -h / 2, 0],
                                                            [w / 2, h / 2, 0], [-w / 2, h / 2, 0]])
        else:
            ref = primitives.ray_polygon(local_o, local_d, params["vertices"])
        ref_hit = np.isfinite(ref.t)
        assert ref_hit.any() and (~ref_hit).any()
        assert np.mean(hits.hit == ref_hit) >= 0.998, kind
        both = hits.hit & ref_hit
        assert np.allclose(hits.t[both], ref.t[both], rtol=1e-9), kind
        assert (hits.object[hits.hit] == oid).all()
        assert (hits.mesh[hits.hit] == -1).all() and (hits.triangle[hits.hit] == -1).all()
        assert np.isnan(hits.u[hits.hit]).all()
        world_normal = ref.normal[both] @ inverse[:3, :3]
        world_normal /= np.linalg.norm(world_normal, axis=1, keepdims=True)
        if kind in ("sphere", "box"):
            assert np.allclose(hits.normal[both], world_normal, atol=1e-9), kind
        else:
            # Planar shapes: the primitives' normal is the plane's, either side.
            assert np.allclose(np.abs((hits.normal[both] * world_normal).sum(axis=1)), 1.0), kind
        assert np.allclose(np.linalg.norm(hits.normal[hits.hit], axis=1), 1.0)


def test_a_ray_through_a_sphere_crosses_it_twice():
    scene = bvh.Scene()
    scene.add_shape("sphere", radius=1.0)
    every = scene.intersect_all([[-5.0, 0, 0]], [[1.0, 0, 0]])
    assert np.allclose(every.t, [4.0, 6.0])
    inside = scene.intersect([0.0, 0, 0], [1.0, 0, 0])
    assert np.allclose(inside.t, [1.0]) and not inside.front_face[0]
    assert not scene.intersect([0.0, 0, 0], [1.0, 0, 0], cull_backfaces=True).hit[0]


def unit_square(z=0.0):
    return np.array([[0, 0, z], [1, 0, z], [1, 1, z], [0, 1, z]], float), np.array([[0, 1, 2], [0, 2, 3]])


def test_edits_between_picks_never_rebuild_meshes():
    scene = bvh.Scene()
    square = scene.add_mesh(*unit_square(), name="square")
    a = scene.add_instance(square, name="a")
    down = ([0.5, 0.5, 5.0], [0.0, 0.0, -1.0])
    assert scene.intersect(*down).object[0] == a
    pack = scene._snapshot().pack
    moved = np.eye(4)
    moved[:3, 3] = [10.0, 0.0, 0.0]
    scene.set_transform(a, moved)
    assert not scene.intersect(*down).hit[0]
    assert scene.intersect([10.5, 0.5, 5.0], [0.0, 0.0, -1.0]).object[0] == a
    assert scene._snapshot().pack is pack
    scene.set_transform(a, np.eye(4))
    b = scene.add_instance(square, np.diag([1.0, 1.0, 1.0, 1.0]) + np.array(
        [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1.0], [0, 0, 0, 0]]), name="b")
    assert scene.intersect(*down).object[0] == b
    scene.set_pickable(b, False)
    assert scene.intersect(*down).object[0] == a
    scene.set_pickable(b, True)
    scene.set_mask(b, 0b10)
    assert scene.intersect(*down, mask=0b01).object[0] == a
    assert scene.intersect(*down, mask=0b10).object[0] == b
    assert scene.intersect(*down, exclude=[b]).object[0] == a
    assert scene.intersect(*down, objects=[a]).object[0] == a
    scene.remove(b)
    assert scene.intersect(*down).object[0] == a
    assert [o.id for o in scene.objects] == [a]
    c = scene.add_instance(square)
    assert c == b + 1, "ids are never reused"
    scene.set_name(a, "renamed")
    assert scene.object(a).name == "renamed"


def test_the_same_mesh_added_twice_is_built_once():
    scene = bvh.Scene()
    first = scene.add_mesh(*unit_square())
    assert scene.add_mesh(*unit_square()) == first
    assert scene.add_mesh(*unit_square(z=1.0)) != first
    assert len(scene.meshes) == 2


def test_shading_normals_and_uvs_are_interpolated():
    vertices, faces = unit_square()
    normals = np.array([[0, 0, 1], [0, 0, 1], [0, 1, 1], [0, 1, 1]], float)
    uvs = vertices[:, :2] * 2.0
    scene = bvh.Scene()
    mesh = scene.add_mesh(vertices, faces, normals=normals, uvs=uvs)
    scene.add_instance(mesh, np.diag([1.0, 2.0, 1.0, 1.0]))
    hits = scene.intersect([0.5, 1.0, 5.0], [0.0, 0.0, -1.0])
    assert np.allclose(hits.uv[0], [1.0, 1.0])
    local = np.array([0.0, 0.5, 1.0])
    world = local / [1.0, 2.0, 1.0]
    assert np.allclose(hits.shading_normal[0], world / np.linalg.norm(world))
    assert np.allclose(hits.normal[0], [0, 0, 1])
    plain = bvh.Scene()
    plain.add_instance(plain.add_mesh(vertices, faces))
    hits = plain.intersect([0.5, 0.5, 5.0], [0.0, 0.0, -1.0])
    assert np.isnan(hits.uv).all() and np.allclose(hits.shading_normal, hits.normal)


def test_misses_and_empty_scenes():
    scene = bvh.Scene()
    hits = scene.intersect(np.zeros((3, 3)), np.ones((3, 3)))
    assert (hits.object == -1).all() and np.isinf(hits.t).all() and np.isnan(hits.point).all()
    assert np.isnan(scene.bounds).all() and len(scene) == 0
    assert len(scene.intersect_all(np.zeros((2, 3)), np.ones((2, 3)))) == 0
    assert not scene.occluded(np.zeros((2, 3)), np.ones((2, 3))).any()


def test_big_batches_match_single_rays(sixty_instances):
    vertices, _, _, _ = flatten(sixty_instances)
    origins, directions = pick_rays(vertices, 700, np.random.default_rng(5))
    batch = sixty_instances.intersect(origins, directions)
    for i in range(0, 700, 97):
        one = sixty_instances.intersect(origins[i], directions[i])
        assert one.object[0] == batch.object[i] and one.t[0] == batch.t[i]


def test_picks_during_edits_see_before_or_after():
    """A pick racing with moves sees the square at one place or the other."""
    scene = bvh.Scene()
    square = scene.add_instance(scene.add_mesh(*unit_square()))
    here, there = np.eye(4), np.eye(4)
    there[:3, 3] = [0.0, 0.0, 2.0]
    stop = threading.Event()

    def mover():
        while not stop.is_set():
            scene.set_transform(square, there)
            scene.set_transform(square, here)

    thread = threading.Thread(target=mover)
    thread.start()
    try:
        seen = set()
        for _ in range(300):
            t = scene.intersect(np.tile([0.5, 0.5, 5.0], (100, 1)), np.tile([0.0, 0.0, -1.0], (100, 1))).t
            assert np.unique(t).size == 1
            seen.add(float(t[0]))
        assert seen <= {5.0, 3.0}
    finally:
        stop.set()
        thread.join()


def test_refusals_say_what_is_wrong():
    scene = bvh.Scene()
    mesh = scene.add_mesh(*unit_square())
    with pytest.raises(ValueError, match="transform must be a 4x4 matrix"):
        scene.add_instance(mesh, np.eye(3))
    with pytest.raises(ValueError, match="transform contains NaN"):
        scene.add_instance(mesh, np.full((4, 4), np.nan))
    with pytest.raises(ValueError, match="not invertible"):
        scene.add_instance(mesh, np.diag([1.0, 0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="must be affine"):
        scene.add_instance(mesh, np.ones((4, 4)))
    with pytest.raises(bvh.UnknownIdError, match="no mesh 5 in this scene"):
        scene.add_instance(5)
    with pytest.raises(bvh.UnknownIdError, match="no object 9 in this scene"):
        scene.set_transform(9, np.eye(4))
    with pytest.raises(ValueError, match="mask must be an integer"):
        scene.add_instance(mesh, mask=-1)
    with pytest.raises(ValueError, match="unknown shape kind 'cone'"):
        scene.add_shape("cone")
    with pytest.raises(ValueError, match="radius must be finite and > 0"):
        scene.add_shape("sphere", radius=0.0)
    with pytest.raises(ValueError, match="unknown parameter 'radius' for a box"):
        scene.add_shape("box", radius=1.0)
    with pytest.raises(ValueError, match="polygon needs its vertices"):
        scene.add_shape("polygon")
    with pytest.raises(ValueError, match="no triangle of non-zero area"):
        scene.add_mesh(np.zeros((3, 3)), [[0, 1, 2]])
    with pytest.raises(ValueError, match=r"normals must have shape \(3, 3\)"):
        scene.add_mesh(np.eye(3), [[0, 1, 2]], normals=np.ones((2, 3)))
    with pytest.raises(ValueError, match="name must be a string"):
        scene.add_mesh(np.eye(3), [[0, 1, 2]], name=3)
    with pytest.raises(ValueError, match="pickable must be true or false"):
        scene.set_pickable(0, "yes")
    obj = scene.add_instance(mesh)
    with pytest.raises(bvh.UnknownIdError, match="no object 4 in this scene"):
        scene.intersect([0, 0, 1.0], [0, 0, -1.0], exclude=[obj, 4])
    with pytest.raises(ValueError, match="directions must be non-zero"):
        scene.intersect([0, 0, 1.0], [0, 0, 0.0])
    with pytest.raises(ValueError, match="mode must be 'objects' or 'triangles'"):
        scene.select(np.zeros((1, 4)), mode="faces")


def test_mirrored_instance_normals_point_outward():
    """A closed mesh mirrored still has outward normals: rays from outside meet front faces."""
    sphere = trimesh.creation.icosphere(subdivisions=2)
    scene = bvh.Scene()
    mesh = scene.add_mesh(sphere.vertices, sphere.faces)
    scene.add_instance(mesh, np.diag([-1.0, 2.0, 0.5, 1.0]))
    rng = np.random.default_rng(6)
    directions = rng.normal(size=(200, 3))
    hits = scene.intersect(-5.0 * directions, directions)
    assert hits.hit.all() and hits.front_face.all()
    assert ((hits.normal * hits.point * [1, 0.25, 4]).sum(axis=1) > 0).all()


def test_save_and_open_round_trip(sixty_instances, tmp_path):
    scene = sixty_instances
    scene.add_shape("sphere", radius=0.3, name="ball")
    scene.save(tmp_path / "s")
    opened = bvh.Scene.open(tmp_path / "s")
    assert [(o.id, o.name, o.kind, o.mesh) for o in opened.objects] == \
        [(o.id, o.name, o.kind, o.mesh) for o in scene.objects]
    assert all(np.array_equal(a.transform, b.transform) and np.array_equal(a.bounds, b.bounds)
               for a, b in zip(opened.objects, scene.objects))
    vertices, _, _, _ = flatten(scene)
    origins, directions = pick_rays(vertices, 500, np.random.default_rng(8))
    before, after = scene.intersect(origins, directions), opened.intersect(origins, directions)
    assert np.array_equal(before.object, after.object) and np.array_equal(before.t, after.t)
    assert not opened.mesh_vertices(0).flags.writeable, "meshes are memory-mapped read-only"
    # Edits after opening work, and a re-save rewrites only the object table.
    mesh_files = sorted(p.name for p in (tmp_path / "s").glob("nodes.*.npy"))
    moved = np.eye(4)
    moved[:3, 3] = 100.0
    opened.set_transform(0, moved)
    opened.remove(1)
    opened.save(tmp_path / "s")
    assert sorted(p.name for p in (tmp_path / "s").glob("nodes.*.npy")) == mesh_files
    again = bvh.Scene.open(tmp_path / "s")
    assert np.array_equal(again.object(0).transform, moved)
    with pytest.raises(bvh.UnknownIdError):
        again.object(1)
    opened.add_mesh(*unit_square())
    opened.save(tmp_path / "s")
    assert len(bvh.Scene.open(tmp_path / "s").meshes) == 4


def test_damaged_save_directories_are_refused(tmp_path):
    scene = bvh.Scene()
    scene.add_instance(scene.add_mesh(*unit_square()))
    scene.save(tmp_path / "s")
    with pytest.raises(ValueError, match="does not exist|no such|missing"):
        bvh.Scene.open(tmp_path / "nowhere")
    nodes = next((tmp_path / "s").glob("nodes.*.npy"))
    data = bytearray(nodes.read_bytes())
    data[-1] ^= 0xFF
    nodes.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="damaged"):
        bvh.Scene.open(tmp_path / "s")
    nodes.write_bytes(bytes(data[:-8]))
    with pytest.raises(ValueError, match="damaged"):
        bvh.Scene.open(tmp_path / "s")
    (tmp_path / "s" / "manifest.json").write_text("{not json")
    with pytest.raises(ValueError, match="manifest"):
        bvh.Scene.open(tmp_path / "s")


def test_select_by_frustum():
    """Two squares side by side; a rectangle over the left one, seen from above."""
    scene = bvh.Scene()
    square = scene.add_mesh(*unit_square())
    left = scene.add_instance(square, name="left")
    shifted = np.eye(4)
    shifted[:3, 3] = [3.0, 0.0, 0.0]
    right = scene.add_instance(square, shifted, name="right")
    ball = scene.add_shape("sphere", radius=0.2, transform=np.array(
        [[1, 0, 0, 0.5], [0, 1, 0, 0.5], [0, 0, 1, 1.0], [0, 0, 0, 1.0]]))
    camera = bvh.Camera.pinhole([2.0, 0.5, 10.0], [2.0, 0.5, 0.0], [0.0, 1.0, 0.0], 40.0, 400, 400)
    x, y = [], []
    for corner in ([0.0, 0.0, 0.0], [1.0, 1.0, 0.0]):
        # The pixel each corner of the left square projects to.
        clip = camera.projection @ camera.view @ np.append(corner, 1.0)
        ndc = clip[:2] / clip[3]
        x.append((ndc[0] + 1) / 2 * 400)
        y.append((1 - ndc[1]) / 2 * 400)
    planes = camera.frustum([min(x) + 5, min(y) + 5, max(x) - 5, max(y) - 5])
    chosen = scene.select(planes)
    assert sorted(chosen.object.tolist()) == sorted([left, ball])
    triangles = scene.select(planes, mode="triangles", objects=[left])
    assert sorted(triangles.triangle.tolist()) == [0, 1] and (triangles.object == left).all()
    assert len(scene.select(planes, exclude=[left, ball])) == 0
    everything = scene.select(camera.frustum())
    assert sorted(everything.object.tolist()) == [left, right, ball]


def test_a_batch_of_edits_is_one_change_for_queries():
    scene = bvh.Scene()
    square = scene.add_mesh(*unit_square())
    a = scene.add_instance(square)
    down = ([0.5, 0.5, 5.0], [0.0, 0.0, -1.0])
    moved = np.eye(4)
    moved[:3, 3] = [0.0, 0.0, 2.0]
    answers = []
    with scene.batch():
        scene.set_transform(a, moved)
        # Another thread's query answers from the scene before the batch.
        thread = threading.Thread(target=lambda: answers.append(scene.intersect(*down).t[0]))
        thread.start()
        thread.join()
        scene.add_instance(square, moved)
    assert answers == [5.0]
    assert scene.intersect(*down).t[0] == 3.0
    with pytest.raises(ValueError, match="beyond 1e\\+37"):
        scene.set_transform(a, np.diag([1e300, 1e300, 1e300, 1.0]))
