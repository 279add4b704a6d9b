"""2-D optical flow (Marras et al.): NCC block matching, pyramidal Lucas-Kanade, TV-L1 refinement."""

from ._common import FlowInputError, FlowResult
from .lucas_kanade import lucas_kanade

__all__ = ["FlowInputError", "FlowResult", "lucas_kanade"]
from .blockmatch import block_matching  # noqa: E402

__all__ += ["block_matching"]
from .refine import ncc_confidence, quality_weighted_smoothing, tvl1_refine  # noqa: E402

__all__ += ["tvl1_refine", "quality_weighted_smoothing", "ncc_confidence"]
