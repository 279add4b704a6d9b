"""2-D optical flow after Marras et al., "Two examples of GPGPU acceleration of memory-intensive
algorithms": multi-scale NCC block matching with a quality map, pyramidal Lucas-Kanade with
warping, an alpha mask and a reliability map, and a TV-L1 variational refinement seeded by
either; and the default for large motions (``search``: DIS-style patch inverse search over a
deep pyramid, densification, TV-L1 at every level), on the GPU (CUDA kernels in
``gpu_kernels/cuda/flow_*.cu``) or the CPU (NumPy/SciPy/OpenCV, the same function).

Convention (Middlebury): the flow ``f = (u, v)`` from IMG1 to IMG2 satisfies
``IMG2(x + f(x)) = IMG1(x)``, ``u`` along the columns, ``v`` along the rows.

Example
-------
>>> from gpu_kernels.flow import optical_flow, flow_metrics
>>> from gpu_kernels.flow.synthetic import synthetic_pair
>>> p = synthetic_pair("vortex", size=(96, 128), magnitude=4.0)
>>> res = optical_flow(p.img1, p.img2, method="refine", levels=3, iters=10, device="cpu")
>>> flow_metrics(res.u, res.v, p.flow, p.valid)["aee"] < 0.3
True
"""

from ._common import FlowInputError, FlowResult
from .api import DEFAULT_METHOD, METHODS, backward_flow, compute_flow, optical_flow
from .blockmatch import block_matching
from .colorwheel import flow_to_color, make_colorwheel
from .lucas_kanade import lucas_kanade
from .metrics import flow_metrics, forward_backward_confidence, sparsification
from .refine import ncc_confidence, quality_weighted_smoothing, tvl1_refine
from .search import inverse_search_flow

__all__ = [
    "FlowInputError",
    "FlowResult",
    "METHODS",
    "DEFAULT_METHOD",
    "optical_flow",
    "compute_flow",
    "backward_flow",
    "block_matching",
    "lucas_kanade",
    "tvl1_refine",
    "inverse_search_flow",
    "quality_weighted_smoothing",
    "ncc_confidence",
    "flow_to_color",
    "make_colorwheel",
    "flow_metrics",
    "sparsification",
    "forward_backward_confidence",
]
