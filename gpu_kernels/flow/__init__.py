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

from gpu_kernels.lazy import lazy_exports as _lazy_exports

# each name loads its submodule on first use (NumPy, SciPy, CuPy): importing the package or a
# light submodule of it stays cheap (start-up, issue 18 case 19)
__getattr__, __dir__ = _lazy_exports(__name__, {
    "FlowInputError": "_common", "FlowResult": "_common", "DEFAULT_METHOD": "api", "METHODS": "api",
    "backward_flow": "api", "compute_flow": "api", "optical_flow": "api", "block_matching": "blockmatch",
    "flow_to_color": "colorwheel", "make_colorwheel": "colorwheel", "lucas_kanade": "lucas_kanade",
    "flow_metrics": "metrics", "forward_backward_confidence": "metrics", "sparsification": "metrics",
    "ncc_confidence": "refine", "quality_weighted_smoothing": "refine", "tvl1_refine": "refine",
    "inverse_search_flow": "search",
})

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
