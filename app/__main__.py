"""``python -m app`` and the frozen bundle's entry: the same as the ``gpulab`` command."""

import multiprocessing

# the guard matters: worker processes (multiprocessing spawn/forkserver) import this
# module as "__mp_main__" and must not start another gpulab
if __name__ == "__main__":
    # In the PyInstaller bundle a worker process (the mesh tool's shortest paths) is this same
    # executable started with multiprocessing's arguments: freeze_support() runs the worker's
    # task and exits there, before gpulab parses those arguments. A no-op when not frozen.
    multiprocessing.freeze_support()
    from app.cli import main

    raise SystemExit(main())
