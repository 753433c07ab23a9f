"""Generated glTF files with alpha-tested materials, and what they hold, for
the alpha tests, the reference and ``bench.alpha``.

:func:`write_glb` writes a GLB from plain arrays (numpy for the buffers,
Pillow for the PNG textures), as glTF 2.0 lays it out; the scenes below keep
every card's texels on a grid of 1/8 so that rays aimed at texel centres are
far (half a texel) from every texel border, and so decide the same in any
rounding.
"""

import io
import json
import struct

import numpy as np
from PIL import Image

from bvh import AlphaMaterial, MeshAlpha

TEXELS = 8
"""Every generated mask is TEXELS x TEXELS; a unit card's texel is 1/8 wide."""


def checkerboard(n: int = TEXELS, low: int = 0, high: int = 255) -> np.ndarray:
    """(n, n) uint8: ``high`` where row + column is even, else ``low``."""
    rows, columns = np.indices((n, n))
    return np.where((rows + columns) % 2 == 0, high, low).astype(np.uint8)


def leaf_mask(seed: int, n: int = TEXELS) -> np.ndarray:
    """(n, n) uint8 of a leafy blob: opaque discs on transparent, with some
    texels of intermediate alpha (for BLEND cutoffs)."""
    rng = np.random.default_rng(seed)
    rows, columns = np.indices((n, n)) + 0.5
    alpha = np.zeros((n, n))
    for _ in range(3):
        cy, cx = rng.uniform(n / 8, n - n / 8, 2)
        radius = rng.uniform(1.5, 3.0) * n / 8
        alpha = np.maximum(alpha, np.clip(1.5 - np.hypot(rows - cy, columns - cx) / radius, 0, 1))
    return np.round(alpha * 255).astype(np.uint8)


def quad(x0: float, y0: float, z: float, width: float = 1.0, height: float = 1.0,
         st=((0.0, 0.0), (1.0, 1.0))) -> dict:
    """A quad in the plane ``z`` over ``[x0, x0 + width] x [y0, y0 + height]``,
    facing +z, its texture coordinates running from ``st[0]`` at the top left
    (``x0``, ``y0 + height``) to ``st[1]`` at the bottom right, as glTF puts
    (0, 0) at the image's top left."""
    (s0, t0), (s1, t1) = st
    positions = np.array([[x0, y0, z], [x0 + width, y0, z], [x0 + width, y0 + height, z], [x0, y0 + height, z]])
    texcoords = np.array([[s0, t1], [s1, t1], [s1, t0], [s0, t0]])
    return {"positions": positions, "indices": np.array([[0, 1, 2], [0, 2, 3]]), "texcoords": {0: texcoords}}


def foliage(cards: int, seed: int, masks: int = 8, texels: int = 64, spread: float = 5.0,
            ground=(-20.0, -20.0, -6.0, 40.0), mode: str = "MASK"):
    """``(vertices, faces, alpha)`` of one mesh: ``cards`` unit leaf cards, each
    turned at random (QR of a Gaussian matrix) and placed in the cube
    ``[-spread, spread]^3``, with ``masks`` leafy masks of ``texels^2`` in turn,
    and an opaque square ground ``(x0, y0, z, side)`` below them."""
    rng = np.random.default_rng(seed)
    images = [leaf_mask(seed * 1000 + k, texels) for k in range(masks)]
    vertices, faces, texcoords, face_material = [], [], [], []
    base = quad(-0.5, -0.5, 0.0)
    for k in range(cards):
        rotation, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        vertices.append(base["positions"] @ rotation.T + rng.uniform(-spread, spread, 3))
        faces.append(base["indices"] + 4 * k)
        texcoords.append(base["texcoords"][0])
        face_material.append(np.full(2, k % masks))
    x0, y0, z, side = ground
    floor = quad(x0, y0, z, side, side)
    vertices.append(floor["positions"])
    faces.append(floor["indices"] + 4 * cards)
    texcoords.append(floor["texcoords"][0])
    face_material.append(np.full(2, -1))
    alpha = MeshAlpha([AlphaMaterial(mode, mask=m) for m in images], np.concatenate(face_material),
                      np.concatenate(texcoords))
    return np.concatenate(vertices), np.concatenate(faces), alpha


