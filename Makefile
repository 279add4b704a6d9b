# gpulab: `make run` starts the app, `make test` runs the checks CI runs.
#
#   make run          create .venv if missing, install gpulab (+ CuPy when nvidia-smi finds a
#                     driver), open the window on the bundled samples
#   make test         .venv with the dev extra, Xvfb + Qt's xcb libraries and g++ (apt, when root),
#                     ruff, import-linter, the whole pytest suite (on every core, at most 4:
#                     PYTEST_WORKERS=1 for one process), then make wheel-check (WHEEL_CHECK=0 skips that)
#   make test-py312   make test again in .venv312 with Python 3.12, the other version pyproject.toml
#                     declares (python3.12 on PATH, else pyenv's newest 3.12); says so where there is none
#   make gpu-test     only the tests marked `gpu` (on a CUDA host)
#   make lint         ruff + import-linter
#   make demo         gpulab demo --out demo-out
#   make screenshot   resources/screenshot-main.png, taken under Xvfb
#   make bench        benchmarks (on a CUDA host)
#   make wheel-check  build wheel + sdist, twine and check-wheel-contents, install the wheel into a
#                     fresh venv outside the tree, run --version, demo and every tool from there
#   make package      stand-alone folder (PyInstaller) -> dist/gpulab-VERSION-linux-x86_64[-cudaNN].tar.gz
#   make package-check  unpack that archive in a temp folder, run it under Xvfb (version, demo
#                     compared with the checkout's, mesh-seg, install.sh), report size and start time
#   make desktop-check  desktop-file-validate and appstreamcli on the menu entry and AppStream file
#
# Variables: PYTHON (interpreter for the venv, default python3), VENV (default .venv),
# CUDA_EXTRA (cuda12, cuda13 or none; default: from the driver's CUDA version),
# RUN_ARGS (extra arguments for gpulab in `make run`), PYTEST_ARGS, PYTEST_WORKERS (make test: pytest processes),
# WHEEL_DEPS (wheel-check: reuse = the dev venv's dependencies, default; full = pip installs them),
# PACKAGE_VENV (make package's build venv, default build/package-venv-$(CUDA_EXTRA)),
# PACKAGE_FROM (make package from a clean `git archive` of that revision), GZIP_LEVEL (default 9).

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
comma := ,
PIP := $(PY) -m pip install --quiet --disable-pip-version-check --progress-bar off

# CuPy wheel matching the driver: nvidia-smi prints "CUDA Version: 12.4" (the newest CUDA
# the driver supports); CUDA 12 drivers get cupy-cuda12x, 13 and newer cupy-cuda13x.
CUDA_MAJOR := $(shell nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\).*/\1/p' | head -n1)
ifeq ($(origin CUDA_EXTRA),undefined)
  ifeq ($(CUDA_MAJOR),)
    CUDA_EXTRA := none
  else ifeq ($(CUDA_MAJOR),12)
    CUDA_EXTRA := cuda12
  else ifeq ($(shell [ "$(CUDA_MAJOR)" -ge 13 ] 2>/dev/null && echo new),new)
    CUDA_EXTRA := cuda13
  else
    CUDA_EXTRA := none
  endif
endif
EXTRAS_RUN := [medical,batch,fast$(if $(filter none,$(CUDA_EXTRA)),,$(comma)$(CUDA_EXTRA))]
EXTRAS_DEV := [dev$(if $(filter none,$(CUDA_EXTRA)),,$(comma)$(CUDA_EXTRA))]

STAMP_RUN := $(VENV)/.stamp-run-$(CUDA_EXTRA)
STAMP_DEV := $(VENV)/.stamp-dev-$(CUDA_EXTRA)

# what Qt's xcb platform plugin and VTK's OpenGL need under Xvfb
XVFB_PKGS := xvfb xauth libxcb-cursor0 libxkbcommon-x11-0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 \
	libxcb-randr0 libxcb-render-util0 libxcb-shape0 libxcb-xinerama0 libxcb-xkb1 libgl1 libegl1 \
	libglx-mesa0 libgl1-mesa-dri libfontconfig1 libdbus-1-3

