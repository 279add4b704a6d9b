"""Write the image segmentation tool's bundled samples (run from the repository root):

    python resources/samples/imseg/make_samples.py

- ``coffee.jpg``: scikit-image's ``data.coffee()`` (a cup of coffee, public domain, Rachel
  Michetti), downscaled to 360 x 240, JPEG quality 92;
- ``astronaut.png``: ``data.astronaut()`` (Eileen Collins, NASA, public domain), downscaled
  to 256 x 256, 8-bit PNG.
"""

from __future__ import annotations

from pathlib import Path

import cv2
from skimage import data

HERE = Path(__file__).resolve().parent


def main() -> list[Path]:
    coffee = cv2.resize(data.coffee(), (360, 240), interpolation=cv2.INTER_AREA)
    astro = cv2.resize(data.astronaut(), (256, 256), interpolation=cv2.INTER_AREA)
    out = [HERE / "coffee.jpg", HERE / "astronaut.png"]
    cv2.imwrite(str(out[0]), cv2.cvtColor(coffee, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 92])
    cv2.imwrite(str(out[1]), cv2.cvtColor(astro, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_PNG_COMPRESSION, 9])
    return out


if __name__ == "__main__":
    for p in main():
        print(p, p.stat().st_size)
