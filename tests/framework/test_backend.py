"""Backend selection and device information (CPU here; GPU parts marked ``gpu``)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from gpu_kernels import backend
from gpu_kernels.backend import BackendError, get_backend, parse_device


@pytest.mark.parametrize(
    "spec, expected",
    [(None, ("auto", 0)), ("auto", ("auto", 0)), ("CPU", ("cpu", 0)), ("cuda", ("cuda", 0)),
     ("cuda:3", ("cuda", 3)), ("gpu:1", ("cuda", 1)), (" cuda:0 ", ("cuda", 0))],
)
def test_parse_device(spec, expected):
    assert parse_device(spec) == expected


@pytest.mark.parametrize("spec", ["tpu", "cuda:", "cuda:x", "cuda:-1", "opencl"])
def test_parse_device_rejects_garbage_in_one_line(spec):
    with pytest.raises(BackendError) as e:
        parse_device(spec)
    assert "\n" not in str(e.value)
    assert "cpu" in str(e.value) and "cuda" in str(e.value)


def test_cpu_backend_is_numpy():
    be = get_backend("cpu")
    assert be.name == "cpu" and not be.is_gpu and be.xp is np
    a = be.asarray([1, 2, 3], dtype=np.float32)
    assert isinstance(a, np.ndarray) and a.dtype == np.float32
    with be.activate():
        pass
    free, total = be.mem_info()
    assert total > 0 and 0 <= free <= total


def test_env_var_selects_cpu(monkeypatch):
    monkeypatch.setenv("GPULAB_DEVICE", "cpu")
    assert get_backend().name == "cpu"


def test_explicit_argument_beats_env(monkeypatch):
    monkeypatch.setenv("GPULAB_DEVICE", "cuda:7")
    assert get_backend("cpu").name == "cpu"


def test_auto_matches_what_cupy_finds():
    be = get_backend("auto")
    assert be.is_gpu == backend.cupy_available()


@pytest.mark.skipif(backend.cupy_available(), reason="this machine has a CUDA device")
def test_asking_for_cuda_without_one_is_one_clear_line(monkeypatch):
    with pytest.raises(BackendError) as e:
        get_backend("cuda")
    msg = str(e.value)
    assert "\n" not in msg
    assert "CUDA" in msg and "--device cpu" in msg
    monkeypatch.setenv("GPULAB_DEVICE", "cuda")
    with pytest.raises(BackendError, match="GPULAB_DEVICE=cuda"):
        get_backend()


@pytest.mark.skipif(backend.cupy_available(), reason="this machine has a CUDA device")
def test_device_info_on_cpu():
    info = backend.device_info()
    assert info["backend"] == "cpu" and info["name"] == "CPU (NumPy)"
    report = backend.device_report()
    assert report.startswith("Compute device: CPU (NumPy)")
    for lib in ("numpy", "scipy", "cupy", "vtk", "gpulab"):
        assert f"  {lib}: " in report


def test_versions_names_the_libraries():
    v = backend.versions()
    assert v["numpy"] == np.__version__
    assert v["gpulab"]


def test_set_default_device_is_used_when_none_given():
    backend.set_default_device("cpu")
    assert get_backend().name == "cpu"
    assert get_backend(None) is get_backend("cpu")


def test_cuda_sources_are_listed_and_readable():
    names = backend.cuda_source_names()
    assert "selftest.cu" in names
    assert all(n.endswith(".cu") for n in names)
    assert "gpulab_saxpy" in backend.cuda_source("selftest.cu")
    with pytest.raises(FileNotFoundError):
        backend.cuda_source("no_such_kernel.cu")


def test_load_module_needs_cuda():
    with pytest.raises(BackendError, match="needs a CUDA backend"):
        backend.load_module("selftest.cu", device="cpu")


def test_asnumpy_passes_numpy_through():
    a = np.arange(4)
    assert backend.asnumpy(a) is a
    assert backend.array_module(a) is np


# ------------------------------------------------------------------------- GPU
@pytest.mark.gpu
def test_gpu_backend_is_chosen_and_described():
    be = get_backend()
    assert be.is_gpu and be.name == "cuda"
    info = backend.device_info(be)
    assert info["backend"] == "cuda"
    assert info["name"] and info["name"] != "CPU (NumPy)"
    major, minor = map(int, info["compute_capability"].split("."))
    assert major >= 5
    assert 0 < info["free_bytes"] <= info["total_bytes"]
    report = backend.device_report(be)
    assert info["name"] in report and "compute capability" in report
    print("\n" + report)  # shown with -s: the closing note quotes it


@pytest.mark.gpu
def test_gpu_load_module_compiles_runs_and_caches():
    be = get_backend("cuda")
    cp = be.xp
    mod = backend.load_module("selftest.cu", device=be)
    assert backend.load_module("selftest.cu", device=be) is mod  # cached
    assert backend.load_module("selftest.cu", device=be, defines={"UNUSED": 1}) is not mod
    kern = mod.get_function("gpulab_saxpy")
    n = 1000
    x = cp.arange(n, dtype=cp.float32)
    y = cp.ones(n, dtype=cp.float32)
    kern(((n + 255) // 256,), (256,), (np.float32(2.0), x, y, np.int32(n)))
    np.testing.assert_allclose(cp.asnumpy(y), 2.0 * np.arange(n) + 1.0)


@pytest.mark.gpu
def test_gpu_device_is_selected_inside_a_worker_thread():
    be = get_backend("cuda")
    seen = {}

    def work():
        with be.activate():
            seen["dev"] = be.xp.cuda.Device().id
            seen["sum"] = float(be.xp.arange(10).sum())

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen == {"dev": be.device_id, "sum": 45.0}


@pytest.mark.gpu
def test_gpu_asking_for_a_missing_device_index_is_one_line():
    n = backend.cuda_device_count()
    with pytest.raises(BackendError) as e:
        get_backend(f"cuda:{n}")
    assert "\n" not in str(e.value) and f"only {n} device" in str(e.value)


def test_release_caches_runs_every_hook_then_frees_the_pool(monkeypatch):
    """After an out-of-memory error the worker calls release_caches: every module's hook drops
    what it keeps between calls (one that fails does not stop the others)."""
    from gpu_kernels import backend as bk

    monkeypatch.setattr(bk, "_RELEASE_HOOKS", [])
    seen = []

    def bad(be):
        raise RuntimeError("boom")

    bk.on_release(bad)
    bk.on_release(lambda be: seen.append(be.label))
    bk.on_release(bad)                      # registered once
    freed = []
    cpu = bk.get_backend("cpu")
    monkeypatch.setattr(type(cpu), "free_memory_pool", lambda self: freed.append(self.label))
    cpu.release_caches()
    assert seen == ["cpu"] and freed == ["cpu"] and len(bk._RELEASE_HOOKS) == 2


def test_imseg_graphs_are_dropped_on_release():
    """imseg keeps up to 8 captured CUDA graphs (~60 B a pixel each): they go on release."""
    from gpu_kernels import backend as bk
    from gpu_kernels.imseg import graphs

    assert graphs.clear in bk._RELEASE_HOOKS
    with graphs._LOCK:
        graphs._GRAPHS["x"] = object()
        graphs._FAILED.add("y")
    bk.get_backend("cpu").release_caches()
    assert not graphs._GRAPHS and not graphs._FAILED
