"""``python -m app``: the same as the ``gpulab`` command."""

from app.cli import main

raise SystemExit(main())