VERSION := $(shell sed -n 's/^version *= *"\(.*\)"/\1/p' pyproject.toml | head -n1)
ARCHIVE := dist/gpulab-$(VERSION)-linux-x86_64$(if $(filter none,$(CUDA_EXTRA)),,-$(CUDA_EXTRA)).tar.gz
WHEEL_DEPS ?= reuse
PACKAGE_VENV ?= build/package-venv-$(CUDA_EXTRA)

.PHONY: help venv install dev run test test-py312 lint gpu-test demo screenshot bench xvfb-deps emu-deps clean distclean \
	wheel-check package package-check desktop-check desktop-deps

help:
	@sed -n 's/^#   //p' Makefile

# ------------------------------------------------------------------ environment
$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' || \
	  { echo "gpulab needs Python >= 3.11; $(PYTHON) is $$($(PYTHON) --version 2>&1). Use make PYTHON=python3.11"; exit 1; }
	@echo "Creating $(VENV) with $$($(PYTHON) --version)"
	@$(PYTHON) -m venv $(VENV) || { echo "python -m venv failed: install the venv module (e.g. apt-get install python3-venv)"; exit 1; }

venv: $(PY)

$(STAMP_RUN): pyproject.toml | $(PY)
	@echo "Installing gpulab$(EXTRAS_RUN) into $(VENV) (CUDA extra: $(CUDA_EXTRA))"
	@$(PIP) -e ".$(EXTRAS_RUN)" > $(VENV)/pip-install.log 2>&1 || { cat $(VENV)/pip-install.log; exit 1; }
	@$(PY) -m gpu_kernels.flow._numba || true  # compile the flow's CPU loops once (about 20 s), not at the first flow
	@touch $@

$(STAMP_DEV): pyproject.toml | $(PY)
	@echo "Installing gpulab$(EXTRAS_DEV) into $(VENV) (CUDA extra: $(CUDA_EXTRA))"
	@$(PIP) -e ".$(EXTRAS_DEV)" > $(VENV)/pip-install.log 2>&1 || { cat $(VENV)/pip-install.log; exit 1; }
	@touch $@ $(STAMP_RUN)

install: $(STAMP_RUN)
dev: $(STAMP_DEV)

# Xvfb and the X libraries Qt's xcb plugin loads; installed through apt when missing and root.
xvfb-deps:
	@missing=""; \
	if command -v dpkg-query >/dev/null 2>&1; then \
	  for p in $(XVFB_PKGS); do \
	    dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	  done; \
	elif ! command -v Xvfb >/dev/null 2>&1; then missing="xvfb"; fi; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing through apt:$$missing"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends $$missing >/dev/null \
	      || { echo "apt-get install failed"; exit 1; }; \
	  elif ! command -v Xvfb >/dev/null 2>&1; then \
	    echo "Note: Xvfb is missing and I am not root; GUI tests will run on Qt's offscreen platform."; \
	    echo "      To run them as CI does: sudo apt-get install$$missing"; \
	  fi; \
	fi

# $(call apt-install,CHECK,PACKAGES,NOTE,FAIL): when the shell test CHECK fails, apt-get install
# PACKAGES if root (apt-get update only when the plain install fails); otherwise print NOTE, and
# exit 1 when FAIL is 1. No comma inside an argument.
apt-install = if ! { $(1); }; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing through apt: $(2)"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    { apt-get install -y -qq --no-install-recommends $(2) >/dev/null 2>&1 || \
	      { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends $(2) >/dev/null; }; } \
	      || { echo "apt-get install $(2) failed"; exit 1; }; \
	  else echo "$(3)"; $(if $(filter 1,$(4)),exit 1;) fi; \
	fi

