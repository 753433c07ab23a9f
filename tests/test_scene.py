"""bvh.Scene against a flattened reference: every transform applied, every
mesh concatenated, every ray tested against every triangle in float64."""

import threading

import numpy as np
import pytest
import trimesh

import bvh
from bvh import primitives

from testkit.meshes import pick_rays, sample_mesh
from testkit.reference.raycast import all_hit_distances, closest_hits


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
    # front_face follows the world normal: direction . normal < 0, where
    # rounding cannot flip that sign (the kernel takes it before normalising).
    facing = (directions[same] * hits.normal[same]).sum(axis=1)
    clear = np.abs(facing) > 1e-9 * np.linalg.norm(directions[same], axis=1)
    assert np.array_equal(hits.front_face[same][clear], facing[clear] < 0)


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


# ------------------------------------------------- window and crossing selection

#: World distance within which a vertex is too close to a plane for the
#: reference and the kernels (which test in each object's own space) to be
#: compared: rounding may put it on either side.
SELECT_MARGIN = 1e-6


def pixel_of(camera, point):
    """Continuous pixel coordinates of a world point seen by ``camera``."""
    clip = camera.projection @ camera.view @ np.append(point, 1.0)
    ndc = clip[:2] / clip[3]
    return np.array([(ndc[0] + 1) / 2 * camera.width, (1 - ndc[1]) / 2 * camera.height])


def rect_around(camera, points, margin):
    """The pixel rectangle holding the projections of ``points``, grown by ``margin`` pixels."""
    pixels = np.array([pixel_of(camera, p) for p in points])
    return [*(pixels.min(axis=0) - margin), *(pixels.max(axis=0) + margin)]


def world_plane_values(points, transform, planes):
    """Signed distances ``(N, P)`` of object-space ``points (N, 3)`` under
    ``transform`` to the unit ``planes``, in float64 by elementwise products
    (no matrix product: its rounding depends on the CPU's BLAS kernel)."""
    world = (points[:, None, :] * transform[None, :3, :3]).sum(axis=2) + transform[:3, 3]
    return (world[:, None, :] * planes[None, :, :3]).sum(axis=2) + planes[:, 3]


def grid_mesh(cells: int, half: float):
    """A square ``[-half, half]^2`` in the z = 0 plane, two triangles per cell."""
    ticks = np.linspace(-half, half, cells + 1)
    x, y = np.meshgrid(ticks, ticks, indexing="ij")
    vertices = np.stack([x.ravel(), y.ravel(), np.zeros(x.size)], axis=1)
    corner = (np.arange(cells)[:, None] * (cells + 1) + np.arange(cells)[None, :]).ravel()
    faces = np.concatenate([np.stack([corner, corner + cells + 1, corner + cells + 2], axis=1),
                            np.stack([corner, corner + cells + 2, corner + 1], axis=1)])
    return vertices, faces


def test_window_takes_what_lies_inside_crossing_what_it_touches():
    """A small box on a ground plane, seen from above: a marquee around the box
    crosses the ground, but only the box lies within it."""
    scene = bvh.Scene()
    ground = scene.add_instance(scene.add_mesh(*grid_mesh(10, 5.0)), name="ground")
    box = trimesh.creation.box(extents=[1.0, 1.0, 1.0])
    lifted = np.eye(4)
    lifted[:3, 3] = [0.5, 0.5, 0.5]
    small = scene.add_instance(scene.add_mesh(box.vertices, box.faces), lifted, name="box")
    camera = bvh.Camera.pinhole([0.0, 0.0, 20.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0], 40.0, 400, 400)
    corners = [[x, y, z] for x in (0.0, 1.0) for y in (0.0, 1.0) for z in (0.0, 1.0)]
    planes = camera.frustum(rect_around(camera, corners, 5.0))
    assert sorted(scene.select(planes).object.tolist()) == [ground, small]
    assert sorted(scene.select(planes, containment="crossing").object.tolist()) == [ground, small]
    assert scene.select(planes, containment="window").object.tolist() == [small]
    # In triangles mode a window lists the triangles that lie inside, the box's and the ground's:
    # the marquee holds the ground's cell under the box, [0, 1]^2, whose two triangles are 55 and 155.
    triangles = scene.select(planes, mode="triangles", containment="window")
    assert triangles.triangle[triangles.object == small].tolist() == list(range(len(box.faces)))
    assert sorted(triangles.triangle[triangles.object == ground].tolist()) == [55, 155]
    crossing = scene.select(planes, mode="triangles")
    assert len(crossing.triangle[crossing.object == ground]) > 2
    # A marquee that cuts the box takes it only when crossing.
    half = camera.frustum(rect_around(camera, [[0.0, 0.0, 1.0], [0.5, 1.0, 1.0]], 0.0))
    assert sorted(scene.select(half).object.tolist()) == [ground, small]
    assert scene.select(half, containment="window").object.tolist() == []
    # The whole image holds everything.
    assert sorted(scene.select(camera.frustum(), containment="window").object.tolist()) == [ground, small]
    with pytest.raises(ValueError, match="containment must be 'crossing' or 'window', got 'inside'"):
        scene.select(planes, containment="inside")


