"""numba options for every kernel in ``bvh``, in one place.

Every kernel is compiled with ``cache=True`` (a second process loads the
machine code from ``__pycache__`` instead of compiling, so it answers in well
under two seconds) and ``nogil=True`` (the service runs picks on worker threads
while the event loop keeps serving).

``fastmath`` is restricted on purpose: we allow contraction into fused
multiply-adds, reciprocal approximations of divisions and ignoring the sign of
zero, but not ``nnan``/``ninf`` (the kernels still never produce inf or NaN: they
use the finite sentinel ``FAR``) and not ``reassoc``, which would let LLVM
reorder the sums that the conservative slab test of Ize (2013) reasons about.
"""

import hashlib
import os
import tempfile
from pathlib import Path

import numba
from numba import njit


#: Packages of ``bvh`` that hold no kernel and that no kernel module imports
#: (``tests/test_jit_cache.py`` checks both): the scene's Python side and file
#: I/O. With the package's own ``__init__.py`` (the façade, which imports
#: everything) they are left out of the cache key, so editing them does not
#: recompile; every other module of ``bvh`` is kernel code or may be.
PYTHON_ONLY_PACKAGES = ("scene", "io")


def is_python_only(source: Path, package: Path) -> bool:
    """Whether ``source`` (a file under ``package``, the ``bvh`` folder) is
    left out of the kernel cache key: the façade or a Python-only package."""
    relative = source.relative_to(package).parts
    return relative == ("__init__.py",) or relative[0] in PYTHON_ONLY_PACKAGES


def _source_keyed_cache_dir(package: Path = Path(__file__).resolve().parent) -> Path:
    """A numba cache directory named after a hash of the source files of ``bvh``.

    numba checks a cached kernel only against the file that defines it, so a
    kernel in ``queries/mesh_rays.py`` would keep running old code after a change
    to ``walk/traversal.py`` or ``queries/ray_triangle.py``, which it inlines. Keying the whole
    cache by the sources (all but :func:`is_python_only`'s) makes any change, or
    an in-place upgrade, compile afresh. The cache lives under
    ``NUMBA_CACHE_DIR`` when that is set, else beside the package, else (a
    read-only install) in the user's cache.
    """
    digest = hashlib.sha256()
    for source in sorted(package.rglob("*.py")):
        if is_python_only(source, package):
            continue
        digest.update(source.relative_to(package).as_posix().encode())
        digest.update(source.read_bytes())
    name = f"numba-{digest.hexdigest()[:16]}"
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"]) / name
    if os.access(package, os.W_OK):
        return package / "__pycache__" / name
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "bvh" / name


def _use_cache_dir(directory: Path) -> str:
    """Point numba's cache at ``directory``; returns the previous setting."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        directory = Path(tempfile.gettempdir()) / "bvh" / directory.name
        directory.mkdir(parents=True, exist_ok=True)
    previous = numba.config.CACHE_DIR
    numba.config.CACHE_DIR = str(directory)
    return previous


# numba picks a function's cache location when the function is decorated, so
# this must run before the kernel modules are imported; ``bvh/__init__.py``
# imports them all, then hands the setting back with ``end_cache_scope`` so
# that the user's own numba functions keep their usual cache.
_user_cache_dir = _use_cache_dir(_source_keyed_cache_dir())


def end_cache_scope() -> None:
    """Restore numba's cache setting for functions decorated from now on."""
    numba.config.CACHE_DIR = _user_cache_dir

FASTMATH = {"nsz", "arcp", "contract"}

#: A finite stand-in for infinity inside kernels: distances, "no hit yet".
FAR = 1.0e300

#: Rays handed to one parallel task; big enough to amortise scheduling,
#: small enough to balance two cores on uneven rays.
RAY_BLOCK = 256

#: Batches up to this size run on the calling thread (the ``*_serial``
#: kernels): waking the thread pool costs more than tracing a few rays.
SERIAL_BATCH = 64

#: Depth limit of every tree the builders make, and so the size of the
#: fixed per-ray traversal stack: a push happens at most once per level.
MAX_DEPTH = 64

jit = njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy")
"""Decorator for serial kernels and the device functions they call."""

jit_inline = njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy", inline="always")
"""Decorator for device functions called per ray or per node (slab test,
traversal, leaf tests): inlined at numba IR level, because an out-of-line call
increments and decrements the reference count of every array argument with
atomic instructions, which costs more than the work of a box test.
"""

jit_parallel = njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy", parallel=True)
"""Decorator for batch kernels that ``prange`` over blocks of rays."""
