"""Packed nodes: 32 bytes, siblings adjacent on a cache line, bounds outward."""

import numpy as np

import bvh
from bvh.node_layout import COUNT, FIRST, aligned_empty, outward_float32
from tests.meshes import sample_mesh


def test_nodes_are_32_bytes_with_siblings_on_one_cache_line():
    vertices, faces = sample_mesh("torus.ply")
    mesh = bvh.build(vertices, faces)
    nodes, links = mesh.nodes, mesh.nodes.view(np.int32)
    assert nodes.dtype == np.float32 and nodes.shape[1] * nodes.itemsize == 32
    assert nodes.ctypes.data % 64 == 0 and mesh.triangles.ctypes.data % 64 == 0
    inner = np.flatnonzero(links[:, COUNT] == 0)
    inner = inner[inner != 1]  # the pad row
    assert np.all(links[inner, FIRST] % 2 == 0)  # each sibling pair starts a 64-byte line
    children = np.concatenate([links[inner, FIRST], links[inner, FIRST] + 1])
    assert np.array_equal(np.sort(children), np.arange(2, len(nodes)))
    # Each child's box lies inside its parent's; each leaf's box holds its triangles.
    for parent in inner:
        for child in (links[parent, FIRST], links[parent, FIRST] + 1):
            assert np.all(nodes[child, :3] >= nodes[parent, :3]) and np.all(nodes[child, 3:6] <= nodes[parent, 3:6])
    leaves = np.flatnonzero(links[:, COUNT] > 0)
    for leaf in leaves:
        tris = mesh.triangles[links[leaf, FIRST]:links[leaf, FIRST] + links[leaf, COUNT]].reshape(-1, 3)
        assert np.all(tris > nodes[leaf, :3]) and np.all(tris < nodes[leaf, 3:6])


def test_outward_rounding_never_shrinks_a_box():
    rng = np.random.default_rng(0)
    bounds = np.concatenate([rng.normal(size=(1000, 3)), rng.normal(size=(1000, 3)) + 5], axis=1) * 1e3
    rounded = outward_float32(bounds).astype(np.float64)
    assert np.all(rounded[:, :3] < bounds[:, :3]) and np.all(rounded[:, 3:] > bounds[:, 3:])
    exact = np.array([[0.0, 1.0, -1.0, 2.0, 3.0, 4.0]])
    padded = outward_float32(exact, ulps=2)
    assert np.all(padded[0, :3] == np.nextafter(np.nextafter(exact[0, :3].astype(np.float32), -np.inf), -np.inf))


def test_aligned_empty():
    for shape in [(3, 8), (1, 9), (7,)]:
        array = aligned_empty(shape, np.float32)
        assert array.shape == shape and array.ctypes.data % 64 == 0 and array.flags.c_contiguous
