"""The CUDA emulator itself (tests/cuda_emu): warp collectives, barriers, deadlocks, shared and
constant memory, the launch checks, the CuPy surface of its host arrays, and the hook through
gpu_kernels.backend.kernel. The kernels are in selftest_kernels.cu beside this file."""

import ctypes
from pathlib import Path

import numpy as np
import pytest

import cuda_emu
from gpu_kernels import backend

if cuda_emu.available():
    pytest.skip(cuda_emu.available(), allow_module_level=True)

SRC = str(Path(__file__).with_name("selftest_kernels.cu"))


@pytest.fixture(scope="module")
def mod():
    return cuda_emu.compile_module(SRC)


def test_warp_collectives(mod):
    rng = np.random.default_rng(0)
    v = rng.integers(0, 1000, 64).astype(np.int32)
    out = np.zeros(7 * 64, np.int32)
    mod.get_function("emu_warp_ops")((1,), (64,), (v, out))
    out = out.reshape(7, 64)
    t = np.arange(64)
    lane, base = t % 32, t // 32 * 32
    np.testing.assert_array_equal(out[0], v[t ^ 1])
    np.testing.assert_array_equal(out[1], np.where(lane + 3 < 32, v[np.minimum(t + 3, 63)], v))
    np.testing.assert_array_equal(out[2], np.where(lane >= 2, v[t - 2], v))
    np.testing.assert_array_equal(out[3], v[base + 5])
    bits = [sum(1 << k for k in range(32) if v[w * 32 + k] % 3 == 0) for w in (0, 1)]
    np.testing.assert_array_equal(out[4].view(np.uint32), np.repeat(np.uint32(bits), 32))
    np.testing.assert_array_equal(out[5], v[t ^ 4])
    g = lane // 8
    gsum = v.reshape(-1, 8).sum(1).repeat(8)
    want = [sum(gsum[i] + 8 * r for r in range(g[i] + 1)) for i in range(64)]
    np.testing.assert_array_equal(out[6], want)


def test_block_barriers_and_reductions(mod):
    rng = np.random.default_rng(1)
    v = rng.integers(0, 100, 128).astype(np.int32)
    v[17] = 7
    out = np.zeros(5 * 128, np.int32)
    mod.get_function("emu_block_ops")((1,), (128,), (v, out))
    out = out.reshape(5, 128)
    np.testing.assert_array_equal(out[0], np.roll(v, -1))
    assert (out[1] == 1).all()
    assert (out[2] == (v > 50).sum()).all()
    assert (out[3] == 1).all()
    np.testing.assert_array_equal(out[4], (np.arange(128) < 100).astype(np.int32))


def test_a_deadlock_is_reported_not_hung(mod):
    with pytest.raises(cuda_emu.EmuError, match="deadlock in block"):
        mod.get_function("emu_deadlock")((1,), (32,), (np.zeros(32, np.int32),))
    # the emulator is usable afterwards
    test_block_barriers_and_reductions(mod)


def test_dynamic_shared_memory(mod):
    k = mod.get_function("emu_dynamic_smem")
    n = 1000
    out = np.zeros(3 * n, np.int32)
    k((3,), (128,), (out, np.int32(n), np.int32(1)), shared_mem=4 * n)
    np.testing.assert_array_equal(out.reshape(3, n), np.arange(n)[None] + np.arange(3)[:, None])
    # memory the block never wrote reads as 0xff bytes, not as an earlier block's values
    k((2,), (128,), (out, np.int32(n), np.int32(0)), shared_mem=4 * n)
    assert (out[:2 * n] == -1).all()
    big = 20000
    out = np.zeros(big, np.int32)
    with pytest.raises(cuda_emu.EmuError, match="max_dynamic_shared_size_bytes"):
        k((1,), (128,), (out, np.int32(big), np.int32(1)), shared_mem=4 * big)
    backend.set_max_dynamic_smem(k, 4 * big)
    k((1,), (128,), (out, np.int32(big), np.int32(1)), shared_mem=4 * big)
    np.testing.assert_array_equal(out, np.arange(big))


def test_constant_memory_through_get_global(mod):
    scale = np.float32([1, 2, 3, 4])
    g = mod.get_global("c_scale")
    ctypes.memmove(g.ptr, scale.ctypes.data, scale.nbytes)
    x = np.arange(10, dtype=np.float32)
    out = np.zeros_like(x)
    mod.get_function("emu_constant")((1,), (32,), (x, out, np.int64(10)))
    np.testing.assert_array_equal(out, x * scale[np.arange(10) % 4])


