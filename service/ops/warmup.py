"""Every kind of query the service makes, run once on small inputs, so that
numba compiles (or loads from its cache) every kernel before requests need it.

The work comes in steps (:func:`stages`), in two stages:

- the **pick path** — building a scene (uploads), single picks, batch picks,
  camera picks, on a scene saved and memory-mapped back as the service keeps
  them — which the service runs at start-up before ``/ready`` turns 200; its
  scene is made in numpy (:func:`_generated_scene`), not read from files, so
  that a restart does not wait for trimesh's import;
- the **rest** — the sample files read by the loader, occlusion, every-hit
  picks, selections, edits, proximity queries, scenes of thousands of
  objects — which it runs afterwards on a background thread.

:class:`ServiceWarmUp` runs them for the service, with a log line per step.
``docker/warmup.py`` runs all of it (:func:`everything`) at image build time
to fill numba's cache, splitting it into independent groups (:func:`group`)
that compile in parallel processes. ``python -m service.ops.warmup STEP`` runs one
step of the pick path in a process of its own: on a cold cache the service
starts one for the single-pick kernel, so that the two big pick kernels
compile side by side on two cores.

It drives the public API the way the service does: meshes and a glTF scene
loaded from ``sample_meshes``, analytic shapes, closest hits (with and
without back-face culling), occlusion, every-hit queries and frustum
selections that cut through objects, each with few rays, triangles or
objects (the serial kernels) and many (the parallel ones); camera rays from
perspective and orthographic cameras; and, for the image build only, a bare
``bvh.MeshBVH``. Every array reaches the kernels read-only, whether the scene
was built in memory or memory-mapped from disk, so each kernel compiles once.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import pkgutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

#: More rays than ``bvh._jit.SERIAL_BATCH``: the parallel kernels run.
MANY = 300

#: More objects than ``bvh.queries.frustum.BLOCK``: the parallel box test of a selection runs.
CROWD = 2100

#: The step of the pick path a second process compiles on a cold cache
#: (:class:`ServiceWarmUp`), beside the batch-pick kernel in the service's.
HELPER_STEP = "single picks"

#: What a start costs on a 2-core machine (35 s measured idle, longer when busy): said by
#: ``/ready`` while a cold start compiles.
FIRST_START = "a first start compiles for about 35 s on 2 idle cores, later starts take about 2 s"

#: Seconds between "still compiling" log lines while one step runs.
HEARTBEAT_SECONDS = 15.0

log = logging.getLogger("service")


class Step(NamedTuple):
    """One step of the warm-up: a name for the log and the work."""

    name: str
    run: Callable[[], None]


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


def _query(scene, rng: np.random.Generator, kinds=("closest", "occluded", "all"), counts=(1, 8, MANY)) -> None:
    for n in counts:
        origins, directions = _rays(scene.bounds, n, rng)
        if "closest" in kinds:
            scene.intersect(origins, directions)
            scene.intersect(origins, directions, cull_backfaces=True, tmax=1e6)
        if "occluded" in kinds:
            scene.occluded(origins, directions)
        if "all" in kinds:
            scene.intersect_all(origins, directions)


#: A concave lasso over the left part of a 64 x 48 image.
LASSO = [[2.0, 2.0], [40.0, 6.0], [20.0, 20.0], [44.0, 44.0], [4.0, 40.0]]


def _camera_on(bounds):
    import bvh

    lo, hi = np.asarray(bounds, dtype=np.float64)
    centre, size = (lo + hi) / 2, max(float(np.linalg.norm(hi - lo)), 1e-3)
    return bvh.Camera.pinhole(centre + [0.3 * size, -0.4 * size, 0.8 * size], centre, [0.0, 0.0, 1.0],
                              50.0, 64, 48)


def _camera_picks(scene, rng: np.random.Generator) -> None:
    """Camera picks of one and of many pixels, from perspective and orthographic cameras."""
    import bvh

    orthographic = bvh.Camera.from_matrices(np.eye(4), np.diag([0.1, 0.1, -0.01, 1.0]), 64, 48)
    for camera in (_camera_on(scene.bounds), orthographic):
        for n in (1, MANY):
            origins, directions = camera.rays(rng.random((n, 2)) * [64, 48])
            scene.intersect(origins, directions)
        # The ID buffer: the perspective camera's rays made in the kernel, the orthographic one's given.
        scene.id_buffer(camera, normals=True, barycentrics=True)


def _select(scene, rng: np.random.Generator, each_object: bool = True, pick: bool = True) -> None:
    """Camera picks and selections whose frusta cut through objects, so that
    the exact per-triangle tests run (an object wholly inside or outside a
    frustum is settled by its box alone); lassos likewise."""
    import bvh

    targets = [(info.bounds, [info.id]) for info in scene.objects if info.kind == "mesh"] if each_object else []
    for bounds, objects in targets + [(scene.bounds, None)]:
        camera = _camera_on(bounds)
        for n in (1, MANY):
            origins, directions = camera.rays(rng.random((n, 2)) * [64, 48])
            if pick:
                scene.intersect(origins, directions)
        for mode in ("objects", "triangles"):
            for containment in ("crossing", "window"):
                scene.select(camera.frustum((0, 0, 32, 48)), mode=mode, objects=objects, containment=containment)
                scene.select(camera.frustum(), mode=mode, containment=containment)
                # A lasso: its faces' test, serial and (on a big mesh) parallel.
                scene.select(mode=mode, objects=objects, containment=containment, lasso=bvh.Lasso(camera, LASSO))
        bvh.Lasso(camera, LASSO).pixels(2)


def _with_shapes(scene):
    """``scene`` with one analytic shape of each kind added."""
    scene.add_shape("sphere", _shift(-10.0), name="ball", radius=0.5)
    scene.add_shape("box", _shift(-11.0), name="crate", size=[1.0, 2.0, 0.5])
    scene.add_shape("quad", _shift(-12.0), name="card", size=[1.0, 1.0])
    scene.add_shape("polygon", _shift(-13.0), name="sign",
                    vertices=[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.5, 1.0, 0.0]])
    return scene


def _sample_scene():
    """Every sample file side by side in one scene, and one shape of each kind."""
    import bvh
    import sample_meshes

    scene = bvh.Scene()
    for k, name in enumerate(sample_meshes.ALL):
        scene.add_scene(bvh.load(sample_meshes.path(name)), transform=_shift(400.0 * k))
    return _with_shapes(scene)


def _generated_scene():
    """A scene like :func:`_sample_scene`'s, made in numpy: a heightfield with
    texture coordinates and normals, a torus placed three times (one mirrored),
    one shape of each kind. The pick path's warm-up builds it instead of
    reading the sample files, which would import trimesh (about 0.4 s before
    ``/ready``); the sample files are read by a background step."""
    import bvh

    scene = bvh.Scene()
    side = 16
    x, y = np.meshgrid(np.linspace(0.0, 10.0, side), np.linspace(0.0, 10.0, side), indexing="ij")
    vertices = np.stack([x.ravel(), y.ravel(), np.sin(x.ravel()) * np.cos(y.ravel())], axis=1)
    cell = (np.arange(side - 1)[:, None] * side + np.arange(side - 1)[None, :]).ravel()
    faces = np.concatenate([np.stack([cell, cell + side, cell + 1], axis=1),
                            np.stack([cell + 1, cell + side, cell + side + 1], axis=1)]).astype(np.int64)
    normals = np.tile([0.0, 0.0, 1.0], (len(vertices), 1))
    # Read-only, as the loader's vertices of an OBJ, PLY or STL are (a glTF's
    # are writable, as the torus's): the kernels are specialised to both.
    vertices.setflags(write=False)
    terrain = scene.add_mesh(vertices, faces, normals=normals, uvs=vertices[:, :2] / 10.0, name="terrain")
    scene.add_instance(terrain, name="ground")
    angle = np.linspace(0.0, 2.0 * np.pi, 24, endpoint=False)
    ring, tube = np.meshgrid(angle, angle[:12] * 2.0, indexing="ij")
    radius = 1.0 + 0.3 * np.cos(tube)
    torus_vertices = np.stack([(radius * np.cos(ring)).ravel(), (radius * np.sin(ring)).ravel(),
                               (0.3 * np.sin(tube)).ravel()], axis=1)
    i, j = np.meshgrid(np.arange(24), np.arange(12), indexing="ij")
    a, b = (i * 12 + j).ravel(), (((i + 1) % 24) * 12 + j).ravel()
    c, d = (i * 12 + (j + 1) % 12).ravel(), (((i + 1) % 24) * 12 + (j + 1) % 12).ravel()
    torus_faces = np.concatenate([np.stack([a, b, d], axis=1), np.stack([a, d, c], axis=1)]).astype(np.int64)
    torus = scene.add_mesh(torus_vertices, torus_faces, name="torus")
    for k, transform in enumerate((_shift(20.0), _shift(30.0), np.diag([-1.0, 1.0, 1.0, 1.0]) @ _shift(40.0))):
        scene.add_instance(torus, transform, name=f"torus{k}")
    return _with_shapes(scene)


def _proximity(scene, rng: np.random.Generator) -> None:
    """Closest points, sphere casts, containment and signed distances (few and many), and
    overlaps of every kind of region, in both modes."""
    lo, hi = np.asarray(scene.bounds, dtype=np.float64)
    centre, size = (lo + hi) / 2, max(float(np.linalg.norm(hi - lo)), 1e-3)
    for n in (1, MANY):
        scene.closest_point(lo + rng.random((n, 3)) * (hi - lo))
        origins, directions = _rays(scene.bounds, n, rng)
        scene.sphere_cast(origins, directions, 0.01 * size)
        inside = lo + rng.random((n, 3)) * (hi - lo)
        scene.contains(inside)
        scene.signed_distance(inside)
    regions = [{"kind": "sphere", "center": centre, "radius": 0.1 * size},
               {"kind": "aabb", "min": centre - 0.1 * size, "max": centre + 0.1 * size},
               {"kind": "obb", "center": centre, "axes": np.eye(3), "half_size": [0.1 * size] * 3},
               {"kind": "capsule", "a": lo, "b": hi, "radius": 0.01 * size},
               {"kind": "convex", "planes": [[1.0, 0.0, 0.0, -float(centre[0])]]}]
    for region in regions:
        scene.overlap(region)
        scene.overlap(region, triangles=True)


def _crowd():
    """More than ``bvh.queries.frustum.BLOCK`` one-triangle objects."""
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


def _line_point_picks(rng: np.random.Generator) -> None:
    """Picks of a scene holding lines and points (``bvh.queries.lines_points``' kernel), one ray and many."""
    import bvh

    scene = bvh.Scene()
    scene.add_instance(scene.add_mesh([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], [[0, 1, 2]]))
    scene.add_shape("sphere", radius=0.2, transform=_shift(3.0))
    scene.add_instance(lines=scene.add_lines(rng.random((8, 3)), [[0, 1], [2, 3], [4, 5], [6, 7]]))
    scene.add_instance(points=scene.add_points(rng.random((16, 3))))
    for n in (1, MANY):
        origins, directions = _rays(scene.bounds, n, rng)
        scene.intersect(origins, directions, line_tolerance=0.05, point_tolerance=0.05, point_slope=0.001)


def _orthographic(rng: np.random.Generator) -> None:
    import bvh

    camera = bvh.Camera.from_matrices(np.eye(4), np.diag([0.1, 0.1, -0.01, 1.0]), 32, 32)
    for n in (1, MANY):
        camera.rays(rng.random((n, 2)) * 32)


def stages(rng: np.random.Generator) -> tuple[list[Step], list[Step]]:
    """The warm-up in steps: ``(pick path, rest)``.

    The first step builds the sample scene, saves it to a temporary
    directory and opens it back memory-mapped, as the service keeps its
    scenes; the later steps query that scene, so they must run in order.
    """
    import bvh

    state = {}

    def build(make):
        def saved_and_opened():
            scene = make()
            with tempfile.TemporaryDirectory() as directory:
                scene.save(directory)
                # The memory maps stay valid once the directory is gone.
                state["scene"] = bvh.Scene.open(directory)

        return saved_and_opened

    def edits():
        # An edit of a saved scene gives an in-memory pack beside memory-mapped ones.
        scene = state["scene"]
        mesh = next(info.mesh for info in scene.objects if info.kind == "mesh")
        scene.add_instance(mesh, _shift(-30.0))
        first = scene.objects[0].id
        # As the routes move objects: set_transforms, whose small moves take one compiled call.
        scene.set_transforms([first], _shift(-20.0)[None])
        _query(scene, rng)
        scene.remove(first)
        _query(scene, rng)

    def selections():
        _select(scene(), rng)
        state["crowd"] = _crowd()
        _select(state["crowd"], rng, each_object=False)

    def scene():
        return state["scene"]

    # Batch picks before single picks: on a cold cache a second process
    # compiles the single-pick kernel meanwhile (HELPER_STEP), and this one
    # then loads it.
    pick_path = [Step("building scenes", build(_generated_scene)),
                 Step("batch picks", lambda: _query(scene(), rng, ("closest",), counts=(MANY,))),
                 Step(HELPER_STEP, lambda: _query(scene(), rng, ("closest",), counts=(1, 8))),
                 Step("camera picks", lambda: _camera_picks(scene(), rng))]
    # The cheapest first, so that most kinds of request stop waiting soonest:
    # selections take seconds to compile, every-hit picks over a minute.
    # The sample files (the loader, trimesh) come first: the later steps query their scene.
    rest = [Step("reading the sample files", build(_sample_scene)),
            Step("selections", selections),
            Step("occlusion", lambda: _query(scene(), rng, ("occluded",))),
            Step("every-hit picks", lambda: _query(scene(), rng, ("all",))),
            Step(f"queries over {CROWD} objects", lambda: _query(state["crowd"], rng)),
            Step("edits", edits),
            Step("proximity queries", lambda: _proximity(scene(), rng)),
            Step("orthographic camera", lambda: _orthographic(rng)),
            Step("line and point picks", lambda: _line_point_picks(rng))]
    return pick_path, rest


def everything(rng: np.random.Generator, bare_mesh: bool = True) -> list[Step]:
    """The whole workload, in steps, the pick path first."""
    pick_path, rest = stages(rng)
    return pick_path + rest + ([Step("bare MeshBVH", lambda: _bare_mesh(rng))] if bare_mesh else [])


def pick_step_alone(name: str, rng: np.random.Generator) -> None:
    """Build the scene and run one named step of the pick path, for a process of its own."""
    pick_path, _ = stages(rng)
    steps = {step.name: step for step in pick_path}
    if name not in steps:
        raise ValueError(f"no pick-path step {name!r}")
    pick_path[0].run()
    steps[name].run()


def group(name: str, rng: np.random.Generator) -> None:
    """One independent share of the compiling, for a process of its own."""
    if name in ("closest", "occluded", "all"):
        _query(_sample_scene(), rng, kinds=(name,))
    elif name == "select":
        _select(_sample_scene(), rng, pick=False)
        _select(_crowd(), rng, each_object=False, pick=False)
        _orthographic(rng)
    elif name == "proximity":
        _proximity(_sample_scene(), rng)
    elif name == "mesh":
        _bare_mesh(rng)
    elif name == "lines":
        _line_point_picks(rng)
    else:
        raise ValueError(f"no warm-up group {name!r}")


def dispatchers(imported_only: bool = False) -> list:
    """``(qualified name, dispatcher)`` of every numba function defined in ``bvh``.

    With ``imported_only``, only of the modules this process has imported:
    a kernel of a module not imported has compiled and loaded nothing, and
    importing them all (``bvh.trimesh`` brings trimesh) cost the start-up
    some 0.4 s before ``/ready``.
    """
    from numba.core.registry import CPUDispatcher

    import bvh

    found = {}
    for info in pkgutil.walk_packages(bvh.__path__, "bvh."):
        module = sys.modules.get(info.name) if imported_only else importlib.import_module(info.name)
        for name, value in vars(module).items() if module is not None else ():
            if isinstance(value, CPUDispatcher) and value.py_func.__module__ == info.name:
                found[f"{info.name}.{name}"] = value
    return sorted(found.items())


def cache_counts() -> tuple[int, int]:
    """``(compiled, loaded)``: kernel signatures this process has compiled, and
    loaded from numba's cache, so far."""
    compiled = loaded = 0
    for _, dispatcher in dispatchers(imported_only=True):
        compiled += sum(dispatcher.stats.cache_misses.values())
        loaded += sum(dispatcher.stats.cache_hits.values())
    return compiled, loaded


def cache_is_cold() -> bool:
    """Whether numba's cache holds no single-pick kernel yet, i.e. this start
    compiles rather than loads (a guess from the cache's index file, made
    before anything is compiled; :func:`cache_counts` tells afterwards)."""
    from bvh.queries import scene_rays as scene_kernels

    try:
        index = Path(scene_kernels.closest_hits_serial._cache._cache_file._index_path)
    except AttributeError:
        # numba changed its private cache layout: assume warm, which only
        # means that no second process helps compiling.
        return False
    return not index.is_file()


def process_age() -> float:
    """Seconds since this process started (Linux: from ``/proc``), or 0.0 where
    that cannot be read: what a start costs as its user sees it, imports and
    the sample scenes included."""
    try:
        with open("/proc/self/stat") as stat:
            # The fields after the command name (in parentheses, which may hold spaces).
            started_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as uptime:
            since_boot = float(uptime.read().split()[0])
        return max(since_boot - started_ticks / os.sysconf("SC_CLK_TCK"), 0.0)
    except (OSError, ValueError, IndexError):
        return 0.0


class ServiceWarmUp:
    """The service's warm-up: the pick path (:meth:`pick_path`), then the
    rest (:meth:`rest`), each step announced on the log and in the store's
    ``waiting_for`` (before ``/ready``) or ``compiling`` (after).

    On a cold cache with more than one CPU, a second process compiles the
    single-pick kernel (:data:`HELPER_STEP`) while this one compiles the
    batch-pick kernel, and this one then loads it from numba's cache.

    Parameters
    ----------
    store : service.store.SceneStore
        Told what start-up is doing.
    started : float
        ``time.perf_counter()`` when the process started: the log's elapsed seconds.
    stopping : threading.Event
        Set when the service shuts down: no further step starts.
    """

    def __init__(self, store, started: float, stopping: threading.Event):
        self.store = store
        self.started = started
        self.stopping = stopping
        self.first, self.second = stages(np.random.default_rng(0))
        self.total = len(self.first) + len(self.second)
        self.cold = cache_is_cold()
        # Counts since this warm-up began: the process may have compiled or loaded kernels before it.
        self.counted_from = cache_counts()
        self.doing = "compiling kernels" if self.cold else "loading kernels from numba's cache"

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def pick_path(self) -> bool:
        """Warm the pick path; False when shutdown stopped it first."""
        helper = self._start_helper() if self.cold and (os.cpu_count() or 1) > 1 else None
        try:
            for number, step in enumerate(self.first, 1):
                if self.stopping.is_set():
                    return False
                if step.name == HELPER_STEP and helper is not None:
                    self._wait_for(helper)
                    if helper.returncode is None:
                        return False  # shutdown came first: the finally clause ends the helper
                    helper = None
                self.store.waiting_for = (f"{self.doing} (step {number} of {self.total}: {step.name})"
                                          + (f"; {FIRST_START}" if self.cold else ""))
                self._run(number, step, "")
        finally:
            if helper is not None:
                helper.kill()
                helper.wait()
        return True

    def rest(self) -> None:
        """Warm everything else (run after ``/ready`` turns 200); logs when done."""
        if not self.second:
            self.store.compiling = None
            return
        begun = time.perf_counter()
        before, _ = self.counts()
        for number, step in enumerate(self.second, len(self.first) + 1):
            if self.stopping.is_set():
                self.store.compiling = None
                return
            self.store.compiling = self.compiling(number)
            self._run(number, step, " in the background")
        self.store.compiling = None
        compiled, loaded = self.counts()
        log.info("all kernels ready in %.1f s (the background steps took %.1f s: %s; %d kernel signatures "
                 "compiled, %d loaded from numba's cache in all)", self.elapsed(), time.perf_counter() - begun,
                 ", ".join(step.name for step in self.second), compiled, loaded)
        if compiled > before:
            log.info("the next start loads them from numba's cache in about 2 s")

    def compiling(self, number: int | None = None) -> str | None:
        """What ``/ready`` says still compiles at background step ``number``
        (default: the first); None when there is no such step."""
        number = number or len(self.first) + 1
        if not len(self.first) < number <= self.total:
            return None
        return (f"{self.doing} (step {number} of {self.total}: {self.second[number - len(self.first) - 1].name}); "
                f"a request that needs a kernel not {'compiled' if self.cold else 'loaded'} yet waits for it")

    def counts(self) -> tuple[int, int]:
        """``(compiled, loaded)`` kernel signatures since this warm-up began."""
        compiled, loaded = cache_counts()
        return compiled - self.counted_from[0], loaded - self.counted_from[1]

    def summary(self) -> str:
        """How the pick path's kernels came, for the ready line."""
        compiled, loaded = self.counts()
        if compiled:
            return (f"kernels for picks compiled, cold cache: {compiled} kernel signatures compiled, {loaded} "
                    "loaded from numba's cache; the other kernels compile in the background")
        return f"kernels for picks loaded from numba's cache ({loaded} kernel signatures)"

    def _run(self, number: int, step: Step, where: str) -> None:
        """Run one step with its log lines. On a cold cache each step is
        announced; on a warm one the steps take milliseconds, so only a step
        that compiled what the cache lacked (a start stopped half-way before)
        is reported."""
        log.log(logging.INFO if self.cold else logging.DEBUG, "%s: step %d/%d %s%s (%.1f s elapsed)", self.doing,
                number, self.total, step.name, where, self.elapsed())
        heartbeat = "still compiling kernels: step %d/%d %s%s (%.1f s elapsed)" if self.cold else \
            "still at step %d/%d %s%s (%.1f s elapsed): compiling what numba's cache lacks"
        before, _ = cache_counts()
        with self._heartbeat(heartbeat, number, self.total, step.name, where):
            step.run()
        compiled = cache_counts()[0] - before
        if compiled and not self.cold:
            log.info("step %d/%d %s%s (%.1f s elapsed): compiled %d kernel signatures numba's cache lacked", number,
                     self.total, step.name, where, self.elapsed(), compiled)

    @contextlib.contextmanager
    def _heartbeat(self, line: str, *arguments):
        """A log line every :data:`HEARTBEAT_SECONDS` while the block runs
        (``line % (*arguments, elapsed seconds)``)."""
        done = threading.Event()

        def beat():
            while not done.wait(HEARTBEAT_SECONDS):
                log.info(line, *arguments, self.elapsed())

        beater = threading.Thread(target=beat, name="warm-up heartbeat", daemon=True)
        beater.start()
        try:
            yield
        finally:
            done.set()
            beater.join()

    def _start_helper(self) -> subprocess.Popen | None:
        try:
            helper = subprocess.Popen([sys.executable, "-m", "service.ops.warmup", HELPER_STEP],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        except OSError as error:
            log.warning("could not start a second process to compile the %s kernel (%s): compiling it here",
                        HELPER_STEP, error)
            return None
        log.info("%s: a second process (pid %d) compiles the %s kernel meanwhile", self.doing, helper.pid,
                 HELPER_STEP)
        return helper

    def _wait_for(self, helper: subprocess.Popen) -> None:
        if helper.poll() is None:
            log.info("%s: waiting for the second process to finish the %s kernel (%.1f s elapsed)", self.doing,
                     HELPER_STEP, self.elapsed())
        while True:
            try:
                _, errors = helper.communicate(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                if self.stopping.is_set():
                    # Shutting down: the kernel is no longer wanted (pick_path kills the helper).
                    return
        if helper.returncode != 0:
            last = errors.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
            log.warning("the second process compiling the %s kernel failed (exit status %d: %s): compiling it here",
                        HELPER_STEP, helper.returncode, last[0])


def _exit_with_parent(interval: float = 0.5) -> None:
    """End this process when the one that started it is gone (a helper
    compiling for a service killed with SIGKILL must not live on)."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(1)

    threading.Thread(target=watch, name="parent watch", daemon=True).start()


if __name__ == "__main__":
    _exit_with_parent()
    pick_step_alone(" ".join(sys.argv[1:]), np.random.default_rng(0))
