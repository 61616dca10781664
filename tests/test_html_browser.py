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
from faircert.report.group_html import write_comparison_html, write_group_html
from faircert.report.html import write_html
from faircert.report.program_html import write_program_html
from faircert.report.rows import write_rows_html

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
    write_html(faircert.verify(model, df, protected="sex"), tmp_path / "verify.html")
    write_group_html(
        faircert.group(model, df, protected="sex,race", population="independent", influence=True),
        tmp_path / "group.html",
    )
    write_rows_html(faircert.audit(model, df, protected="sex,race", epsilon={"age": 2}), tmp_path / "rows.html")
    write_program_html(
        faircert.verify_program(FIG1, epsilon=0.1, kind="parity", time_limit=10), tmp_path / "program.html"
    )
    fairer = LinearModel(np.array([0.1, 0.1, -0.1]), -1.0, model.encoding)
    write_comparison_html(faircert.compare({"model": model, "fairer": fairer}, df, "sex"), tmp_path / "compare.html")
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
