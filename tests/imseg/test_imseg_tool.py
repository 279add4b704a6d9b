"""The tool layer and ``gpulab imseg`` (no Qt): parameters from the library, exports, bad
inputs with one-line errors and no partial output, the demo."""

from __future__ import annotations

import numpy as np
import pytest

from app.cli import main
from app.io.image_io import read_image, write_image
from app.io.labels_io import read_labels, read_region_table
from app.tools import imseg
from gpu_kernels.backend import get_backend
from gpu_kernels.imseg import segment as _seg


def test_params_come_from_the_library():
    d = imseg.PARAMS.defaults()
    assert d["k_max"] == _seg.DEFAULT_K_MAX and d["q"] == _seg.DEFAULT_Q
    assert d["iterations"] == _seg.DEFAULT_ITERATIONS and d["min_size"] == _seg.DEFAULT_MIN_SIZE
    assert d["connectivity"] == _seg.DEFAULT_CONNECTIVITY and d["bilateral"] == _seg.DEFAULT_BILATERAL
    assert imseg.PARAMS["iterations"].option == "--iters"


def test_cli_writes_labels_table_and_picture(tmp_path, capsys):
    src = imseg.samples()[0]
    out = tmp_path / "labels.tif"
    rc = main(["imseg", str(src), "-o", str(out), "--regions", str(tmp_path / "r.csv"), "--vis", "boundaries",
               "--vis-out", str(tmp_path / "b.png"), "--method", "kmeans", "--min-size", "100", "--device", "cpu",
               "--quiet"])
    assert rc == 0
    labels = read_labels(out)
    img = read_image(src)
    assert labels.shape == img.shape[:2] and labels.min() == 1
    assert np.bincount(labels.ravel())[1:].min() >= 100  # the minimum size holds
    table = read_region_table(tmp_path / "r.csv")
    assert table["label"].tolist() == list(range(1, labels.max() + 1))
    assert table["area"].tolist() == np.bincount(labels.ravel())[1:].tolist()
    assert {"bbox-3", "centroid-1", "intensity_mean-2", "intensity_mean_lab-0", "moments_central-3-3"} <= set(table)
    pic = read_image(tmp_path / "b.png")
    assert pic.shape == img.shape and (pic == (255, 255, 0)).all(axis=2).any()
    assert "regions:" in capsys.readouterr().out