def random_marquee(rng, least_size):
    """The frustum of a random rectangle, at least ``least_size`` pixels and
    at most 180 x 140, of a 320 x 240 camera 30 units from the origin looking
    near it."""
    direction = rng.normal(size=3)
    camera = bvh.Camera.pinhole(30.0 * direction / np.linalg.norm(direction), rng.normal(size=3), rng.normal(size=3),
                                rng.uniform(30.0, 60.0), 320, 240)
    start = rng.uniform([0.0, 0.0], [140.0, 100.0])
    return camera.frustum([*start, *(start + rng.uniform(least_size, [180.0, 140.0]))])


@pytest.mark.parametrize("seed", range(4))
def test_window_selection_agrees_with_per_vertex_tests(sixty_instances, seed):
    """Objects, and triangles, within random marquees, against every used vertex
    of every object tested against every plane in float64."""
    scene = sixty_instances
    planes = random_marquee(np.random.default_rng(500 + seed), [120.0, 100.0])
    objects = scene.select(planes, containment="window")
    crossing = scene.select(planes, containment="crossing")
    triangles = scene.select(planes, mode="triangles", containment="window")
    chosen = set(objects.object.tolist())
    # The marquee takes some objects whole and cuts others.
    assert 0 < len(chosen) < len(crossing)
    assert chosen <= set(crossing.object.tolist())
    for info in scene.objects:
        if info.kind != "mesh" or not info.pickable:  # other tests may add shapes to the shared scene
            continue
        faces = scene.mesh_faces(info.mesh)
        values = world_plane_values(scene.mesh_vertices(info.mesh), info.transform, planes)
        nearest = values.min(axis=1)[faces].min(axis=1)  # per face, its vertex deepest outside a plane
        listed = np.sort(triangles.triangle[triangles.object == info.id])
        surely_within = nearest >= SELECT_MARGIN
        surely_not = nearest < -SELECT_MARGIN
        assert set(np.flatnonzero(surely_within)) <= set(listed.tolist())
        assert not set(np.flatnonzero(surely_not)) & set(listed.tolist())
        if surely_within.all():
            assert info.id in chosen
        elif surely_not.any():
            assert info.id not in chosen


@pytest.mark.parametrize("seed", range(3))
def test_objects_mode_agrees_with_the_triangles_it_would_list(sixty_instances, seed):
    """An object is selected in ``"objects"`` mode exactly when ``"triangles"``
    mode lists one of its faces (crossing) or all of them (window). The two
    modes take different paths: the small meshes (the gear, the capsule) of
    an objects selection are tested together in one kernel call, the torus
    (more faces than one block) and every triangles selection one object at a
    time."""
    scene = sixty_instances
    planes = random_marquee(np.random.default_rng(900 + seed), [60.0, 50.0])
    meshes = {info.id: scene.mesh_faces(info.mesh).shape[0] for info in scene.objects if info.kind == "mesh"}
    for containment in ("crossing", "window"):
        objects = set(scene.select(planes, containment=containment).object.tolist())
        triangles = scene.select(planes, mode="triangles", containment=containment)
        listed = {oid: np.unique(triangles.triangle[triangles.object == oid]).size for oid in meshes}
        expected = {oid for oid, faces in meshes.items()
                    if (listed[oid] == faces if containment == "window" else listed[oid] > 0)}
        assert objects & set(meshes) == expected
    crossing = set(scene.select(planes).object.tolist())
    # The marquee meets some objects of each batched mesh and misses others.
    assert 0 < len(crossing) < len(meshes)


