"""Every kind of query the service makes, run once on small inputs, so that
numba compiles (or loads from its cache) every kernel before the first request.

The service runs it at start-up before ``/ready`` turns 200 (see
``service.app``); ``docker/warmup.py`` runs it at image build time to fill
numba's cache, splitting it into independent groups (:func:`group`) that
compile in parallel processes.

It drives the public API the way the service does: meshes and a glTF scene
loaded from ``sample_meshes``, analytic shapes, closest hits (with and
without back-face culling), occlusion, every-hit queries and frustum
selections that cut through objects, each with few rays, triangles or
objects (the serial kernels) and many (the parallel ones); on a scene built
in memory and on the same scene saved and memory-mapped back (numba compiles
read-only arrays separately); camera rays from perspective and orthographic
cameras; and, for the image build only, a bare ``bvh.MeshBVH``.
"""

from __future__ import annotations

import tempfile

import numpy as np

#: More rays than ``SERIAL_BATCH`` of bvh.scene and bvh.mesh_bvh: the parallel kernels run.
MANY = 300

#: More objects than ``bvh.frustum.BLOCK``: the parallel box test of a selection runs.
CROWD = 2100


def _shift(x: float, y: float = 0.0, z: float = 0.0) -> np.ndarray:
    matrix = np.eye(4)
    matrix[:3, 3] = [x, y, z]
    return matrix


def _rays(bounds, n: int, rng: np.random.Generator):
    """Rays from above and aside a box, aimed at random points inside it."""
    lo, hi = np.asarray(bounds, dtype=np.float64)
    span = np.maximum(hi - lo, 1e-3)
    targets = lo + rng.random((n, 3)) * span
    origins = targets + np.array([0.1, 0.2, 1.0]) * (2.0 * span.max() + 1.0)
    return origins, targets - origins


def _query(scene, rng: np.random.Generator, kinds=("closest", "occluded", "all")) -> None:
    for n in (1, 8, MANY):
        origins, directions = _rays(scene.bounds, n, rng)
        if "closest" in kinds:
            scene.intersect(origins, directions)
            scene.intersect(origins, directions, cull_backfaces=True, tmax=1e6)
        if "occluded" in kinds:
            scene.occluded(origins, directions)
        if "all" in kinds:
            scene.intersect_all(origins, directions)


def _camera_on(bounds):
    import bvh

    lo, hi = np.asarray(bounds, dtype=np.float64)
    centre, size = (lo + hi) / 2, max(float(np.linalg.norm(hi - lo)), 1e-3)
    return bvh.Camera.pinhole(centre + [0.3 * size, -0.4 * size, 0.8 * size], centre, [0.0, 0.0, 1.0],
                              50.0, 64, 48)


def _select(scene, rng: np.random.Generator, each_object: bool = True, pick: bool = True) -> None:
    """Camera picks and selections whose frusta cut through objects, so that
    the exact per-triangle tests run (an object wholly inside or outside a
    frustum is settled by its box alone)."""
    targets = [(info.bounds, [info.id]) for info in scene.objects if info.kind == "mesh"] if each_object else []
    for bounds, objects in targets + [(scene.bounds, None)]:
        camera = _camera_on(bounds)
        for n in (1, MANY):
            origins, directions = camera.rays(rng.random((n, 2)) * [64, 48])
            if pick:
                scene.intersect(origins, directions)
        for mode in ("objects", "triangles"):
            scene.select(camera.frustum((0, 0, 32, 48)), mode=mode, objects=objects)
            scene.select(camera.frustum(), mode=mode)


def _sample_scene():
    """Every sample file side by side in one scene, and one shape of each kind."""
    import bvh
    import sample_meshes

    scene = bvh.Scene()
    for k, name in enumerate(sample_meshes.ALL):
        scene.add_scene(bvh.load(sample_meshes.path(name)), transform=_shift(400.0 * k))
    scene.add_shape("sphere", _shift(-10.0), name="ball", radius=0.5)
    scene.add_shape("box", _shift(-11.0), name="crate", size=[1.0, 2.0, 0.5])
    scene.add_shape("quad", _shift(-12.0), name="card", size=[1.0, 1.0])
    scene.add_shape("polygon", _shift(-13.0), name="sign",
                    vertices=[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.5, 1.0, 0.0]])
    return scene


def _crowd():
    """More than ``bvh.frustum.BLOCK`` one-triangle objects."""
    import bvh

    crowd = bvh.Scene()
    triangle = crowd.add_mesh([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], [[0, 1, 2]])
    for k in range(CROWD):
        crowd.add_instance(triangle, _shift(2.0 * (k % 50), 2.0 * (k // 50)))
    return crowd


def _bare_mesh(rng: np.random.Generator) -> None:
    import trimesh

    import bvh

    torus = trimesh.creation.torus(1.0, 0.3)
    bare = bvh.build(np.asarray(torus.vertices), np.asarray(torus.faces))
    for n in (1, 8, MANY):
        origins, directions = _rays(bare.bounds, n, rng)
        bare.intersect(origins, directions)
        bare.intersect(origins, directions, cull_backfaces=True)
        bare.occluded(origins, directions)
        bare.intersect_all(origins, directions)


def _orthographic(rng: np.random.Generator) -> None:
    import bvh

    camera = bvh.Camera.from_matrices(np.eye(4), np.diag([0.1, 0.1, -0.01, 1.0]), 32, 32)
    for n in (1, MANY):
        camera.rays(rng.random((n, 2)) * 32)


def everything(rng: np.random.Generator, bare_mesh: bool = True) -> list:
    """The whole workload, in steps: ``(name, function)``."""
    import bvh

    state = {}

    def load():
        state["scene"] = _sample_scene()

    def edit():
        scene = state["scene"]
        first = scene.objects[0].id
        scene.set_transform(first, _shift(-20.0))
        _query(scene, rng)
        scene.remove(first)
        _query(scene, rng)

    def crowd():
        crowd = _crowd()
        _query(crowd, rng)
        _select(crowd, rng, each_object=False)

    def saved():
        # The service keeps scenes on disk and opens them by memory map.
        with tempfile.TemporaryDirectory() as directory:
            state["scene"].save(directory)
            opened = bvh.Scene.open(directory)
            _query(opened, rng)
            _select(opened, rng)
            mesh = next(info.mesh for info in opened.objects if info.kind == "mesh")
            opened.add_instance(mesh, _shift(-30.0))
            _query(opened, rng)
            del opened

    return [("load sample meshes and build", load), ("scene queries", lambda: _query(state["scene"], rng)),
            ("camera picks and selections", lambda: _select(state["scene"], rng)), ("edits", edit),
            (f"{CROWD} objects", crowd), ("saved and memory-mapped scene", saved),
            ("orthographic camera", lambda: _orthographic(rng))] + (
        [("bare MeshBVH", lambda: _bare_mesh(rng))] if bare_mesh else [])


def group(name: str, rng: np.random.Generator) -> None:
    """One independent share of the compiling, for a process of its own."""
    if name in ("closest", "occluded", "all"):
        _query(_sample_scene(), rng, kinds=(name,))
    elif name == "select":
        _select(_sample_scene(), rng, pick=False)
        _select(_crowd(), rng, each_object=False, pick=False)
        _orthographic(rng)
    elif name == "mesh":
        _bare_mesh(rng)
    else:
        raise ValueError(f"no warm-up group {name!r}")
