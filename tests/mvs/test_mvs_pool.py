"""Host-side rule of session 6b (issue 24): CuPy's pool is kept between reconstructions while it
holds at most a share of the device's memory (no GPU needed)."""

from __future__ import annotations

from gpu_kernels.mvs import stereo


def test_the_pool_is_kept_below_its_share_and_freed_above_or_when_asked(monkeypatch):
    monkeypatch.delenv("GPULAB_MVS_POOL_KEEP", raising=False)
    gib = 1 << 30
    assert not stereo.pool_to_free(1 * gib, 80 * gib)
    assert not stereo.pool_to_free(int(stereo.POOL_KEEP_SHARE * 80 * gib), 80 * gib)
    assert stereo.pool_to_free(int(stereo.POOL_KEEP_SHARE * 80 * gib) + 1, 80 * gib)
    monkeypatch.setenv("GPULAB_MVS_POOL_KEEP", "0")
    assert stereo.pool_to_free(0, 80 * gib)


class _Pool:
    def __init__(self, nbytes):
        self.nbytes, self.freed = nbytes, 0

    def total_bytes(self):
        return self.nbytes


class _Backend:
    """What release_pool reads of a GPU backend."""

    device_id = 0

    def __init__(self, pool, device_bytes):
        self.pool, self.device_bytes = pool, device_bytes
        self.xp = type("xp", (), {"get_default_memory_pool": lambda _self=None: pool})()

    def mem_info(self):
        return self.device_bytes // 2, self.device_bytes

    def activate(self):
        import contextlib

        return contextlib.nullcontext()

    def free_memory_pool(self):
        self.pool.freed += 1


def test_release_pool_frees_only_a_large_pool_or_when_asked(monkeypatch):
    """The end of reconstruct: a pool under a quarter of the device stays, a larger one is given
    back, and ``GPULAB_MVS_POOL_KEEP=0`` gives it back always (the behaviour before 6b)."""
    monkeypatch.delenv("GPULAB_MVS_POOL_KEEP", raising=False)
    monkeypatch.setattr(stereo, "_device_bytes", {})
    gib = 1 << 30
    small, large = _Pool(1 * gib), _Pool(30 * gib)
    stereo.release_pool(_Backend(small, 80 * gib))
    stereo.release_pool(_Backend(large, 80 * gib))
    assert (small.freed, large.freed) == (0, 1)
    monkeypatch.setenv("GPULAB_MVS_POOL_KEEP", "0")
    stereo.release_pool(_Backend(small, 80 * gib))
    assert small.freed == 1


class _TwoDevices:
    """CuPy's default pool answers for the calling thread's current device: a backend for
    device 1 whose ``activate`` makes it current (as ``Backend.activate`` does)."""

    device_id = 1

    def __init__(self, pools, device_bytes):
        import contextlib

        self.pools, self.device_bytes, self.current = pools, device_bytes, [0]
        cur = self.current
        self.xp = type("xp", (), {"get_default_memory_pool": lambda _self=None: pools[cur[0]]})()

        @contextlib.contextmanager
        def activate():
            old, cur[0] = cur[0], self.device_id
            try:
                yield
            finally:
                cur[0] = old

        self.activate = activate

    def mem_info(self):
        return self.device_bytes // 2, self.device_bytes

    def free_memory_pool(self):
        self.pools[self.device_id].freed += 1


def test_release_pool_weighs_the_pool_of_the_run_s_device_not_the_current_one(monkeypatch):
    """reconstruct on cuda:1 from a thread whose current device is cuda:0: the pool weighed
    is device 1's (a large one is given back), not device 0's small one."""
    monkeypatch.delenv("GPULAB_MVS_POOL_KEEP", raising=False)
    monkeypatch.setattr(stereo, "_device_bytes", {})
    gib = 1 << 30
    pools = [_Pool(1 * gib), _Pool(30 * gib)]
    be = _TwoDevices(pools, 80 * gib)
    stereo.release_pool(be)
    assert pools[1].freed == 1
    pools = [_Pool(30 * gib), _Pool(1 * gib)]
    be = _TwoDevices(pools, 80 * gib)
    stereo.release_pool(be)
    assert pools[1].freed == 0