# a C++ compiler for the tests that run the CUDA kernels on the CPU (tests/cuda_emu); installed
# through apt when missing and root, otherwise those tests skip and say why
emu-deps:
	@$(call apt-install,command -v g++ >/dev/null 2>&1 || command -v c++ >/dev/null 2>&1,g++,Note: no C++ compiler; the emulated CUDA kernel tests will skip (apt-get install g++).,0)

# ------------------------------------------------------------------ run
HAVE_DISPLAY := $(or $(DISPLAY),$(WAYLAND_DISPLAY))
XVFB_RUN := $(if $(HAVE_DISPLAY),,$(shell command -v xvfb-run 2>/dev/null))

run: $(STAMP_RUN)
	@$(if $(HAVE_DISPLAY),,$(if $(XVFB_RUN),echo "No display: running under Xvfb (xvfb-run). Use 'make screenshot' to see the window.",echo "No display and no xvfb-run: Qt will use its offscreen platform."))
	$(if $(XVFB_RUN),$(XVFB_RUN) -a -s "-screen 0 1400x900x24" env QT_QPA_PLATFORM=xcb) $(VENV)/bin/gpulab --samples $(RUN_ARGS)

screenshot: $(STAMP_RUN) xvfb-deps
	xvfb-run -a -s "-screen 0 1400x900x24" env QT_QPA_PLATFORM=xcb \
	  $(VENV)/bin/gpulab --samples --run --screenshot resources/screenshot-main.png --screenshot-delay 2000

demo: $(STAMP_RUN)
	$(VENV)/bin/gpulab demo --out demo-out

# ------------------------------------------------------------------ checks
lint: $(STAMP_DEV)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

# pytest-xvfb starts Xvfb for the session; under it Qt uses xcb so VTK views get OpenGL.
QT_PLATFORM = $(if $(shell command -v Xvfb 2>/dev/null),xcb,offscreen)

# pytest on PYTEST_WORKERS processes (pytest-xdist, in the dev extra; default: the cores, at most 4;
# 1 = one process). --dist loadfile: all of a file's tests on one worker, so its module fixtures are
# built once; each worker starts its own Xvfb (pytest-xvfb). Without xdist: one process.
PYTEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); echo $$(( n > 4 ? 4 : n )))
# then the wheel as a user installs it (make wheel-check, ~2 min on 2 idle cores); WHEEL_CHECK=0 skips it
WHEEL_CHECK ?= 1
test: $(STAMP_DEV) xvfb-deps desktop-deps emu-deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	@rc=0; xd=""; \
	if [ "$(PYTEST_WORKERS)" -gt 1 ] 2>/dev/null && $(PY) -c "import xdist" 2>/dev/null; then \
	  xd="-n $(PYTEST_WORKERS) --dist loadfile"; fi; \
	QT_QPA_PLATFORM=$(QT_PLATFORM) GPULAB_TEST_EXTRAS=required $(PY) -m pytest -ra $$xd $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc = 5 ]; then echo "pytest collected no tests"; rc=0; fi; exit $$rc
	@if [ "$(WHEEL_CHECK)" != 0 ]; then $(MAKE) --no-print-directory wheel-check; fi

# the second declared version (session 31: Python 3.12's compensated sum() broke a staged run that 3.11 passed);
# a pyenv shim with no 3.12 selected does not count; where no 3.12 runs it prints why and does nothing, and .ci/run says so in its last line
PY312 ?= $(shell for p in $$(command -v python3.12 2>/dev/null) $$(ls -1d $(HOME)/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null | sort -rV); do \
	$$p -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' >/dev/null 2>&1 && { echo $$p; break; }; done)
test-py312:
	@if [ -z "$(PY312)" ]; then \
	  echo "make test-py312: no Python 3.12 here (python3.12 on PATH, or ~/.pyenv/versions/3.12*): not run"; \
	else echo "== make test with $$($(PY312) --version) in .venv312"; \
	  $(MAKE) --no-print-directory test PYTHON=$(PY312) VENV=.venv312; fi

gpu-test: $(STAMP_DEV)
	@rc=0; $(PY) -m pytest -m gpu -ra -s $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc = 5 ]; then echo "no GPU tests collected"; rc=0; fi; exit $$rc

