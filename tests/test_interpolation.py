"""Shading normals and texture coordinates at hits (``bvh/queries/interpolation.py``)
against a naive float64 reference, in batches (the parallel pass) and one ray
at a time (the calling thread's)."""

import numpy as np

import bvh
from bvh._jit import SERIAL_BATCH


def heightfield(n: int = 12):
    x, y = np.meshgrid(np.linspace(0.0, 1.0, n), np.linspace(0.0, 1.0, n))
    vertices = np.column_stack([x.ravel(), y.ravel(), 0.1 * np.sin(3 * x.ravel()) * np.cos(2 * y.ravel())])
    corner = (np.arange(n - 1)[:, None] * n + np.arange(n - 1)[None, :]).ravel()
    faces = np.concatenate([np.column_stack([corner, corner + 1, corner + n]),
                            np.column_stack([corner + 1, corner + n + 1, corner + n])])
    return vertices, faces


def reference(vertices, faces, normals, uvs, transform, triangle, u, v):
    """Naive float64: barycentric blend of the corners' normals taken to world
    space by the inverse transpose and normalised; of their texture coordinates.
    Both as the scene stores them, in float32 (``bvh.scene.mesh_pack``)."""
    normals = None if normals is None else normals.astype(np.float32).astype(np.float64)
    uvs = None if uvs is None else uvs.astype(np.float32).astype(np.float64)
    corners = faces[triangle]
    weights = np.array([1.0 - u - v, u, v])
    local = weights @ normals[corners] if normals is not None else None
    world = None
    if local is not None:
        world = np.linalg.inv(transform[:3, :3]).T @ local
        world = world / np.linalg.norm(world)
    return world, (weights @ uvs[corners] if uvs is not None else None)


def test_batches_and_single_rays_interpolate_as_the_reference_does():
    vertices, faces = heightfield()
    rng = np.random.default_rng(17)
    normals = rng.normal(size=vertices.shape) + [0.0, 0.0, 3.0]
    uvs = rng.uniform(-2.0, 2.0, (len(vertices), 2))
    scene = bvh.Scene()
    meshes = {"both": (scene.add_mesh(vertices, faces, normals=normals, uvs=uvs), normals, uvs),
              "normals": (scene.add_mesh(vertices, faces + 0, normals=normals[::-1].copy()), normals[::-1], None),
              "uvs": (scene.add_mesh(vertices, faces, uvs=uvs[::-1].copy()), None, uvs[::-1]),
              "plain": (scene.add_mesh(vertices * 1.0, faces[:, ::-1].copy()), None, None)}
    transforms = {}
    for k, (name, (mesh, _, _)) in enumerate(meshes.items()):
        # Turned, scaled unevenly and (one of them) mirrored, side by side along x.
        rotation, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        rotation *= np.sign(np.linalg.det(rotation))
        transform = np.eye(4)
        transform[:3, :3] = rotation @ np.diag([1.0, 2.0, 0.5]) * (-1.0 if name == "uvs" else 1.0)
        transform[:3, 3] = [3.0 * k, 0.0, 0.0]
        transforms[scene.add_instance(mesh, transform, name=name)] = (name, transform)
    sphere = scene.add_shape("sphere", np.array([[1, 0, 0, 1.5], [0, 1, 0, 3.0], [0, 0, 1, 0], [0, 0, 0, 1.0]]),
                             radius=0.3)
    count = 4 * SERIAL_BATCH + 37
    # Each ray aimed near the middle of an instance's field.
    middles = np.array([(transform @ [0.5, 0.5, 0.0, 1.0])[:3] for _, transform in transforms.values()])
    targets = middles[rng.integers(0, 4, count)]
    origins = targets + rng.normal(size=(count, 3)) * 3.0
    directions = targets + rng.uniform(-0.3, 0.3, (count, 3)) - origins
    batch = scene.intersect(origins, directions)
    singles = [scene.intersect(origins[i], directions[i]) for i in range(count)]
    checked = 0
    for i in range(count):
        for hits, row in ((batch, i), (singles[i], 0)):
            obj = hits.object[row]
            if obj < 0 or obj == sphere:
                # No mesh under the ray: the geometric normal, no texture coordinates.
                assert np.array_equal(hits.shading_normal[row], hits.normal[row], equal_nan=True)
                assert np.isnan(hits.uv[row]).all()
                continue
            name, transform = transforms[obj]
            _, mesh_normals, mesh_uvs = meshes[name]
            world, uv = reference(vertices, faces if name != "plain" else faces[:, ::-1], mesh_normals, mesh_uvs,
                                  transform, hits.triangle[row], hits.u[row], hits.v[row])
            if world is None:
                assert np.array_equal(hits.shading_normal[row], hits.normal[row])
            else:
                assert np.allclose(hits.shading_normal[row], world, rtol=0, atol=1e-12)
            if uv is None:
                assert np.isnan(hits.uv[row]).all()
            else:
                assert np.allclose(hits.uv[row], uv, rtol=0, atol=1e-12)
            checked += 1
    assert checked > count  # most rays hit a mesh, counted in the batch and one at a time
    names = {transforms[obj][0] for obj in batch.object if obj in transforms}
    assert names == set(meshes)
