"""Only what pyproject.toml cannot say: the top-level ``resources/`` folder (samples, icons)
ships inside the wheel as the data-only package ``app.resources``, so an installed gpulab finds
them where ``app.tools.base.resources_dir()`` looks. Everything else is in pyproject.toml."""

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    """``app.resources`` is data only: scripts kept in ``resources/`` (sample generators,
    screenshot helpers) stay in the sdist and do not become modules of the wheel."""

    def find_package_modules(self, package, package_dir):
        if package == "app.resources":
            return []
        return super().find_package_modules(package, package_dir)


setup(
    packages=find_packages(include=["app", "app.*", "gpu_kernels", "gpu_kernels.*"]) + ["app.resources"],
    package_dir={"app.resources": "resources"},
    cmdclass={"build_py": BuildPy},
)