def shape_reference(info, planes):
    """Smallest signed distance of a shape's points to ``planes`` (world), from
    its corners or vertices, or, for a sphere (an ellipsoid in the world), from
    its centre less its extent along each plane's normal."""
    transform = info.transform
    if info.kind == "sphere":
        linear = transform[:3, :3]
        # |A^T n|: the ellipsoid's half-width along the unit normal n, per plane.
        reach = np.sqrt(((linear[None, :, :] * planes[:, :3, None]).sum(axis=1) ** 2).sum(axis=1))
        centre = (transform[:3, 3] * planes[:, :3]).sum(axis=1) + planes[:, 3]
        return float((centre - info.params["radius"] * reach).min())
    if info.kind in ("box", "quad"):
        half = np.zeros(3)
        half[:len(info.params["size"])] = np.array(info.params["size"]) / 2
        points = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * half
    else:
        points = np.array(info.params["vertices"])
    return float(world_plane_values(points, transform, planes).min())


@pytest.mark.parametrize("seed", range(3))
def test_window_judges_shapes_by_their_exact_extent(seed):
    rng = np.random.default_rng(600 + seed)
    scene = bvh.Scene()
    star = [[np.cos(a) * r, np.sin(a) * r, 0.0] for a, r in zip(np.linspace(0, 2 * np.pi, 10, endpoint=False),
                                                                 [1.0, 0.4] * 5)]
    kinds = [("sphere", {"radius": 0.7}), ("box", {"size": [1.0, 0.5, 2.0]}), ("quad", {"size": [1.5, 0.8]}),
             ("polygon", {"vertices": star})]
    for k in range(80):
        kind, params = kinds[k % 4]
        scene.add_shape(kind, random_transform(rng, spread=4.0), **params)
    camera = bvh.Camera.pinhole([0.0, 0.0, 25.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0], 40.0, 400, 400)
    start = rng.uniform(20.0, 150.0, 2)
    planes = camera.frustum([*start, *(start + rng.uniform(150.0, 250.0, 2))])
    chosen = set(scene.select(planes, containment="window").object.tolist())
    assert chosen <= set(scene.select(planes).object.tolist())
    assert chosen == set(scene.select(planes, mode="triangles", containment="window").object.tolist())
    decided = 0
    taken = 0
    for info in scene.objects:
        nearest = shape_reference(info, planes)
        if abs(nearest) < SELECT_MARGIN:
            continue
        decided += 1
        assert (info.id in chosen) == (nearest > 0), (info.kind, nearest)
        taken += nearest > 0
    assert decided >= 78 and taken > 0


def test_window_on_a_shape_whose_box_crosses_the_region():
    """A sphere inside a slanted half-space while a corner of its box is not:
    the box cannot decide, the exact test takes it (and an ellipsoid likewise)."""
    scene = bvh.Scene()
    ball = scene.add_shape("sphere", radius=1.0)
    stretched = scene.add_shape("sphere", np.diag([2.0, 1.0, 1.0, 1.0]), radius=1.0)
    normal = -np.ones(3) / np.sqrt(3.0)

    def window(d):
        planes = np.array([[*normal, d], [0.0, 0.0, 1.0, 10.0]])
        return scene.select(planes, containment="window").object.tolist()

    # The ball reaches 1 along the normal, its box's corner sqrt(3); the ellipsoid reaches sqrt(2).
    assert window(1.1) == [ball]
    assert window(0.9) == []
    assert window(1.45) == [ball, stretched]
    assert window(1.8) == [ball, stretched]


def expected_all_hit_normals(scene, every):
    """Unit world normals of intersect_all's hits, from the float64 geometry:
    a mesh face's world corners (winding reversed under mirroring), a shape's
    outward object-space normal through the inverse transpose."""
    normals = np.empty((len(every), 3))
    for k, (oid, triangle, point) in enumerate(zip(every.object.tolist(), every.triangle.tolist(), every.point)):
        info = scene.object(oid)
        linear = info.transform[:3, :3]
        if info.kind == "mesh":
            corners = scene.mesh_vertices(info.mesh)[scene.mesh_faces(info.mesh)[triangle]]
            world = corners @ linear.T + info.transform[:3, 3]
            normal = np.cross(world[1] - world[0], world[2] - world[0]) * np.sign(np.linalg.det(linear))
        else:
            local = np.linalg.solve(linear, point - info.transform[:3, 3])
            if info.kind == "sphere":
                outward = local
            elif info.kind == "box":
                axis = np.argmax(np.abs(local) / (np.array(info.params["size"]) / 2))
                outward = np.sign(local[axis]) * np.eye(3)[axis]
            else:
                # The quad, and the polygon of this test, lie in z = 0 facing +z.
                outward = np.array([0.0, 0.0, 1.0])
            normal = np.linalg.solve(linear.T, outward)
        normals[k] = normal / np.linalg.norm(normal)
    return normals


