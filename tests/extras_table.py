"""What each optional extra of gpulab brings, by import name: one table for the suite. ``tests/conftest.py`` skips the
tests of an absent extra with the reason (markers ``medical`` and ``batch``); ``tests/packaging/test_packaging.py``
checks that no extra's module is imported at module level."""

#: an extra's modules (None: imported only where present, in no extra)
EXTRA_MODULES = {"SimpleITK": "medical", "dask": "batch", "distributed": "batch", "cupy": "cuda12",
                 "cupyx": "cuda12", "dask_cuda": None}
#: the extras whose tests carry a marker of the extra's name, and how a user gets each
MARKED = {"medical": "the medical extra (SimpleITK): pip install 'gpulab[medical]'",
          "batch": "the batch extra (Dask): pip install 'gpulab[batch]'"}


def modules_of(extra: str) -> tuple[str, ...]:
    """The import names that ``extra`` brings."""
    return tuple(m for m, e in EXTRA_MODULES.items() if e == extra)
