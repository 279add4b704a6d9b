"""Lead, session 22: the mesh tab as a user meets it after this session's changes (the canonical order on, the extra
starts prefetched after k = "auto"): a sample opened, Run at k = "auto", then the k box set to 6 and Run again; a
screenshot after each, and the two runs' times as the tab reports them.

    xvfb-run -a -s "-screen 0 1400x900x24" python benchmarks/results/lead_session22/mesh_shot.py OUT_DIR [--sample creature]
"""

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--sample", default="creature")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from app.tabs.mesh_tab import MeshTab

    app = QApplication.instance() or QApplication([])
    tab = MeshTab()
    tab.resize(1300, 800)
    tab.show()

    def wait(signal, timeout_ms=120000):
        loop = QEventLoop()
        signal.connect(loop.quit)
        QTimer.singleShot(timeout_ms, loop.quit)
        loop.exec()

    def settle(ms=400):
        loop = QEventLoop()
        QTimer.singleShot(ms, loop.quit)
        loop.exec()

    tab.open_file(ROOT / "resources" / "samples" / f"{a.sample}.ply")
    wait(tab.input_loaded)
    settle()
    for name, k in (("auto", "auto"), ("k6", 6)):
        tab.form.set_value("k", k)
        t = time.perf_counter()
        tab.run(device="cpu")
        wait(tab.result_shown)
        dt = time.perf_counter() - t
        settle(1000)  # (the user looks at the result: the prefetch runs meanwhile after k = auto)
        tab.grab().save(str(a.out / f"mesh_{a.sample}_{name}.png"))
        print(f"{name}: {tab.result.seg.k} parts, run to result {1e3 * dt:.0f} ms; summary: "
              f"{tab.summary_label.text()}", flush=True)
    tab.runner.shutdown(10000)
    app.processEvents()
    return 0


if __name__ == "__main__":
    sys.exit(main())
