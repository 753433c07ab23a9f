"""Compiled kernels are cached on disk, so a second process does not compile."""

import subprocess
import sys
from pathlib import Path

import numpy as np

import bvh
from bvh.builders import sah as builder
from bvh.queries import mesh_rays as kernels

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import numpy as np, bvh
from bvh.builders import sah as builder
from bvh.queries import mesh_rays as kernels
mesh = bvh.build(np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]]))
mesh.intersect([0.2, 0.2, 1.0], [0.0, 0.0, -1.0])
mesh.intersect(np.tile([0.2, 0.2, 1.0], (1000, 1)), np.tile([0.0, 0.0, -1.0], (1000, 1)))
mesh.occluded([0.2, 0.2, 1.0], [0.0, 0.0, -1.0])
misses = [name for name, f in [("build", builder._binned_build), ("serial", kernels.closest_hits_serial),
          ("parallel", kernels.closest_hits_parallel), ("occluded", kernels.occluded_serial)]
          if sum(f.stats.cache_misses.values())]
print("compiled:", ",".join(misses))
"""


def test_kernels_have_no_uncacheable_globals():
    mesh = bvh.build(np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]]))
    mesh.intersect([0.2, 0.2, 1.0], [0.0, 0.0, -1.0])
    mesh.intersect_all([0.2, 0.2, 1.0], [0.0, 0.0, -1.0])
    for kernel in (builder._binned_build, kernels.closest_hits_serial, kernels.count_hits_parallel,
                   kernels.collect_hits_parallel):
        for compiled in kernel.overloads.values():
            assert not compiled.library.has_dynamic_globals, kernel


def test_second_process_loads_compiled_kernels_from_cache():
    def run():
        done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    run()  # fills the cache if this checkout has none yet
    assert run() == "compiled:"


def test_cache_directory_follows_every_source_file(tmp_path, monkeypatch):
    from bvh._jit import _source_keyed_cache_dir

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    (tmp_path / "kernels.py").write_text("a = 1\n")
    (tmp_path / "traversal.py").write_text("b = 1\n")
    first = _source_keyed_cache_dir(tmp_path)
    assert first.parent == tmp_path / "__pycache__" and first.name.startswith("numba-")
    assert _source_keyed_cache_dir(tmp_path) == first
    # A change to a module that a kernel only inlines still changes the key.
    (tmp_path / "traversal.py").write_text("b = 2\n")
    assert _source_keyed_cache_dir(tmp_path) != first
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert _source_keyed_cache_dir(tmp_path).parent == tmp_path / "elsewhere"


def test_user_numba_cache_setting_is_left_alone():
    import os

    import numba

    assert numba.config.CACHE_DIR == os.environ.get("NUMBA_CACHE_DIR", "")


def _bvh_modules_imported(source: Path, package: Path) -> set[tuple[str, ...]]:
    """Modules of ``bvh`` that ``source`` imports, as path parts below the
    package, in any spelling (``from .x import``, ``from . import x``,
    ``from ..x.y import``, ``import bvh.x.y``)."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = source.parent
                for _ in range(node.level - 1):
                    base = base.parent
                parts = [*base.relative_to(package.parent).parts, *(node.module or "").split(".")]
            else:
                parts = (node.module or "").split(".")
            parts = [part for part in parts if part]
            if parts[:1] == ["bvh"]:
                found |= {(*parts[1:], alias.name) for alias in node.names} | {tuple(parts[1:])}
        elif isinstance(node, ast.Import):
            found |= {tuple(alias.name.split(".")[1:]) for alias in node.names if alias.name.startswith("bvh.")}
    return found


def test_python_only_modules_cannot_reach_a_kernel(tmp_path, monkeypatch):
    import re

    from bvh._jit import PYTHON_ONLY_PACKAGES, _source_keyed_cache_dir, is_python_only

    package = ROOT / "bvh"
    for source in package.rglob("*.py"):
        if is_python_only(source, package):
            assert not re.search(r"@(jit|jit_inline|jit_parallel|njit|intrinsic)\b", source.read_text()), source
            continue
        reached = {parts for parts in _bvh_modules_imported(source, package) if parts[:1] and parts[0] in PYTHON_ONLY_PACKAGES}
        assert not reached, (source, reached)
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    (tmp_path / "kernels.py").write_text("a = 1\n")
    (tmp_path / "io").mkdir()
    (tmp_path / "io" / "load.py").write_text("b = 1\n")
    first = _source_keyed_cache_dir(tmp_path)
    (tmp_path / "io" / "load.py").write_text("b = 2\n")
    assert _source_keyed_cache_dir(tmp_path) == first
    (tmp_path / "kernels.py").write_text("a = 2\n")
    assert _source_keyed_cache_dir(tmp_path) != first
