"""The optical-flow tool's input: a pair of frames (two images, or a pair of a video or a frame
folder), with a ground truth or a mask when there is one. :mod:`app.tools.flow` re-exports
everything here (``flow.load``, ``flow.FlowData``, ...).

Opening one image takes the next image of its folder (natural order) as the second frame, so
``frame10.png`` pairs with ``frame11.png``; a ground-truth flow lying beside them
(``flow10.flo``, ``flow_gt.png``, ...) is loaded too. A video file or a folder of frames is
stepped through pair by pair (:func:`with_pair`).
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gpu_kernels.errors import InputError
from gpu_kernels.jobs import Progress, as_progress
from gpu_kernels.lazy import lazy_module

from ..io import formats as _formats
from ..io.registry import input_kind

if TYPE_CHECKING:
    import numpy as np

    from ..io import flow_io, image_io, video_io
else:
    np = lazy_module("numpy")
    flow_io = lazy_module("app.io.flow_io")
    image_io = lazy_module("app.io.image_io")
    video_io = lazy_module("app.io.video_io")

__all__ = ["FlowData", "load", "load_pair", "with_pair", "with_ground_truth", "with_mask"]

@dataclass
class FlowData:
    """A pair of frames, and what belongs to them.

    ``sequence`` is set for a video or a frame folder (``index`` is the pair shown);
    ``gt`` is ``(flow (H, W, 2), valid (H, W))`` when a ground truth is known; ``mask`` the
    region of interest (bool (H, W)) when one was given.
    """

    img1: np.ndarray
    img2: np.ndarray
    name1: str
    name2: str
    path: pathlib.Path | None = None
    sequence: video_io.FrameSequence | None = None
    index: int = 0
    gt: tuple | None = None
    gt_path: pathlib.Path | None = None
    mask: np.ndarray | None = None
    mask_path: pathlib.Path | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.name if self.path is not None else self.name1

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.img1.shape[:2])

    @property
    def n_pairs(self) -> int:
        return self.sequence.n_pairs if self.sequence is not None else 1


def _find_ground_truth(folder: pathlib.Path, shape) -> tuple[pathlib.Path, tuple] | None:
    """A flow file in ``folder`` that fits ``shape`` (Middlebury's flow10.flo, flow_gt.png, ...):
    where truth sits is the reader registry's (``app.io.registry``, kind ``frames``)."""
    for p in input_kind("frames").truth_beside(folder):
        try:
            f, v = flow_io.read_flow(p)
        except InputError:
            continue
        if f.shape[:2] == tuple(shape):
            return p, (f, v)
    return None


def _partner(path: pathlib.Path) -> pathlib.Path:
    """The next image of the folder (flow ground truths such as flow_gt.png skipped), from the registry."""
    nxt = input_kind("frames").partner(path)
    if nxt is None:
        raise InputError(f"{path.name} has no next image in its folder to pair with: open the second frame too "
                         f"(gpulab flow IMG1 IMG2)")
    return nxt


def load_pair(path1, path2, *, progress: Progress | None = None) -> FlowData:
    """Two image files as a pair (a ground truth beside the first is picked up)."""
    progress = as_progress(progress)
    p1, p2 = pathlib.Path(path1), pathlib.Path(path2)
    a = image_io.read_image(p1)
    b = image_io.read_image(p2)
    if a.shape[:2] != b.shape[:2]:
        raise InputError(f"{p1.name} is {a.shape[1]} x {a.shape[0]} but {p2.name} is {b.shape[1]} x {b.shape[0]}: "
                         "both frames must be the same size")
    data = FlowData(a, b, p1.name, p2.name, p1)
    found = _find_ground_truth(p1.parent, a.shape[:2])
    if found is not None and found[0].resolve() not in (p1.resolve(), p2.resolve()):
        data.gt_path, data.gt = found
    progress.update(1.0, f"read {p1.name} and {p2.name}")
    return data


def load(path, *, progress: Progress | None = None) -> FlowData:
    """An image (paired with the next image of its folder), a video file or a frame folder."""
    progress = as_progress(progress)
    path = pathlib.Path(path)
    if path.is_dir() or path.suffix.lower() in video_io.VIDEO_EXTENSIONS:
        seq = video_io.FrameSequence(path)
        a, b = seq.pair(0)
        if a.shape != b.shape:
            raise InputError(f"{path.name}: the frames differ in size or channels")
        data = FlowData(a, b, seq.name(0), seq.name(1), path, seq, 0)
        if path.is_dir() and len(seq) == 2:
            # a folder of one pair (Middlebury's frame10/frame11/flow10.flo, FlyingChairs'
            # img0/img1/flow.flo): a flow file beside them is that pair's ground truth
            found = _find_ground_truth(path, a.shape[:2])
            if found is not None:
                data.gt_path, data.gt = found
        progress.update(1.0, f"opened {path.name}: {len(seq)} frames")
        return data
    if not path.exists():
        raise InputError(f"no such file: {path}")
    ext = path.suffix.lower()
    if ext not in _formats.IMAGE_EXTENSIONS:   # not a frame: say so before looking for its partner
        raise InputError(f"{path.name}: unsupported image type {ext or '(no extension)'}; gpulab reads "
                         f"{', '.join(_formats.IMAGE_EXTENSIONS)} images, {', '.join(_formats.VIDEO_EXTENSIONS)} "
                         "videos and folders of frames")
    return load_pair(path, _partner(path), progress=progress)


def with_pair(data: FlowData, index: int) -> FlowData:
    """The same sequence at pair ``index`` (frames ``index`` and ``index + 1``)."""
    if data.sequence is None:
        raise InputError("only a video or a frame folder has more than one pair")
    a, b = data.sequence.pair(int(index))
    return replace(data, img1=a, img2=b, name1=data.sequence.name(index), name2=data.sequence.name(index + 1),
                   index=int(index), gt=None, gt_path=None)


def with_ground_truth(data: FlowData, path) -> FlowData:
    path = pathlib.Path(path)
    f, v = flow_io.read_flow(path)
    if f.shape[:2] != data.shape:
        raise InputError(f"{path.name} is {f.shape[1]} x {f.shape[0]} but the frames are "
                         f"{data.shape[1]} x {data.shape[0]}")
    return replace(data, gt=(f, v), gt_path=path)


def with_mask(data: FlowData, path) -> FlowData:
    """A mask image (non-zero = region of interest; the alpha channel where there is one)."""
    if path is None:
        return replace(data, mask=None, mask_path=None)
    path = pathlib.Path(path)
    m = image_io.read_image(path)
    if m.ndim == 3:
        m = m[..., -1] if m.shape[2] in (2, 4) else m.max(axis=2)
    if m.shape[:2] != data.shape:
        raise InputError(f"the mask {path.name} is {m.shape[1]} x {m.shape[0]} but the frames are "
                         f"{data.shape[1]} x {data.shape[0]}: give a mask of the frames' size")
    mask = m > 0
    if not mask.any():
        raise InputError(f"the mask {path.name} selects no pixel (it is all zero)")
    return replace(data, mask=mask, mask_path=path)