def write_glb(meshes: list, materials: list, nodes: list) -> bytes:
    """A GLB of ``meshes`` (each a list of primitives: dicts of ``positions``
    (V, 3), ``indices`` (F, 3), optional ``texcoords`` {set: (V, 2)},
    ``colors`` (V, 4) and ``material``), ``materials`` (dicts of optional
    ``alphaMode``, ``alphaCutoff``, ``factor``, ``mask`` (H, W) uint8,
    ``texCoord``, ``wrapS``, ``wrapT``) and ``nodes`` (dicts of ``mesh``,
    ``translation``, ``name``)."""
    binary = bytearray()
    views, accessors = [], []

    def add_view(data: bytes) -> int:
        while len(binary) % 4:
            binary.append(0)
        views.append({"buffer": 0, "byteOffset": len(binary), "byteLength": len(data)})
        binary.extend(data)
        return len(views) - 1

    def add_accessor(array: np.ndarray, component: int, kind: str) -> int:
        dtype = {5126: "<f4", 5125: "<u4"}[component]
        data = np.ascontiguousarray(array, dtype)
        entry = {"bufferView": add_view(data.tobytes()), "componentType": component, "count": int(data.shape[0]),
                 "type": kind}
        if kind == "VEC3" and component == 5126:
            entry.update(min=data.min(axis=0).tolist(), max=data.max(axis=0).tolist())
        accessors.append(entry)
        return len(accessors) - 1

    gltf_meshes = []
    for k, primitives in enumerate(meshes):
        entries = []
        for primitive in primitives:
            attributes = {"POSITION": add_accessor(primitive["positions"], 5126, "VEC3")}
            for number, texcoords in primitive.get("texcoords", {}).items():
                attributes[f"TEXCOORD_{number}"] = add_accessor(texcoords, 5126, "VEC2")
            if primitive.get("colors") is not None:
                attributes["COLOR_0"] = add_accessor(primitive["colors"], 5126, "VEC4")
            entry = {"attributes": attributes,
                     "indices": add_accessor(np.asarray(primitive["indices"]).reshape(-1), 5125, "SCALAR")}
            if primitive.get("material") is not None:
                entry["material"] = primitive["material"]
            entries.append(entry)
        gltf_meshes.append({"name": f"mesh{k}", "primitives": entries})

    gltf_materials, textures, images, samplers = [], [], [], []
    for material in materials:
        entry = {"pbrMetallicRoughness": {"baseColorFactor": [1.0, 1.0, 1.0, material.get("factor", 1.0)]}}
        if "alphaMode" in material:
            entry["alphaMode"] = material["alphaMode"]
        if "alphaCutoff" in material:
            entry["alphaCutoff"] = material["alphaCutoff"]
        if material.get("mask") is not None:
            mask = np.asarray(material["mask"], np.uint8)
            rgba = np.zeros(mask.shape + (4,), np.uint8)
            rgba[..., 1] = 160
            rgba[..., 3] = mask
            png = io.BytesIO()
            Image.fromarray(rgba, "RGBA").save(png, format="PNG")
            images.append({"bufferView": add_view(png.getvalue()), "mimeType": "image/png"})
            samplers.append({"wrapS": material.get("wrapS", 10497), "wrapT": material.get("wrapT", 10497),
                             "magFilter": 9728, "minFilter": 9728})
            textures.append({"source": len(images) - 1, "sampler": len(samplers) - 1})
            entry["pbrMetallicRoughness"]["baseColorTexture"] = {"index": len(textures) - 1,
                                                                 "texCoord": material.get("texCoord", 0)}
        gltf_materials.append(entry)

    document = {"asset": {"version": "2.0"}, "scene": 0,
                "scenes": [{"nodes": list(range(len(nodes)))}],
                "nodes": [{"mesh": node["mesh"], "name": node.get("name", f"node{k}"),
                           "translation": list(node.get("translation", (0.0, 0.0, 0.0)))}
                          for k, node in enumerate(nodes)],
                "meshes": gltf_meshes, "accessors": accessors, "bufferViews": views,
                "buffers": [{"byteLength": len(binary)}]}
    for name, value in (("materials", gltf_materials), ("textures", textures), ("images", images),
                        ("samplers", samplers)):
        if value:
            document[name] = value
    text = json.dumps(document).encode()
    text += b" " * (-len(text) % 4)
    while len(binary) % 4:
        binary.append(0)
    total = 12 + 8 + len(text) + 8 + len(binary)
    return (struct.pack("<4sII", b"glTF", 2, total) + struct.pack("<II", len(text), 0x4E4F534A) + text
            + struct.pack("<II", len(binary), 0x004E4942) + bytes(binary))


# ------------------------------------------------------------------ scenes
#
# Each scene is returned with its "truth": per node, the world triangles,
# their texture coordinates and vertex alphas and their material (None for
# opaque), for testkit/reference/alpha.py.


