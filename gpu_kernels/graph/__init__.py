"""Graph algorithms on the GPU and the CPU.

:mod:`gpu_kernels.graph.apsp`: all-pairs shortest paths (tiled Floyd-Warshall on the GPU,
Dijkstra on the CPU), used by mesh segmentation and open to any tool with a graph.
"""
