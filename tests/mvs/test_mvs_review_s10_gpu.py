"""Session 10 on the GPU: an MVS run while another thread captures a CUDA graph on the same device.

Session 8's two-thread test (``test_back_to_back_runs_on_two_threads_give_a_fresh_runs_result``)
failed now and then with ``cudaErrorStreamCaptureUnsupported``: a new grower's set-up and the view
packing waited with ``cudaDeviceSynchronize``, which CUDA refuses while any other thread captures
a graph on the device (whatever that capture's mode) and which breaks that capture. Two MVS runs
at once meet it when one captures its batch or reset graph while the other makes a grower; so
does an MVS run beside the flow's or imseg's graph plans in another thread (the window and a
batch, or the CLI). They now wait for their own streams and the textures' event only
(:func:`gpu_kernels.mvs.transfer.wait_for_queued`). Here the other thread holds its capture open
for the whole run, so the old code fails every time. Needs CuPy and a CUDA device."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from test_mvs_review_s8_gpu import KW, _fresh
from test_mvs_setup_gpu import _same

from gpu_kernels.mvs import memo, stereo

pytestmark = pytest.mark.gpu


class _OpenCapture(threading.Thread):
    """Captures ``x += 1; x *= 2`` on its own non-blocking stream (as every gpulab capture does),
    holding the capture open between the two until ``go`` is set; then replays the graph once
    (``x`` ends at 2 when the capture was not broken)."""

    def __init__(self, cp, mode):
        super().__init__(daemon=True)
        self.cp, self.mode = cp, mode
        self.capturing, self.go = threading.Event(), threading.Event()
        self.error = self.value = None

    def run(self):
        cp = self.cp
        try:
            s = cp.cuda.Stream(non_blocking=True)
            x = cp.zeros(256, cp.float32)
            with s:  # the kernels compiled and loaded before the capture
                x += 1
                x *= 2
                x.fill(0)
            s.synchronize()
            with s:
                s.begin_capture(mode=self.mode)
                try:
                    x += 1
                    self.capturing.set()
                    self.go.wait(120)
                    x *= 2
                finally:
                    graph = s.end_capture()
                graph.launch(s)
            s.synchronize()
            self.value = cp.asnumpy(x)
        except Exception as exc:  # noqa: BLE001 - reported by the test
            self.error = exc
        finally:
            self.capturing.set()


@pytest.mark.parametrize("mode", ["relaxed", "thread_local"])
def test_a_run_while_another_thread_captures_a_graph_gives_a_fresh_runs_result(small_scene, monkeypatch, mode):
    """While another thread holds a capture open: a fresh run (set-up, textures, a new grower and
    its captured batch), a run that keeps its set-up and grower, and one that reuses them (the
    grower reset through its captured reset graph) all give a fresh run's maps and cloud, bit for
    bit, and the other thread's graph is intact (it replays to the right values)."""
    cp = pytest.importorskip("cupy")
    rt = cp.cuda.runtime
    sc = small_scene.scene
    memo.release()
    want = _fresh(sc, monkeypatch)  # also: every kernel loaded before the capture
    cap = _OpenCapture(cp, {"relaxed": rt.streamCaptureModeRelaxed,
                            "thread_local": rt.streamCaptureModeThreadLocal}[mode])
    cap.start()
    assert cap.capturing.wait(60) and cap.error is None, cap.error
    try:
        got = [_fresh(sc, monkeypatch), stereo.reconstruct(sc, **KW), stereo.reconstruct(sc, **KW)]
    finally:
        cap.go.set()
        cap.join(60)
    assert cap.error is None, f"the other thread's capture broke: {cap.error!r}"
    np.testing.assert_array_equal(cap.value, np.full(256, 2, np.float32))
    assert got[2].stats["setup_reused"]
    for g in got:
        _same(g, want)
    memo.release()
