"""Only what pyproject.toml cannot say: the top-level ``resources/`` folder (samples, icons)
ships inside the wheel as the data-only package ``app.resources``, so an installed gpulab finds
them where ``app.tools.base.resources_dir()`` looks. Everything else is in pyproject.toml."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["app", "app.*", "gpu_kernels", "gpu_kernels.*"]) + ["app.resources"],
    package_dir={"app.resources": "resources"},
)
