"""A random scene of lines, points and surfaces, and random rays through it,
for ``tests/test_lines_points.py`` and ``bench.lines_points``: what the float64
brute force of ``testkit/reference/lines.py`` is compared with."""

import numpy as np

import bvh

#: (line tolerance, line slope, point tolerance, point slope)
TOLERANCES = [(0.02, 0.0, 0.03, 0.0), (0.2, 0.0, 0.1, 0.0), (0.0, 0.01, 0.0, 0.02), (0.01, 0.005, 0.02, 0.0)]


def _rotation(rng):
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return q * np.sign(np.linalg.det(q))


def random_scene(seed=0):
    rng = np.random.default_rng(seed)
    scene = bvh.Scene()
    # A polyline and loose segments, some of zero length and sharing vertices.
    path = np.cumsum(rng.normal(scale=0.3, size=(60, 3)), axis=0)
    edges = np.stack([np.arange(59), np.arange(1, 60)], axis=1)
    loose = rng.uniform(-2, 2, size=(80, 3))
    loose_edges = rng.integers(0, 80, size=(60, 2))
    loose_edges[:5, 1] = loose_edges[:5, 0]
    lines_a = scene.add_lines(path, edges, name="path")
    lines_b = scene.add_lines(loose, loose_edges)
    cloud = scene.add_points(rng.uniform(-2, 2, size=(400, 3)))
    grid = np.array([[x, y, 0.0] for x in np.linspace(-2, 2, 5) for y in np.linspace(-2, 2, 5)])
    faces = [[i * 5 + j, i * 5 + j + 1, (i + 1) * 5 + j] for i in range(4) for j in range(4)] + \
        [[i * 5 + j + 1, (i + 1) * 5 + j + 1, (i + 1) * 5 + j] for i in range(4) for j in range(4)]
    plane = scene.add_mesh(grid, np.array(faces))
    for k in range(3):
        m = np.eye(4)
        m[:3, :3] = _rotation(rng) @ np.diag(rng.uniform(0.5, 1.5, 3))
        m[:3, 3] = rng.uniform(-1, 1, 3)
        scene.add_instance(plane, m)
    scene.add_instance(lines=lines_a)
    m = np.eye(4)
    m[:3, :3] = _rotation(rng) @ np.diag([1.0, 2.0, 0.5])
    scene.add_instance(lines=lines_b, transform=m)
    scene.add_instance(points=cloud)
    m = np.eye(4)
    m[:3, 3] = [0.5, 0.0, 0.3]
    scene.add_instance(points=cloud, transform=m)
    scene.add_shape("sphere", radius=0.3)
    return scene


def random_rays(n, seed):
    rng = np.random.default_rng(seed)
    origins = rng.uniform(-3, 3, size=(n, 3))
    targets = rng.uniform(-1.5, 1.5, size=(n, 3))
    return origins, targets - origins
