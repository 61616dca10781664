"""`faircert program`: exit codes and the JSON keys."""

import json

from program_examples import FIG1, FIG1_FIXED

from faircert.cli import main


def test_exit_codes_and_json(tmp_path, capsys):
    bad = tmp_path / "ex.fr"
    bad.write_text(FIG1)
    good = tmp_path / "fixed.fr"
    good.write_text(FIG1_FIXED)
    out = tmp_path / "r.json"
    assert main(["program", str(bad), "--epsilon", "0.1", "--json", str(out), "--quiet"]) == 1
    data = json.loads(out.read_text())
    for key in ("verdict", "ratio", "probabilities", "epsilon", "method", "guarantee", "elapsed_s"):
        assert key in data
    assert data["verdict"] == "unfair" and data["guarantee"] == "sound" and data["epsilon"] == 0.1
    assert data["ratio"]["low"] <= 0.484 <= data["ratio"]["high"]
    assert set(data["probabilities"]["sensitive"]) == {"low", "high"}
    assert main(["program", str(good), "--epsilon", "0.1", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["program", str(good), "--epsilon", "0.1", "--method", "sampling", "--json", "-", "--quiet"]) == 0
    sampled = json.loads(capsys.readouterr().out)
    assert sampled["method"] == "sampling" and sampled["samples"] > 0
    # a tiny time limit on a hard question: undecided (2)
    assert main(["program", str(good), "--epsilon", "0.0515", "--time-limit", "0.05", "--quiet"]) == 2


def test_bad_input_exits_3_with_location(tmp_path, capsys):
    f = tmp_path / "bad.fr"
    f.write_text("x = gaussian(0, 1)\nfor i in range(3):\n    x = x + 1\n")
    assert main(["program", str(f)]) == 3
    assert f"{f}:2:1" in capsys.readouterr().err
    assert main(["program", str(tmp_path / "missing.fr")]) == 3
    assert main(["program", str(f), "--epsilon", "1.5"]) == 3
    g = tmp_path / "noann.fr"
    g.write_text("x = gaussian(0, 1)\n")
    assert main(["program", str(g)]) == 3
    assert "sensitiveAttribute" in capsys.readouterr().err
    binary = tmp_path / "model.fr"
    binary.write_bytes(bytes(range(256)))
    assert main(["program", str(binary)]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{binary}: not a program file (a binary file" in err


def test_probability_query(tmp_path, capsys):
    f = tmp_path / "e31.fr"
    f.write_text("x1 = gaussian(0, 1)\nx2 = gaussian(0, 1)\n")
    assert main(["program", str(f), "--probability", "x1 + x2 >= 0", "--json", "-", "--quiet"]) == 0
    data = json.loads(capsys.readouterr().out)
    lo, hi = data["probabilities"]["x1 + x2 >= 0"]["low"], data["probabilities"]["x1 + x2 >= 0"]["high"]
    assert lo <= 0.5 <= hi and hi - lo <= 1e-4
    assert main(["program", str(f), "--probability", "x1 + x2 >= 0", "--above", "0.49", "--quiet"]) == 0
    assert main(["program", str(f), "--probability", "x1 + x2 >= 0", "--above", "0.51", "--quiet"]) == 1
    assert main(["program", str(f), "--probability", "x3 > 0", "--quiet"]) == 3
    assert main(["program", str(f), "--above", "0.5", "--quiet"]) == 3
