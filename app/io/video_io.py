"""Frame sequences for the flow tool: a video file (read with OpenCV's ``cv2.VideoCapture``) or
a folder of images (natural sort order), stepped through pair by pair.

Frames come back as RGB(A) NumPy arrays like :func:`app.io.image_io.read_image`. A sequence
with fewer than two frames, an unreadable video, or frames of different sizes raise
:class:`VideoReadError` (an :class:`~gpu_kernels.errors.InputError`) with one line.

Example
-------
>>> import numpy as np, tempfile, pathlib
>>> from app.io.image_io import write_image
>>> from app.io.video_io import FrameSequence
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> for i in range(3):
...     _ = write_image(d / f"f{i}.png", np.full((4, 5), 40 * i, np.uint8))
>>> seq = FrameSequence(d)
>>> len(seq), seq.n_pairs, [int(f.max()) for f in seq.pair(1)]
(3, 2, [40, 80])
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from gpu_kernels.errors import InputError

from .inputs import check_input_file

__all__ = ["VIDEO_EXTENSIONS", "VideoReadError", "FrameSequence", "open_sequence"]

from .formats import VIDEO_EXTENSIONS  # noqa: E402 - declared there (no NumPy)


class VideoReadError(InputError):
    """A video or frame folder cannot be read. The message is one clear line."""


class FrameSequence:
    """Random access to the frames of a video file or an image folder.

    Parameters
    ----------
    source : path
        A video file (:data:`VIDEO_EXTENSIONS`) or a folder of images.

    Attributes
    ----------
    kind : {"video", "folder"}
    n_frames : int
    fps : float or None
    """

    def __init__(self, source: str | os.PathLike):
        self.path = Path(source)
        self._lock = threading.Lock()
        self._cap = None
        self._pos = -1
        self.fps = None
        check_input_file(self.path, error=VideoReadError, what="a video", allow_dir=True)
        if self.path.is_dir():
            from .image_io import ImageReadError, list_images

            self.kind = "folder"
            try:
                self._files = list_images(self.path)
            except ImageReadError as exc:
                raise VideoReadError(str(exc)) from None
            self.n_frames = len(self._files)
        else:
            self.kind = "video"
            self._open_video()
        if self.n_frames < 2:
            raise VideoReadError(f"{self.path.name}: {self.n_frames} frame(s); optical flow needs at least 2")
        self._shape = None

    # ------------------------------------------------------------------ video
    def _open_video(self):
        import cv2

        if self.path.suffix.lower() not in VIDEO_EXTENSIONS:
            raise VideoReadError(f"{self.path.name}: not a video file ({', '.join(VIDEO_EXTENSIONS)}) "
                                 f"or a folder of frames")
        if self.path.stat().st_size == 0:
            raise VideoReadError(f"{self.path.name}: the file is empty")
        cap = cv2.VideoCapture(str(self.path))
        if not cap.isOpened():
            raise VideoReadError(f"{self.path.name}: not a readable video (corrupt or unsupported codec)")
        n = int(cap.get(cv2.CAP_PROP_FRAME_COUNT) or 0)
        fps = cap.get(cv2.CAP_PROP_FPS)
        self.fps = float(fps) if fps and np.isfinite(fps) and fps > 0 else None
        if n <= 0:   # some containers do not say: count by decoding
            n = 0
            while cap.grab():
                n += 1
            cap.release()
            cap = cv2.VideoCapture(str(self.path))
        ok, frame = cap.read()
        if not ok or frame is None:
            cap.release()
            raise VideoReadError(f"{self.path.name}: no frame could be decoded")
        self._cap = cap
        self._pos = 0
        self._first = frame
        self.n_frames = n

    def _video_frame(self, i: int) -> np.ndarray:
        import cv2

        if i == 0 and self._first is not None:
            frame = self._first
        else:
            if i != self._pos + 1:
                self._cap.set(cv2.CAP_PROP_POS_FRAMES, i)
            ok, frame = self._cap.read()
            if not ok or frame is None:
                raise VideoReadError(f"{self.path.name}: frame {i} could not be decoded")
        self._pos = i
        if frame.ndim == 3 and frame.shape[2] == 3:
            frame = frame[..., ::-1]
        elif frame.ndim == 3 and frame.shape[2] == 4:
            frame = frame[..., [2, 1, 0, 3]]
        return np.ascontiguousarray(frame)

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return self.n_frames

    @property
    def n_pairs(self) -> int:
        return self.n_frames - 1

    def frame(self, i: int) -> np.ndarray:
        """Frame ``i`` (0-based) as an RGB(A) or grey array."""
        i = int(i)
        if not 0 <= i < self.n_frames:
            raise VideoReadError(f"frame {i} is out of range (0..{self.n_frames - 1})")
        with self._lock:
            if self.kind == "folder":
                from .image_io import read_image

                img = read_image(self._files[i])
            else:
                img = self._video_frame(i)
        if self._shape is None:
            self._shape = img.shape[:2]
        elif img.shape[:2] != self._shape:
            raise VideoReadError(f"frame {i} is {img.shape[1]} x {img.shape[0]}, the first frame "
                                 f"{self._shape[1]} x {self._shape[0]}: all frames must be the same size")
        return img

    def pair(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Frames ``i`` and ``i + 1``."""
        if not 0 <= int(i) < self.n_pairs:
            raise VideoReadError(f"pair {i} is out of range (0..{self.n_pairs - 1})")
        return self.frame(i), self.frame(int(i) + 1)

    def pairs(self):
        """Iterate over ``(i, frame_i, frame_i+1)``, reading each frame once."""
        prev = self.frame(0)
        for i in range(self.n_pairs):
            nxt = self.frame(i + 1)
            yield i, prev, nxt
            prev = nxt

    def name(self, i: int) -> str:
        """A label for frame ``i`` (its file name, or ``frame N``)."""
        if self.kind == "folder":
            return self._files[i].name
        return f"frame {i}"

    def close(self) -> None:
        if self._cap is not None:
            self._cap.release()
            self._cap = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_sequence(source: str | os.PathLike) -> FrameSequence:
    """Open a video file or a folder of frames (see :class:`FrameSequence`)."""
    return FrameSequence(source)