bench: $(STAMP_RUN)
	@for b in benchmarks/mesh.py benchmarks/mesh_psb.py; do \
	  if [ -f $$b ]; then echo "== $$b"; $(PY) $$b || exit $$?; fi; done

# ------------------------------------------------------------------ packaging (packaging/README.md)
# desktop-file-validate and appstreamcli, through apt when missing and root; without them
# desktop-check stops, while make test only notes it (their tests skip; WHEEL_CHECK=0 needs none)
DESKTOP_DEPS_STRICT ?= 1
test: DESKTOP_DEPS_STRICT := 0
desktop-deps:
	@$(call apt-install,command -v desktop-file-validate >/dev/null 2>&1 && command -v appstreamcli >/dev/null 2>&1,desktop-file-utils appstream,$(if $(filter 1,$(DESKTOP_DEPS_STRICT)),desktop-check needs,Note: the desktop file tests will skip without) desktop-file-validate and appstreamcli (apt-get install desktop-file-utils appstream),$(DESKTOP_DEPS_STRICT))

desktop-check: desktop-deps
	desktop-file-validate packaging/linux/org.gpulab.gpulab.desktop
	appstreamcli validate --no-net packaging/linux/org.gpulab.gpulab.metainfo.xml

wheel-check: $(STAMP_DEV) desktop-check
	WHEEL_CHECK_COMPARE=$${WHEEL_CHECK_COMPARE:-1} packaging/wheel_check.sh $(PY) $(WHEEL_DEPS)

$(PACKAGE_VENV)/.stamp: pyproject.toml setup.py
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' || \
	  { echo "gpulab needs Python >= 3.11; $(PYTHON) is $$($(PYTHON) --version 2>&1)"; exit 1; }
	@test -x $(PACKAGE_VENV)/bin/python || $(PYTHON) -m venv $(PACKAGE_VENV)
	@echo "Installing gpulab[medical,batch$(if $(filter none,$(CUDA_EXTRA)),,$(comma)$(CUDA_EXTRA))] and PyInstaller into $(PACKAGE_VENV)"
	@$(PACKAGE_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --progress-bar off \
	  "pyinstaller>=6.10" ".[medical,batch$(if $(filter none,$(CUDA_EXTRA)),,$(comma)$(CUDA_EXTRA))]" \
	  $(if $(filter none,$(CUDA_EXTRA)),,"cupy-$(CUDA_EXTRA)x[ctk]") \
	  > $(PACKAGE_VENV)/pip-install.log 2>&1 || { tail -30 $(PACKAGE_VENV)/pip-install.log; exit 1; }
	@touch $@

# build_bundle.sh reinstalls gpulab itself (not editable) from this tree, or from a clean
# `git archive` of PACKAGE_FROM (make package PACKAGE_FROM=HEAD)
package: $(PACKAGE_VENV)/.stamp
	nice -n 10 packaging/build_bundle.sh $(PACKAGE_VENV) $(CUDA_EXTRA)

# the reference demo comes from the build venv's gpulab: the installed (not editable) package
# of exactly the source the bundle was frozen from
package-check: xvfb-deps desktop-deps
	@test -f $(ARCHIVE) || { echo "no $(ARCHIVE): run make package$(if $(filter none,$(CUDA_EXTRA)),, CUDA_EXTRA=$(CUDA_EXTRA)) first"; exit 1; }
	@test -x $(PACKAGE_VENV)/bin/gpulab || { echo "no $(PACKAGE_VENV)/bin/gpulab: run make package first"; exit 1; }
	packaging/package_check.sh $(ARCHIVE) $(PACKAGE_VENV)/bin/gpulab

# ------------------------------------------------------------------ cleaning
clean:
	rm -rf build dist *.egg-info .pytest_cache .ruff_cache demo-out
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) .venv312
