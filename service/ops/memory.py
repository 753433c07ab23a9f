"""The server process's C heap: fewer malloc arenas, and free pages given back.

Under 32 editors (``bench.load --mix editors``) the server's memory grew by
about 6% a minute with nothing held in Python (``tracemalloc`` showed only the
requests in flight). It was glibc's heap:

- every thread that allocates gets a malloc arena of its own, up to eight per
  core, and the thread pool that answers picks and selections has dozens;
  memory freed in one arena serves only that arena's threads, so each keeps
  its own free fragments. :func:`limit_arenas` caps them at
  :data:`MALLOC_ARENAS` (glibc's ``M_ARENA_MAX``, the ``MALLOC_ARENA_MAX``
  environment variable's setting): +1.4% over the minute instead.
- glibc raises its mmap threshold to the size of a freed mapped block, so the
  per-object arrays an edit copies (1.3 MB of transforms for 10,000 objects)
  then come from the heap, whose free pages the process keeps.
  :func:`return_free_memory` (``malloc_trim(0)``) gives them back; the store's
  checkpoint thread calls it every few seconds while edits come: +0.8%.

Both are no-ops where the C library is not glibc.
"""

import ctypes
import ctypes.util

#: Malloc arenas of the process (glibc's default: eight per core).
MALLOC_ARENAS = 2

#: ``mallopt``'s parameter number for the arena limit (glibc's malloc.h).
M_ARENA_MAX = -8


def _glibc():
    try:
        library = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return library.mallopt, library.malloc_trim
    except (OSError, AttributeError):
        return None, None


_mallopt, _malloc_trim = _glibc()


def limit_arenas() -> None:
    """Cap the malloc arenas at :data:`MALLOC_ARENAS`; threads' arenas made
    before the call stay (call it before the process starts its threads)."""
    if _mallopt is not None:
        _mallopt(ctypes.c_int(M_ARENA_MAX), ctypes.c_int(MALLOC_ARENAS))


def return_free_memory() -> None:
    """Give the heap's free pages back to the system (``malloc_trim(0)``)."""
    if _malloc_trim is not None:
        _malloc_trim(ctypes.c_size_t(0))