def _truth(meshes, materials, nodes):
    """The world triangles of a generated file, one record per triangle:
    ``(node, face, corners (3, 3), texcoords (3, 2) or None, alphas (3,), material or None)``."""
    records = []
    for n, node in enumerate(nodes):
        offset = np.asarray(node.get("translation", (0.0, 0.0, 0.0)), np.float64)
        face = 0
        for primitive in meshes[node["mesh"]]:
            material = None if primitive.get("material") is None else materials[primitive["material"]]
            tested = material is not None and material.get("alphaMode", "OPAQUE") != "OPAQUE"
            texcoords = primitive.get("texcoords", {}).get(material.get("texCoord", 0) if material else 0)
            colors = primitive.get("colors")
            for corners in np.asarray(primitive["indices"]):
                st = None if texcoords is None else np.asarray(texcoords, np.float32)[corners].astype(np.float64)
                alphas = np.ones(3) if colors is None else np.asarray(colors, np.float64)[corners, 3]
                records.append((n, face, np.asarray(primitive["positions"], np.float64)[corners] + offset, st,
                                alphas, material if tested else None))
                face += 1
    return records


def checker_card_scene(mode: str = "MASK", cutoff: float | None = None, mask=None, wrap=(10497, 10497),
                       st=((0.0, 0.0), (1.0, 1.0)), colors=None) -> tuple[bytes, list]:
    """A unit card at z = 0 over ``[0, 1]^2`` with an alpha mask (a checkerboard
    by default) in front of an opaque wall at z = -1: node 0 the card, node 1
    the wall. Returns ``(glb bytes, truth records)``."""
    material = {"alphaMode": mode, "mask": checkerboard() if mask is None else mask, "wrapS": wrap[0],
                "wrapT": wrap[1]}
    if cutoff is not None:
        material["alphaCutoff"] = cutoff
    card = quad(0.0, 0.0, 0.0, st=st)
    card["material"] = 0
    card["colors"] = colors
    wall = quad(-1.0, -1.0, -1.0, 3.0, 3.0)
    meshes = [[card], [wall]]
    materials = [material]
    nodes = [{"mesh": 0, "name": "card"}, {"mesh": 1, "name": "wall"}]
    return write_glb(meshes, materials, nodes), _truth(meshes, materials, nodes)


def tree_scene(cards: int = 6, seed: int = 7) -> tuple[bytes, list]:
    """A tree-like card mesh in front of an opaque wall: an opaque trunk and
    ``cards`` leaf cards (MASK, each its own leafy mask; one mesh of several
    primitives, so per-face materials) at depths 0.1 .. 0.9, offset on the
    1/8 grid, and a wall at z = -1. Nodes: 0 the tree, 1 the wall, 2 the
    tree again, moved."""
    rng = np.random.default_rng(seed)
    trunk = quad(0.875, -1.0, 0.05, 0.25, 2.0)
    primitives = [trunk]
    materials = []
    for k in range(cards):
        x0, y0 = rng.integers(-4, 12, 2) / TEXELS
        card = quad(float(x0), float(y0), 0.1 + 0.8 * k / max(cards - 1, 1), 1.0, 1.0)
        card["material"] = len(materials)
        materials.append({"alphaMode": "MASK", "mask": leaf_mask(seed * 100 + k)})
        primitives.append(card)
    wall = quad(-2.0, -2.0, -1.0, 6.0, 6.0)
    meshes = [primitives, [wall]]
    # A second instance of the tree, moved on the 1/8 grid and nearer: instancing and transforms.
    nodes = [{"mesh": 0, "name": "tree"}, {"mesh": 1, "name": "wall"},
             {"mesh": 0, "name": "tree2", "translation": (0.75, -0.375, 1.0)}]
    return write_glb(meshes, materials, nodes), _truth(meshes, materials, nodes)


def grid_rays(x0: float, x1: float, y0: float, y1: float, z: float = 5.0) -> tuple[np.ndarray, np.ndarray]:
    """Rays along -z through every texel centre (the 1/8 grid offset by 1/16)
    of ``[x0, x1] x [y0, y1]``."""
    xs = np.arange(x0 * TEXELS, x1 * TEXELS) / TEXELS + 0.5 / TEXELS
    ys = np.arange(y0 * TEXELS, y1 * TEXELS) / TEXELS + 0.5 / TEXELS
    gx, gy = np.meshgrid(xs, ys)
    origins = np.column_stack([gx.ravel(), gy.ravel(), np.full(gx.size, z)])
    return origins, np.tile([0.0, 0.0, -1.0], (origins.shape[0], 1))
