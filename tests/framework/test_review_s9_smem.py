"""Review (session 9, reviewer A): :func:`gpu_kernels.backend.set_max_dynamic_smem` on a function of the
per-device kernel cache only raises its dynamic shared memory limit. Two threads launching the same cached
kernel with different sizes (imseg's k-means and its initial centres, 56 bytes a centre: 57,344 at
k_max = 1024, 50,400 at 900) used to let the smaller opt-in lower the limit between the larger one's
opt-in and its launch, which then fails."""

from __future__ import annotations

import threading

from gpu_kernels import backend


class _Fn:
    """Stands in for a cupy.RawKernel: records the attribute's values."""

    def __init__(self):
        self.max_dynamic_shared_size_bytes = 0
        self.sets: list[int] = []

    def __setattr__(self, k, v):
        if k == "max_dynamic_shared_size_bytes" and hasattr(self, "sets"):
            self.sets.append(v)
        super().__setattr__(k, v)


def test_a_smaller_opt_in_does_not_lower_the_limit():
    fn = _Fn()
    backend.set_max_dynamic_smem(fn, 57_344)
    backend.set_max_dynamic_smem(fn, 50_400)
    assert fn.max_dynamic_shared_size_bytes == 57_344
    backend.set_max_dynamic_smem(fn, 60_000)
    backend.set_max_dynamic_smem(fn, 1_000)          # under 48 KiB: nothing to do
    assert fn.max_dynamic_shared_size_bytes == 60_000 and fn.sets == [57_344, 60_000]


def test_another_threads_smaller_opt_in_between_opt_in_and_launch():
    fn = _Fn()
    opted, done, seen = threading.Event(), threading.Event(), []

    def big():
        backend.set_max_dynamic_smem(fn, 57_344)
        opted.set()
        done.wait(5)
        seen.append(fn.max_dynamic_shared_size_bytes)   # what its launch would find

    def small():
        opted.wait(5)
        backend.set_max_dynamic_smem(fn, 50_400)
        done.set()

    ts = [threading.Thread(target=big), threading.Thread(target=small)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(10)
    assert seen == [57_344]


def test_each_function_has_its_own_limit():
    a, b = _Fn(), _Fn()
    backend.set_max_dynamic_smem(a, 57_344)
    backend.set_max_dynamic_smem(b, 50_400)
    assert (a.max_dynamic_shared_size_bytes, b.max_dynamic_shared_size_bytes) == (57_344, 50_400)