@pytest.mark.parametrize("make,match", [
    (lambda p: p.write_bytes(b"garbage, not an image"), "coffee-bad"),
    (lambda p: p.write_bytes(b""), "empty"),
])
def test_cli_bad_input_one_line_no_output(tmp_path, capsys, make, match):
    bad = tmp_path / "coffee-bad.png"
    make(bad)
    out = tmp_path / "o.png"
    rc = main(["imseg", str(bad), "-o", str(out), "--device", "cpu", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "Traceback" not in err[0]
    assert match in err[0] or "empty" in err[0] or "read" in err[0]
    assert not out.exists()


def test_cli_bad_parameters_and_outputs(tmp_path, capsys):
    src = str(imseg.samples()[0])
    for args, needle in ((["--k-max", "5000000"], "k-max"), (["--connectivity", "6"], "connectivity"),
                         (["--q", "9"], "q"), (["--method", "kmeans", "--bilateral", "1", "--bilateral-window", "4"], "odd"),
                         (["-o", str(tmp_path / "x.gif")], ".gif")):
        argv = ["imseg", src, "-o", str(tmp_path / "o.png"), "--device", "cpu", "--quiet", *args]
        if args[0] == "-o":
            argv = ["imseg", src, *args, "--device", "cpu", "--quiet"]
        rc = main(argv)
        err = capsys.readouterr().err
        assert rc == 2, args
        assert needle in err, (args, err)
    assert not list(tmp_path.iterdir())


def test_png_refuses_more_than_65535_labels(tmp_path):
    # a 300 x 300 checkerboard of single pixels: 90,000 regions with 4-connectivity
    img = ((np.indices((300, 300)).sum(0) % 2) * 255).astype(np.uint8)
    write_image(tmp_path / "checker.png", img)
    data = imseg.load(tmp_path / "checker.png")
    res = imseg.run(data, {"method": "kmeans", "connectivity": 4, "min_size": 0}, device=get_backend("cpu"))
    assert res.seg.n_regions == 90000
    from app.io.labels_io import LabelsIOError

    with pytest.raises(LabelsIOError, match="65,535"):
        imseg.write_labels(res, tmp_path / "l.png")
    assert not (tmp_path / "l.png").exists()
    imseg.write_labels(res, tmp_path / "l.tif")
    assert read_labels(tmp_path / "l.tif").max() == 90000


def test_palette_grey16_and_one_row_images(tmp_path):
    from PIL import Image

    pal = Image.fromarray(np.repeat(np.arange(8, dtype=np.uint8)[None] // 4, 6, axis=0), mode="P")
    pal.putpalette([255, 0, 0, 0, 0, 255] + [0] * 762)
    pal.save(tmp_path / "pal.png")
    res = imseg.run(imseg.load(tmp_path / "pal.png"), {"min_size": 0}, device=get_backend("cpu"))
    assert res.seg.n_regions == 2
    write_image(tmp_path / "g16.png", (np.arange(60, dtype=np.uint16).reshape(6, 10) * 1000))
    res = imseg.run(imseg.load(tmp_path / "g16.png"), {"min_size": 0}, device=get_backend("cpu"))
    assert res.seg.labels.shape == (6, 10)
    write_image(tmp_path / "row.png", np.full((1, 40, 3), 90, np.uint8))
    res = imseg.run(imseg.load(tmp_path / "row.png"), {}, device=get_backend("cpu"))
    assert res.seg.n_regions == 1 and res.seg.features["bbox"].tolist() == [[0, 0, 1, 40]]


def test_demo_writes_everything(tmp_path):
    written = imseg.demo(tmp_path, device=get_backend("cpu"), names=("coffee",))
    names = sorted(p.name for p in written)
    assert names == ["coffee-boundaries.png", "coffee-labels.png", "coffee-mean.png", "coffee-random.png",
                     "coffee-regions.csv", "coffee-summary.txt"]
    assert "regions:" in (tmp_path / "coffee-summary.txt").read_text(encoding="utf-8")


def test_cli_contours_default_and_segments(tmp_path, capsys):
    """The default method follows contours; --n-segments sets the count, --coarseness the depth."""
    src = imseg.samples()[0]
    assert imseg.PARAMS.defaults()["method"] == "contours"
    out = tmp_path / "l.npy"
    assert main(["imseg", str(src), "-o", str(out), "--n-segments", "12", "--device", "cpu", "--quiet"]) == 0
    assert read_labels(out).max() == 12
    assert "contours, 12 segments" in capsys.readouterr().out
    assert main(["imseg", str(src), "-o", str(out), "--coarseness", "2", "--device", "cpu", "--quiet"]) == 0
    fine = read_labels(out).max()
    assert main(["imseg", str(src), "-o", str(out), "--coarseness", "4", "--device", "cpu", "--quiet"]) == 0
    assert read_labels(out).max() < fine
    capsys.readouterr()
    assert main(["imseg", str(src), "-o", str(out), "--coarseness", "12", "--device", "cpu", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "coarseness" in err[0]


def test_stage_cache_reruns_only_the_merge():
    """Changing the coarseness re-uses the cached colour and superpixel stages."""
    from app.tools.stages import StageCache

    data = imseg.load(imseg.samples()[0])
    cpu = get_backend("cpu")
    cache = StageCache(cap_bytes=1 << 30)
    p = imseg.PARAMS.validate({})
    r1, rep1 = imseg.PIPELINE.execute(data, p, device=cpu, cache=cache, scope="t")
    assert "superpixels" in rep1.ran
    p2 = imseg.PARAMS.validate({"coarseness": 3.0})
    r2, rep2 = imseg.PIPELINE.execute(data, p2, device=cpu, cache=cache, scope="t")
    assert rep2.ran == ["merge", "regions"] and {"colour", "superpixels"} <= set(rep2.reused)
    full = imseg.run(data, p2, device=cpu)
    np.testing.assert_array_equal(r2.seg.labels, full.seg.labels)
    assert r2.seg.n_regions > r1.seg.n_regions


def test_kmeans_parameter_does_not_rerun_cielab():
    """With the paper's pipeline, a k-means parameter re-runs only the segment stage (issue 20):
    CIELAB and the quantised colours come from the cache, with the full run's labels."""
    from app.tools.stages import StageCache

    data = imseg.load(imseg.samples()[0])
    cpu = get_backend("cpu")
    cache = StageCache(cap_bytes=1 << 30)
    p = imseg.PARAMS.validate({"method": "kmeans"})
    _, rep1 = imseg.PIPELINE.execute(data, p, device=cpu, cache=cache, scope="k")
    assert {"lab", "quantise", "kmeans", "segment"} <= set(rep1.ran)
    for change in ({"k_max": 16}, {"merge_distance": 10.0}, {"min_size": 64}, {"connectivity": 4}):
        p2 = imseg.PARAMS.validate({"method": "kmeans", **change})
        r2, rep2 = imseg.PIPELINE.execute(data, p2, device=cpu, cache=cache, scope="k")
        assert {"lab", "quantise"} <= set(rep2.reused) and "quantise" not in rep2.ran, change
        assert "segment" in rep2.ran
        full = imseg.run(data, p2, device=cpu)
        np.testing.assert_array_equal(r2.seg.labels, full.seg.labels)
    p3 = imseg.PARAMS.validate({"method": "kmeans", "q": 4})
    _, rep3 = imseg.PIPELINE.execute(data, p3, device=cpu, cache=cache, scope="k")
    assert "quantise" in rep3.ran


def test_segments_field_is_auto_by_default():
    """The Segments parameter reads 'auto' (the coarseness decides), not 0."""
    par = imseg.PARAMS["n_segments"]
    assert par.auto and par.is_auto(par.default) and par.to_text(par.default) == "auto"
    assert imseg.PARAMS.validate({"n_segments": "auto"})["n_segments"] == 0
    assert imseg.PARAMS.validate({"n_segments": 12})["n_segments"] == 12