def test_launch_checks(mod):
    k = mod.get_function("emu_constant")
    x = np.zeros(10, np.float32)
    with pytest.raises(cuda_emu.EmuError, match="numpy int64 scalar"):
        k((1,), (32,), (x, x, 10))                                   # a Python int for a long long
    with pytest.raises(cuda_emu.EmuError, match="int32 scalar"):
        k((1,), (32,), (x, x, np.int32(10)))                         # the wrong width
    with pytest.raises(cuda_emu.EmuError, match="float64 array"):
        k((1,), (32,), (x.astype(np.float64), x, np.int64(10)))
    with pytest.raises(cuda_emu.EmuError, match="C-contiguous"):
        k((1,), (32,), (np.zeros(20, np.float32)[::2], x, np.int64(10)))
    with pytest.raises(cuda_emu.EmuError, match="3 parameters"):
        k((1,), (32,), (x, x))
    with pytest.raises(cuda_emu.EmuError, match="more than a CUDA block"):
        k((1,), (2048,), (x, x, np.int64(10)))
    with pytest.raises(cuda_emu.EmuError, match="empty launch"):
        k((0,), (32,), (x, x, np.int64(10)))
    b = mod.get_function("emu_bounded")
    out = np.zeros(128, np.float32)
    b((1,), (64,), (out,))
    with pytest.raises(cuda_emu.EmuError, match="__launch_bounds__"):
        b((1,), (128,), (out,))


def test_hooked_through_backend_kernel():
    """backend.kernel builds through the emulator's load_module and memoises per device."""
    be = cuda_emu.emu_backend()
    k = backend.kernel(be, "selftest.cu", "gpulab_saxpy")
    assert backend.kernel(be, "selftest.cu", "gpulab_saxpy") is k
    x = be.xp.arange(100, dtype=be.xp.float32)
    y = be.xp.ones(100, dtype=be.xp.float32)
    k((1,), (128,), (np.float32(3), x, y, np.int32(100)))
    np.testing.assert_array_equal(y.get(), 3 * np.arange(100) + 1)


def test_a_cooperative_kernel_knows_it_was_emulated():
    """A cooperative kernel records which backend built it (session 14: it was guessed from the function's
    type), and ``cooperative_blocks`` takes only cooperative kernels: a plain one gets a clear error."""
    be = cuda_emu.emu_backend()
    co = backend.kernel(be, "selftest.cu", "gpulab_saxpy", cooperative=True)
    assert co.emulated is True
    assert backend.cooperative_blocks(co, 128) == 1
    with pytest.raises(TypeError, match="cooperative=True"):
        backend.cooperative_blocks(backend.kernel(be, "selftest.cu", "gpulab_saxpy"), 128)


def test_host_arrays_answer_cupy_calls():
    xp = cuda_emu.xp
    a = xp.arange(12, dtype=xp.float32).reshape(3, 4)
    assert isinstance(a, xp.ndarray) and isinstance(a.sum(), xp.ndarray)      # 0-d, as in CuPy
    assert type(a.get()) is np.ndarray and a.data.ptr == a.ctypes.data
    assert type(xp.asnumpy(a)) is np.ndarray
    b = xp.zeros(4, xp.float32)
    xp.cuda.runtime.memcpyAsync(b.data.ptr, a[1].data.ptr, 16, 3, xp.cuda.get_current_stream().ptr)
    np.testing.assert_array_equal(b, [4, 5, 6, 7])
    # stream capture records launches; the graph replays them
    k = backend.kernel(cuda_emu.emu_backend(), "selftest.cu", "gpulab_saxpy")
    y = xp.zeros(4, xp.float32)
    s = xp.cuda.Stream(non_blocking=True)
    s.begin_capture()
    k((1,), (32,), (np.float32(1), b, y, np.int32(4)))
    graph = s.end_capture()
    assert (y == 0).all()
    graph.launch(s)
    graph.launch(s)
    np.testing.assert_array_equal(y, 2 * b)


def test_blocks_run_in_a_shuffled_order(mod, monkeypatch):
    """CUDA promises no block order; the emulator shuffles it (the same way each time), unless
    GPULAB_EMU_ORDER=inorder."""
    k = mod.get_function("emu_order")

    def run():
        counter, order = np.zeros(1, np.int32), np.full(64, -1, np.int32)
        k((64,), (32,), (counter, order))
        assert counter[0] == 64
        return order

    a = run()
    assert sorted(a) == list(range(64)) and (a != np.arange(64)).any()
    np.testing.assert_array_equal(run(), a)
    monkeypatch.setenv("GPULAB_EMU_ORDER", "inorder")
    np.testing.assert_array_equal(run(), np.arange(64))
    monkeypatch.setenv("GPULAB_EMU_ORDER", "12345")
    b = run()
    assert sorted(b) == list(range(64)) and (b != a).any()
