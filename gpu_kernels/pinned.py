"""Page-locked host blocks for results that come down from the device, shared by the tools.

A download into page-locked memory is one DMA at the link's rate, with no staging and no host
copy, so the tools hand out their results as views of blocks from CuPy's pinned-memory pool.
That pool has two properties a long session notices:

* it gives a freed block again only to a request of **exactly** its size, so
  :func:`pinned_block` rounds every request up to a size class (1/8 of its power of two, at
  least 64 KiB): results of slightly different sizes then share blocks;
* it never gives its free blocks back to the system by itself: :func:`free_pinned_pool` does,
  and the tools call it when they free CuPy's device pool (and after an out-of-memory error,
  through :func:`gpu_kernels.backend.on_release`).

And the blocks alive at once are capped: :func:`pinned_block` answers ``None`` where a new block
would take the **live** page-locked bytes of every caller together past ``cap`` (default
:data:`PINNED_CAP`); the caller then downloads into ordinary (pageable) memory. A block counts
from its allocation until the last array that is a view of it is gone.

Example
-------
>>> from gpu_kernels.pinned import size_class
>>> size_class(1000), size_class(96 << 20) == 96 << 20, size_class(100 << 20) == 104 << 20
(65536, True, True)
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from gpu_kernels.backend import on_release

__all__ = ["PINNED_CAP", "size_class", "pinned_block", "held_bytes", "free_pinned_pool"]

#: page-locked bytes that live result blocks may hold together (every tool's blocks counted)
PINNED_CAP = 1 << 30
_MIN = 1 << 16

_lock = threading.Lock()
_held = [0]


def size_class(nbytes: int) -> int:
    """``nbytes`` rounded up to a multiple of 1/8 of its power of two (at least 64 KiB): the
    sizes CuPy's pinned pool, which reuses a block for the exact same size only, is asked for."""
    size = max(int(nbytes), _MIN)
    step = 1 << max(0, size.bit_length() - 4)
    return -(-size // step) * step


def held_bytes() -> int:
    """Page-locked bytes of the blocks from :func:`pinned_block` still alive."""
    with _lock:
        return _held[0]


def _release(nbytes: int) -> None:
    with _lock:
        _held[0] -= nbytes


def pinned_block(xp, nbytes: int, cap: int | None = None) -> np.ndarray | None:
    """A page-locked ``uint8`` host block of at least ``nbytes`` (its :func:`size_class`) from
    the pinned pool of ``xp`` (CuPy); arrays that are views of it keep it alive, and it goes back
    to the pool with the last of them. ``None`` where it would take the live blocks past ``cap``
    bytes (default :data:`PINNED_CAP`) or page-locked memory ran out (CuPy raises after freeing
    its pool and trying again): the caller then uses ordinary memory."""
    size = size_class(nbytes)
    cap = PINNED_CAP if cap is None else int(cap)
    with _lock:
        if _held[0] + size > cap:
            return None
        _held[0] += size
    try:
        mem = xp.cuda.alloc_pinned_memory(size)
    except (RuntimeError, MemoryError):  # page-locked memory ran out
        _release(size)
        return None
    block = np.frombuffer(mem, np.uint8, size)
    weakref.finalize(block, _release, size)
    return block


def free_pinned_pool() -> int:
    """Give CuPy's pinned pool's free blocks back to the system (the blocks still in use stay);
    returns how many blocks it gave back (0 without CuPy)."""
    try:
        import cupy as cp
    except ImportError:
        return 0
    pool = cp.get_default_pinned_memory_pool()
    before = int(pool.n_free_blocks())
    pool.free_all_blocks()
    return max(before - int(pool.n_free_blocks()), 0)


def _on_release(_backend) -> None:
    """After running out of device memory (:meth:`gpu_kernels.backend.Backend.release_caches`):
    the pinned pool's free blocks go back too, whichever tool ran out (registered here, not only
    by the MVS module, so that an imseg-only session does it as well)."""
    free_pinned_pool()


on_release(_on_release)
