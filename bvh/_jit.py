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

from numba import njit

FASTMATH = {"nsz", "arcp", "contract"}

#: A finite stand-in for infinity inside kernels: distances, "no hit yet".
FAR = 1.0e300

#: Rays handed to one parallel task; big enough to amortise scheduling,
#: small enough to balance two cores on uneven rays.
RAY_BLOCK = 256

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
