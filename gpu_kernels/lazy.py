"""Lazy imports (start-up, issue 18 case 19): standard library only.

``gpulab --help`` and the window's first paint need the tools' declarations (parameters,
exports, stages), not NumPy, SciPy, CuPy or the kernels. Two helpers defer those imports to
the first use:

* :func:`lazy_module` gives a stand-in for a module, imported on the first attribute access
  (thread-safe), for a module-level ``import numpy as np`` or ``from pkg import mod as _m``;
* :func:`lazy_exports` gives a package's ``__getattr__``/``__dir__`` (PEP 562), so that
  ``from gpu_kernels.mesh import segment_mesh`` imports only the submodule that defines it.

>>> from gpu_kernels.lazy import lazy_module
>>> json = lazy_module("json")
>>> json.dumps([1])
'[1]'

Set ``GPULAB_TRACE_LAZY=1`` to print a stack trace where each deferred module is first
loaded (to find what still imports NumPy at start-up).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
import types

__all__ = ["lazy_module", "lazy_exports", "lazy_function", "is_loaded"]

_lock = threading.RLock()


class LazyModule(types.ModuleType):
    """A module imported on first attribute access; every later lookup is forwarded to it (so
    that a monkeypatch of the real module is seen)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.__dict__["_lazy_target"] = name
        self.__dict__["_lazy_module"] = None

    def _lazy_load(self) -> types.ModuleType:
        mod = self.__dict__["_lazy_module"]
        if mod is not None:
            return mod
        with _lock:
            mod = self.__dict__["_lazy_module"]
            if mod is None:
                name = self.__dict__["_lazy_target"]
                if os.environ.get("GPULAB_TRACE_LAZY") and name not in sys.modules:
                    import traceback

                    sys.stderr.write(f"gpulab: lazy import of {name} from:\n")
                    traceback.print_stack(limit=8, file=sys.stderr)
                mod = importlib.import_module(name)
                self.__dict__["_lazy_module"] = mod
        return mod

    def __getattr__(self, attr: str):
        if attr.startswith("__") and attr.endswith("__") and attr not in ("__file__", "__path__", "__version__",
                                                                          "__all__", "__spec__"):
            raise AttributeError(attr)
        return getattr(self._lazy_load(), attr)

    def __setattr__(self, attr: str, value) -> None:
        # a test's monkeypatch.setattr(tool_module._seg, ...) must reach the real module (and
        # one on the real module must be seen here: every lookup goes to the module)
        setattr(self._lazy_load(), attr, value)

    def __delattr__(self, attr: str) -> None:
        delattr(self._lazy_load(), attr)

    def __dir__(self):
        return dir(self._lazy_load())

    def __repr__(self) -> str:
        state = "loaded" if self.__dict__["_lazy_module"] is not None else "not loaded yet"
        return f"<lazy module {self.__dict__['_lazy_target']!r} ({state})>"


def lazy_module(name: str) -> types.ModuleType:
    """The module ``name`` if it is imported already, else a stand-in that imports it on the
    first attribute access."""
    mod = sys.modules.get(name)
    if mod is not None and not _is_partial(mod):
        return mod
    return LazyModule(name)


def _is_partial(mod) -> bool:
    spec = getattr(mod, "__spec__", None)
    return bool(getattr(spec, "_initializing", False))


def is_loaded(mod) -> bool:
    """False for a :func:`lazy_module` stand-in not used yet."""
    return not isinstance(mod, LazyModule) or mod.__dict__["_lazy_module"] is not None


def lazy_exports(package: str, exports: dict[str, str]):
    """``(__getattr__, __dir__)`` for ``package``'s ``__init__``: each name of ``exports`` is
    imported from the submodule it maps to (relative, e.g. ``{"segment_mesh": "segment"}``)
    on first use, then kept in the package."""

    def __getattr__(name: str):
        sub = exports.get(name)
        if sub is None:
            # a submodule the eager __init__ used to import on the way (gpu_kernels.mesh.metrics)
            if not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}") is not None:
                return importlib.import_module(f"{package}.{name}")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        mod = importlib.import_module(f"{package}.{sub}")
        value = mod if name == sub and not hasattr(mod, name) else getattr(mod, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(exports))

    # A name that is both a submodule and a function of it (gpu_kernels.flow.lucas_kanade): the
    # eager __init__ bound the function over the submodule; importing the submodule later sets
    # the package's attribute to the module, so the package keeps the function instead.
    clashes = {name for name, sub in exports.items() if name == sub}
    pkg = sys.modules.get(package)
    if clashes and pkg is not None and type(pkg) is types.ModuleType:
        class _Package(types.ModuleType):
            def __setattr__(self, name, value):
                if name in clashes and isinstance(value, types.ModuleType) and hasattr(value, name):
                    value = getattr(value, name)
                super().__setattr__(name, value)

        pkg.__class__ = _Package
    return __getattr__, __dir__


class LazyFunction:
    """A function named ``"package.module:name"``, imported on the first call. ``__name__``
    answers without importing; :func:`inspect.signature` sees the real function through
    ``__wrapped__``."""

    def __init__(self, ref: str):
        module, _, name = ref.partition(":")
        if not module or not name:
            raise ValueError(f"expected 'package.module:function', got {ref!r}")
        self._module, self.__name__, self.__qualname__ = module, name, name
        self._fn = None

    @property
    def __wrapped__(self):
        if self._fn is None:
            self._fn = getattr(importlib.import_module(self._module), self.__name__)
        return self._fn

    def __call__(self, *args, **kwargs):
        return self.__wrapped__(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<function {self._module}.{self.__name__} (imported on first call)>"


def lazy_function(ref: str) -> LazyFunction:
    """A stand-in for the function ``"package.module:name"`` (see :class:`LazyFunction`)."""
    return LazyFunction(ref)
