"""trimesh's own ray tests, run on a chosen ray engine (``tests/test_trimesh_dropin.py``, ``bench.trimesh_suite``).

``../shared/trimesh-suite`` holds trimesh 5.2.0's tests that use ``mesh.ray``
(its README says where they come from). They are copied to a scratch
folder, never into the repository, with a ``conftest.py`` beside them that
puts the engine measured in the place of both of trimesh's: trimesh's
constructor takes ``mesh.ray`` from ``trimesh.ray.ray_pyembree`` when
``embreex`` imports and from ``trimesh.ray.ray_triangle`` otherwise, and
some tests ask for one of the two by name, so every name gets the engine
measured and every test runs on it. pytest runs them in a subprocess, which
reports each test's outcome in a JUnit XML file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

#: The suite, in ``../shared`` beside the checkout (as ``testkit/meshes.py`` finds the meshes).
SUITE = Path(__file__).resolve().parents[1].parent / "shared" / "trimesh-suite"

#: ``bvh``: ours (``bvh.trimesh``); ``ray_triangle``: trimesh's default
#: engine; ``embree``: trimesh's Embree engine (needs ``embreex``).
ENGINES = ("bvh", "ray_triangle", "embree")

#: Environment variable naming the engine to the conftest.
ENGINE_VARIABLE = "BVH_TRIMESH_SUITE_ENGINE"

CONFTEST = '''\
"""Written by the bvh project's testkit/trimesh_suite.py: runs these tests on
the ray engine named by ${variable} (one of {engines})."""

import importlib.util
import os
import sys
import types

import trimesh
import trimesh.ray
from trimesh.ray import ray_triangle

ENGINE = os.environ["{variable}"]

if ENGINE == "bvh":
    import bvh.trimesh

    bvh.trimesh.install()
    engine = bvh.trimesh.RayMeshIntersector
elif ENGINE == "embree":
    from trimesh.ray import ray_pyembree

    engine = ray_pyembree.RayMeshIntersector
elif ENGINE == "ray_triangle":
    class engine(ray_triangle.RayMeshIntersector):
        """trimesh's default engine, taking the Embree engine's arguments,
        which some tests pass."""

        def __init__(self, geometry, scale_to_box=True):
            super().__init__(geometry)
else:
    raise ValueError(f"unknown engine {{ENGINE!r}}")

# Both of trimesh's engine names give the engine measured: what the
# constructor picks, and what tests that name an engine ask for.
if not trimesh.ray.has_embree:
    stand_in = types.ModuleType("trimesh.ray.ray_pyembree")
    sys.modules[stand_in.__name__] = stand_in
    trimesh.ray.ray_pyembree = stand_in
    trimesh.ray.has_embree = True
trimesh.ray.ray_pyembree.RayMeshIntersector = engine
ray_triangle.RayMeshIntersector = engine

# test_embree_duplicate_hits returns early, testing nothing, when embreex
# does not import; a stand-in with its version makes it test the engine.
if importlib.util.find_spec("embreex") is None:
    embreex = types.ModuleType("embreex")
    embreex.__version__ = "4.4.0"
    sys.modules["embreex"] = embreex
'''


@dataclass(frozen=True)
class SuiteRun:
    """One run of the suite on one engine.

    Attributes
    ----------
    outcomes : dict
        ``{test id: "passed" | "failed" | "skipped"}``, errors counted as
        failures; ids are ``file.py::Class::test`` or ``file.py::test``.
    seconds : float
        Wall time of the subprocess.
    output : str
        pytest's output, for a failure's message.
    """

    outcomes: dict
    seconds: float
    output: str

    def count(self, outcome: str) -> int:
        return sum(1 for value in self.outcomes.values() if value == outcome)

    def with_outcome(self, outcome: str) -> set[str]:
        return {name for name, value in self.outcomes.items() if value == outcome}


def run_suite(engine: str, workdir: Path, suite: Path = SUITE, timeout: float = 1800.0) -> SuiteRun:
    """Copy ``suite`` into ``workdir`` and run it on ``engine`` (one of :data:`ENGINES`)."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    copy = Path(workdir) / f"trimesh-suite-{engine}"
    shutil.copytree(suite, copy)
    (copy / "tests" / "conftest.py").write_text(
        CONFTEST.format(variable=ENGINE_VARIABLE, engines=", ".join(ENGINES)))
    report = copy / "report.xml"
    environment = dict(os.environ, **{ENGINE_VARIABLE: engine})
    # The project's checkout first on the path, so that the subprocess
    # imports this bvh whether or not it is installed.
    project = str(Path(__file__).resolve().parents[1])
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [project, environment.get("PYTHONPATH")]))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
                           "tests"], cwd=copy, env=environment, capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - start
    output = done.stdout + done.stderr
    if not report.exists():
        raise RuntimeError(f"pytest wrote no report (exit status {done.returncode}):\n{output[-4000:]}")
    return SuiteRun(_outcomes(report), seconds, output)


def _outcomes(report: Path) -> dict:
    outcomes = {}
    for case in ElementTree.parse(report).iter("testcase"):
        module = case.get("classname", "").split(".")
        # classname is "tests.test_x" or "tests.test_x.Class"
        path = f"{module[1]}.py" if len(module) > 1 else module[0]
        name = "::".join([path, *module[2:], case.get("name")])
        if case.find("failure") is not None or case.find("error") is not None:
            outcomes[name] = "failed"
        elif case.find("skipped") is not None:
            outcomes[name] = "skipped"
        else:
            outcomes[name] = "passed"
    return outcomes
