"""``gpulab info``: print the compute device and library versions."""

from __future__ import annotations

import argparse

from gpu_kernels.lazy import lazy_module

from .common import add_device_arg, select_device


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "info",
        help="print the compute device and library versions",
        description="Print which compute device gpulab would use, and the versions of its libraries.",
    )
    add_device_arg(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    be = select_device(args)
    print(lazy_module("gpu_kernels.backend").device_report(be))
    return 0
