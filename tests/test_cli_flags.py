"""The flag families of the command line: `--learn`, `--budget`, `--checkpoint`, `--workers`,
`--csv`, `--threshold`, `--influence`, `--audit-table`. Each reads its keys into the same
keywords and options as the separate flags did, which stay as hidden aliases."""

from __future__ import annotations

import pytest

from faircert.cli import build_parser, main
from faircert.commands.common import options_of
from faircert.commands.group import group_keywords
from faircert.options import GroupOptions, VerifyOptions


def parse(*argv: str):
    return build_parser().parse_args(list(argv))


def test_learn_gathers_the_population_knobs_and_the_former_flags_still_read():
    args = parse(
        "group", "m.json", "--learn", "max-bins=5", "--learn", "bins=age=4", "--bins", "hours=0:10:40",
        "--score", "bic", "--learn", "network-width=0", "--learn", "bin-bounds", "--save-population", "p.json",
    )  # fmt: skip
    keywords = group_keywords(args)
    assert keywords["max_bins"] == 5 and keywords["score"] == "bic"
    assert keywords["bins"] == {"age": 4, "hours": [0.0, 10.0, 40.0]}
    assert keywords["max_width"] is None and keywords["bin_bounds"] is True
    assert keywords["save_population"] == "p.json"
    plain = group_keywords(parse("group", "m.json"))  # none given: the spec's own defaults
    assert (plain["max_width"], plain["bins"], plain["bin_bounds"]) == (2000, {}, False)
    assert "max_bins" not in plain and "score" not in plain


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--learn", "bogus=1"], "KEY one of max-bins=..., binning=..., bin-value=..."),
        (["--learn", "binning=log"], "binning takes one of quantile, width, got 'log'"),
        (["--max-bins", "many"], "argument --max-bins: max-bins takes an integer, got 'many'"),
        (["--learn", "bins=age"], "bins expects NAME=K or NAME=E1:E2:..."),
        (["--budget", "boxes=3"], "KEY one of memory=..."),  # group has no box budget
        (["--workers", "lots"], "expected N or ray[=ADDRESS]"),
        (["--audit-csv", "a.csv"], "add --audit-table"),
    ],
)
def test_a_bad_key_or_value_is_one_line_naming_what_is_allowed(tmp_path, capsys, argv, message):
    (tmp_path / "d.csv").write_text("a,y\n1,0\n")
    assert main(["group", str(tmp_path / "m.json"), "--data", str(tmp_path / "d.csv"), "--quiet", *argv]) == 3
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_budget_workers_and_checkpoint_build_the_same_options_as_their_former_flags():
    new = parse(
        "verify", "m.nnet", "--budget", "boxes=7", "--budget", "memory=2G", "--budget", "undecided=0.01",
        "--workers", "ray=local", "--checkpoint", "c.json", "--checkpoint", "every=5", "--checkpoint", "resume=r.json",
    )  # fmt: skip
    old = parse(
        "verify", "m.nnet", "--max-boxes", "7", "--memory-limit", "2G", "--target-undecided", "0.01",
        "--ray", "local", "--checkpoint", "c.json", "--checkpoint-every", "5", "--resume", "r.json",
    )  # fmt: skip
    options = options_of(VerifyOptions, new)
    assert options == options_of(VerifyOptions, old)
    assert (options.max_boxes, options.memory_limit, options.target_undecided) == (7, 2 * 10**9, 0.01)
    assert (options.ray_address, options.checkpoint, options.checkpoint_every, options.resume) == (
        "local",
        "c.json",
        5.0,
        "r.json",
    )
    assert options_of(VerifyOptions, parse("verify", "m.nnet", "--workers", "3")).workers == 3
    assert options_of(VerifyOptions, parse("verify", "m.nnet", "--workers", "ray")).ray_address == "auto"
    assert options_of(GroupOptions, parse("group", "m.json")) == GroupOptions()


def test_threshold_influence_audit_table_and_csv_read_their_keys():
    args = parse(
        "group", "m.json", "--threshold", "0.9", "--threshold", "gap=0.1", "--influence", "--influence", "a,b",
        "--audit-table", "exclude-small", "--audit-table", "csv=t.csv",
    )  # fmt: skip
    keywords = group_keywords(args)
    assert keywords["threshold"] == 0.9 and keywords["gap_thresholds"]["sp"] == 0.1
    assert keywords["influence"] == [["*"], ["a", "b"]]
    assert args.audit_table == {"on": True, "exclude-small": True, "csv": "t.csv"}
    old = parse("group", "m.json", "--max-gap", "0.1", "--influence-set", "a,b", "--influence")
    assert group_keywords(old)["gap_thresholds"] == keywords["gap_thresholds"]
    assert group_keywords(old)["influence"] == [["*"], ["a", "b"]]
    assert group_keywords(parse("group", "m.json", "--influence"))["influence"] is True
    verify = parse("verify", "m.nnet", "--csv", "c.csv", "--partitions-csv", "p.csv")
    assert verify.csv == {"counterexamples": "c.csv", "partitions": "p.csv"}
    assert parse("audit", "m.nnet", "d.csv", "--rows-csv", "r.csv").csv == {"rows": "r.csv"}


def test_the_help_shows_each_family_once_and_hides_its_former_flags():
    group = next(a for a in build_parser()._actions if a.dest == "command").choices["group"]
    text = group.format_help()
    for shown in ("--learn KEY=VALUE", "--budget KEY=VALUE", "--workers [N|ray[=ADDRESS]]", "--checkpoint FILE"):
        assert shown in text
    for hidden in ("--max-bins", "--network-width", "--memory-limit", "--ray", "--resume", "--audit-csv"):
        assert hidden not in text


def test_verify_rows_refuses_the_budgets_the_per_row_audit_has_not(capsys):
    """`verify --rows` is the per-row audit: verify's own budgets (and --max-boxes) are refused
    in one line, before anything is read."""
    assert main(["verify", "m.nnet", "--rows", "d.csv", "--budget", "undecided=0.1", "--max-boxes", "9"]) == 3
    err = capsys.readouterr().err
    assert "--budget undecided, --budget boxes cannot be used with --rows" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("command", "flag", "message"),
    [
        ("group", "--budget", "expected KEY=VALUE"),
        ("group", "--threshold", "takes a number, got '--'"),
        ("group", "--time-limit", "invalid float value: '--'"),
        ("explain", "--epsilon", "expected NAME=VALUE, got '--'"),
        ("verify", "--workers", "expected N or ray"),
    ],
)
def test_a_flag_given_the_text_double_dash_reads_it_as_its_value(tmp_path, capsys, command, flag, message):
    """`--flag=--`: argparse would drop the "--" and hand the flag an empty list, past its checks."""
    data = tmp_path / "d.csv"
    data.write_text("s,x\n0,1\n")
    argv = [command, str(tmp_path / "m.json"), "--protected", "s", f"{flag}=--"]
    if command != "verify":
        argv[2:2] = ["--data", str(data)]
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "internal error" not in err