def test_all_hits_carry_points_normals_and_uvs_like_closest_hits():
    """intersect_all's per-hit fields follow SceneHits: a ray's first crossing
    carries what intersect gives; every crossing has a unit normal (the
    float64 geometry's) on the side front_face says, a point on its ray, and
    uv and vertex normals only where the mesh has them."""
    rng = np.random.default_rng(12)
    sphere = trimesh.creation.icosphere(subdivisions=2)
    scene = bvh.Scene()
    textured = scene.add_mesh(sphere.vertices, sphere.faces, normals=sphere.vertices, uvs=sphere.vertices[:, :2])
    plain = scene.add_mesh(sphere.vertices, sphere.faces)
    scene.add_instance(textured, random_transform(rng, mirror=True, spread=2.0))
    scene.add_instance(plain, random_transform(rng, spread=2.0))
    for kind, params in [("sphere", {"radius": 0.7}), ("box", {"size": (1.0, 2.0, 0.5)}),
                         ("quad", {"size": (2.0, 1.0)}), ("polygon", {"vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0]]})]:
        scene.add_shape(kind, random_transform(rng, mirror=kind == "box", spread=2.0), **params)
    origins, directions = pick_rays(scene.bounds, 3000, rng)
    every = scene.intersect_all(origins, directions)
    closest = scene.intersect(origins, directions)
    kinds = {scene.object(oid).kind for oid in every.object.tolist()}
    assert kinds == {"mesh", "sphere", "box", "quad", "polygon"}
    ray_directions = directions[every.ray]
    np.testing.assert_allclose(every.point, origins[every.ray] + every.t[:, None] * ray_directions, rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(every.normal, axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(every.normal, expected_all_hit_normals(scene, every), atol=1e-5)
    facing = (every.normal * ray_directions).sum(axis=1)
    clear = np.abs(facing) > 1e-6 * np.linalg.norm(ray_directions, axis=1)
    assert clear.mean() > 0.99
    np.testing.assert_array_equal(every.front_face[clear], facing[clear] < 0)
    # A ray's first crossing is its closest hit.
    first = np.flatnonzero(np.diff(np.concatenate([[-1], every.ray])) != 0)
    rays = every.ray[first]
    same = (every.object[first] == closest.object[rays]) & (every.triangle[first] == closest.triangle[rays])
    assert same.mean() > 0.99
    first, rays = first[same], rays[same]
    for field in ("t", "point", "normal", "shading_normal", "uv"):
        np.testing.assert_allclose(getattr(every, field)[first], getattr(closest, field)[rays], rtol=1e-12,
                                   atol=1e-12, err_msg=field)
    # The kernel may fuse n . d into FMAs: on a grazing hit its sign is the CPU's to round.
    grazing = ~clear[first]
    np.testing.assert_array_equal(every.front_face[first][~grazing], closest.front_face[rays][~grazing])
    # uv and vertex normals only on the textured mesh; elsewhere NaN uv and the geometric normal.
    on_textured = every.mesh == textured
    assert on_textured.any() and not np.isnan(every.uv[on_textured]).any()
    assert np.isnan(every.uv[~on_textured]).all()
    np.testing.assert_array_equal(every.shading_normal[~on_textured], every.normal[~on_textured])
    assert (np.abs(every.shading_normal[on_textured] - every.normal[on_textured]).max(axis=1) > 1e-6).mean() > 0.9
    np.testing.assert_allclose(np.linalg.norm(every.shading_normal, axis=1), 1.0, rtol=1e-12)


def test_an_empty_scene_has_empty_all_hit_fields():
    every = bvh.Scene().intersect_all(np.zeros((2, 3)), np.ones((2, 3)))
    assert every.point.shape == every.normal.shape == every.shading_normal.shape == (0, 3)
    assert every.uv.shape == (0, 2) and every.front_face.shape == (0,)


def test_bounds_are_exact():
    """Reported boxes are the transformed extremes, with no float32 padding
    (-2.8e-45 where 0 is meant): exact for transforms that map axes to axes."""
    scene = bvh.Scene()
    triangle = scene.add_mesh([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]])
    at_origin = scene.add_instance(triangle)
    assert scene.meshes[0].bounds.tolist() == [[0.0, 0.0, 0.0], [1.0, 1.0, 0.0]]
    assert scene.object(at_origin).bounds.tolist() == [[0.0, 0.0, 0.0], [1.0, 1.0, 0.0]]
    # Scaled (one axis mirrored) and moved by exactly representable amounts.
    placed = np.diag([2.0, -3.0, 4.0, 1.0])
    placed[:3, 3] = [0.5, 1.0, -2.0]
    moved = scene.add_instance(triangle, placed)
    assert scene.object(moved).bounds.tolist() == [[0.5, -2.0, -2.0], [2.5, 1.0, -2.0]]
    assert scene.bounds.tolist() == [[0.0, -2.0, -2.0], [2.5, 1.0, 0.0]]
    mirrored = scene.add_instance(triangle, np.diag([-1.0, 1.0, 1.0, 1.0]))
    box = scene.object(mirrored).bounds
    assert box.tolist() == [[-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]] and not np.signbit(box[box == 0.0]).any()
    quarter_turn = np.array([[0.0, -1, 0, 3], [1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    scene.set_transform(mirrored, quarter_turn)
    assert scene.object(mirrored).bounds.tolist() == [[2.0, 0.0, 0.0], [3.0, 1.0, 0.0]]
    quad = scene.add_shape("quad", placed, size=(1.0, 0.5))
    assert scene.object(quad).bounds.tolist() == [[-0.5, 0.25, -2.0], [1.5, 1.75, -2.0]]


def test_bounds_of_turned_objects_hold_their_vertices(tmp_path):
    """Turned, the reported box is a bound of the object no looser than the
    top level's, and an object saved and opened reports the same box."""
    rng = np.random.default_rng(13)
    vertices, faces = sample_mesh("torus.ply")
    scene = bvh.Scene()
    mesh = scene.add_mesh(vertices, faces)
    for _ in range(5):
        scene.add_instance(mesh, random_transform(rng, mirror=True))
    cover = scene._snapshot().bounds
    for info in scene.objects:
        world = vertices @ info.transform[:3, :3].T + info.transform[:3, 3]
        size = np.abs(world).max()
        assert (info.bounds[0] <= world.min(axis=0) + 1e-12 * size).all()
        assert (info.bounds[1] >= world.max(axis=0) - 1e-12 * size).all()
        assert (info.bounds[0] >= cover[info.id][0]).all() and (info.bounds[1] <= cover[info.id][1]).all()
    scene.save(tmp_path / "s")
    opened = bvh.Scene.open(tmp_path / "s")
    assert [info.bounds.tolist() for info in opened.objects] == [info.bounds.tolist() for info in scene.objects]
    assert opened.bounds.tolist() == scene.bounds.tolist()


def test_add_instances_places_as_add_instance_does_all_or_nothing():
    box = trimesh.creation.box()
    transforms = np.stack([np.eye(4)] * 4)
    transforms[:, 0, 3] = [0.0, 3.0, 6.0, 9.0]
    transforms[2, :3, :3] *= 2.0
    one_by_one, batched = bvh.Scene(), bvh.Scene()
    for scene in (one_by_one, batched):
        scene.add_mesh(box.vertices, box.faces, name="box")
    expected = [one_by_one.add_instance(0, matrix, f"n{i}") for i, matrix in enumerate(transforms)]
    assert batched.add_instances([0] * 4, transforms, [f"n{i}" for i in range(4)]).tolist() == expected
    for a, b in zip(one_by_one.objects, batched.objects):
        assert (a.id, a.name, a.mask, a.pickable) == (b.id, b.name, b.mask, b.pickable)
        assert np.array_equal(a.transform, b.transform) and np.array_equal(a.bounds, b.bounds)
    origins = np.array([[x, 0.1, 5.0] for x in (0.0, 3.0, 6.0, 9.0, 12.0)])
    directions = np.tile([0.0, 0.0, -1.0], (5, 1))
    expected_hits, hits = one_by_one.intersect(origins, directions), batched.intersect(origins, directions)
    assert hits.object.tolist() == expected_hits.object.tolist() == [0, 1, 2, 3, -1]
    assert np.array_equal(hits.t, expected_hits.t)
    singular = transforms.copy()
    singular[1, :3, :3] = 0.0
    with pytest.raises(bvh.scene.checks.EntryError, match=r"^transforms\[1\]: transform is not invertible") as refused:
        batched.add_instances([0] * 4, singular)
    assert refused.value.index == 1
    with pytest.raises(bvh.UnknownIdError):
        batched.add_instances([0, 7], transforms[:2])
    assert len(batched.objects) == 4
