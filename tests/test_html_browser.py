"""The HTML reports render in a real headless browser (Chromium from the distribution's packages):
a screenshot of each report is a non-blank picture. Slow, and skipped where no Chromium is installed."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib

import numpy as np
import pandas as pd
import pytest
from program_examples import FIG1

import faircert
from faircert.models.linear import ColumnEncoding, LinearModel
from faircert.report.render import Outputs, render
from faircert.report.rows import render_rows

pytestmark = pytest.mark.slow

BROWSER = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


def _png_colours(path) -> int:
    """How many distinct byte values the decompressed image data holds (a blank page: very few)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    return len(set(zlib.decompress(idat)))


@pytest.mark.skipif(BROWSER is None, reason="no Chromium installed")
def test_reports_render_in_a_headless_browser(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "sex": rng.choice(["Female", "Male"], 300),
            "age": rng.integers(0, 30, 300),
            "race": rng.choice(["A", "B", "C"], 300),
        }
    )
    model = LinearModel(
        np.array([1.0, 0.1, -0.4]),
        -2.0,
        (ColumnEncoding("sex", "onehot", ("Male",)), ColumnEncoding("age"), ColumnEncoding("race", "onehot", ("B",))),
    )
    fairer = LinearModel(np.array([0.1, 0.1, -0.1]), -1.0, model.encoding)
    results = {
        "verify": faircert.verify(model, df, protected="sex"),
        "group": faircert.group(model, df, protected="sex,race", population="independent", influence=True),
        "rows": faircert.audit(model, df, protected="sex,race", epsilon={"age": 2}),
        "program": faircert.verify_program(FIG1, epsilon=0.1, kind="parity", time_limit=10),
        "compare": faircert.compare({"model": model, "fairer": fairer}, df, "sex"),
    }
    for name, result in results.items():
        render(result, Outputs(html=str(tmp_path / f"{name}.html"), console=False))
    for name in ("verify", "group", "rows", "program", "compare"):
        shot = tmp_path / f"{name}.png"
        subprocess.run(
            [
                BROWSER,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--window-size=1000,1400",
                f"--screenshot={shot}",
                (tmp_path / f"{name}.html").as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        assert shot.stat().st_size > 10_000 and _png_colours(shot) > 50


@pytest.mark.skipif(BROWSER is None, reason="no Chromium installed")
def test_the_per_row_page_needs_no_sideways_scrolling_at_1280_pixels(tmp_path):
    """Twenty features, long category names and values: each unfair row's decision and changes
    stay on screen (the page is as wide as the window)."""
    rng = np.random.default_rng(1)
    columns = {f"feature_with_a_long_name_{k}": rng.integers(0, 1_000_000, 200) for k in range(18)}
    df = pd.DataFrame(
        {"sex": rng.choice(["Female", "Male"], 200), "occupation": rng.choice(["Handlers-cleaners" * 4, "Sales"], 200)}
        | columns
    )
    weights = np.concatenate([[1.0, 0.5], rng.normal(0, 1e-6, 18)])
    encoding = (ColumnEncoding("sex", "onehot", ("Male",)), ColumnEncoding("occupation", "onehot", ("Sales",)))
    model = LinearModel(weights, -1.0, encoding + tuple(ColumnEncoding(c) for c in columns))
    result = faircert.audit(model, df, protected="sex", epsilon={next(iter(columns)): 1000})
    assert result.counts()["unfair"] > 0
    page = render_rows(result).replace(
        "</body>", "<script>document.body.dataset.width = document.documentElement.scrollWidth</script></body>"
    )
    (tmp_path / "rows.html").write_text(page)
    shown = subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,900", "--dump-dom"]
        + [(tmp_path / "rows.html").as_uri()],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    width = int(shown.split('data-width="', 1)[1].split('"', 1)[0])
    assert width <= 1280
