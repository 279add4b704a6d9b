"""``python -m app``: the same as the ``gpulab`` command."""

from app.cli import main

# the guard matters: worker processes (multiprocessing spawn/forkserver) import this
# module as "__mp_main__" and must not start another gpulab
if __name__ == "__main__":
    raise SystemExit(main())
