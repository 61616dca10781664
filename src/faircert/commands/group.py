"""`faircert group`: group fairness (DI, SP, EO, PCF) of a model under a population model."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import FaircertError
from ..metrics import METRICS
from ..options import GroupOptions, GroupQuestion
from ..population.spec import MAX_WIDTH
from . import common
from .flags import KeyValues, add_key_values


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "group",
        help="group fairness (DI, SP, EO, PCF) under a population model",
        description="Compute P[yhat = 1 | group] for every compound group of the protected attributes under a "
        "population model (the data's own rows: the default with --data; independent marginals or a "
        "Bayesian network learned from --data; a saved population .json; or a population program .fr), "
        "and the metrics DI = min/max over groups, SP = max - min, EO (the worse of the Y=0 / Y=1 "
        "gaps), equal opportunity (TPR gap or ratio), predictive parity (precision gap), PCF. Linear models under "
        "discrete populations: exact, or sound bounds a few 1e-3 wide "
        "on score grids; other models: sound bounds, with a sampled estimate beside them where they "
        "stay wide. Exit code: 0 fair at the thresholds, 1 unfair, 2 undecided, 3 bad input.",
    )
    p.add_argument(
        "model",
        help="model: linear JSON (weights, intercept, encoding), a pickled scikit-learn "
        "estimator/Pipeline (.pkl/.joblib, needs --trust-pickle), or any format verify reads",
    )
    add_group_options(p)
    common.add_checkpoint_arguments(
        p, "the sound bounds' refinement (models other than linear ones under a population)"
    )
    p.set_defaults(handler=run)


def add_group_options(p: argparse.ArgumentParser) -> None:
    """What `group` and `compare` share: the data, groups, population, metrics, budget and outputs."""
    p.add_argument("--data", help="CSV of raw rows to learn the population from (and to bin continuous columns)")
    p.add_argument(
        "--protected", help="protected attribute(s), comma-separated; their value combinations are the groups"
    )
    p.add_argument("--label", help="true-label column (needed for --metric eo, eop, eopr, pp)")
    p.add_argument(
        "--population",
        default=None,
        help="empirical (the data's rows, as fairlearn's MetricFrame: the default with --data), "
        "independent, bayesnet, a saved population .json, or a population program .fr",
    )
    p.add_argument(
        "--metric",
        default=",".join(GroupQuestion.metrics),
        help=f"metrics, comma-separated (default {','.join(GroupQuestion.metrics)}): "
        + ", ".join(f"{m.name} ({m.summary().split(':')[0].lower()})" for m in METRICS.values())
        + "; fairlearn's and AIF360's names are accepted too (e.g. demographic_parity_ratio, "
        "equal_opportunity_difference)",
    )
    p.add_argument("--mediators", help="mediator features for PCF, comma-separated")
    add_key_values(
        p,
        "--threshold",
        "T|gap=G",
        f"ratio threshold: fair iff DI = min/max >= T (default {GroupQuestion.threshold:g}, the four-fifths rule), "
        "and so for every ratio metric computed (eopr); gap=G: also require SP (and every other gap metric "
        "computed: eo, eop, pp, pcf) <= G (repeatable)",
        keys={"ratio": float, "gap": float},
        bare="ratio",
        aliases={"--max-gap": "gap"},
    )
    p.add_argument(
        "--influence",
        "--influence-set",
        action=Influence,
        nargs="?",
        metavar="A,B",
        help="fairness influence of every non-protected feature; with A,B: of a set of features made uniform "
        "together (repeatable)",
    )
    add_key_values(
        p,
        "--learn",
        "KEY=VALUE",
        "how a population is learned from --data (repeatable): max-bins=N: bin continuous columns into at most "
        "N bins (default 10); binning=quantile|width: bin edges (default quantile); bin-value=data|mean|midpoint: "
        "what a binned column takes inside a bin: the data's own values with their frequencies (default), or one "
        "value, the mean of its data or its midpoint; bins=NAME=K or bins=NAME=E1:E2:...: bins of one column, a "
        "count or explicit edges (needed for a continuous protected attribute); score=k2|bic|bdeu: network "
        "structure score (default k2); max-indegree=N: most parents of a network node (default 3); "
        "network-width=N: drop a learned network's weakest edges until eliminating it holds at most N "
        "configurations at once, so a linear model's rates come out tight in seconds (default 2000; 0: keep "
        "every edge); bin-bounds: also bound every probability for any distribution inside the bins; "
        "save=OUT.json: save the learned population to repeat the check",
        keys=LEARN_KEYS,
        switches=("bin-bounds",),
        repeated=("bins",),
        aliases={f"--{k}": k for k in LEARN_KEYS if k not in ("bin-bounds", "save", "network-width")}
        | {"--network-width": "network-width", "--save-population": "save"},
    )
    common.add_run_arguments(p, GroupOptions, "the sound bounds' trial splits")
    common.add_method(p, GroupOptions, "exact or sound bounds")
    common.add_outputs(p, {})
    common.add_model_loading(p)
    p.add_argument(
        "--audit-table",
        action=KeyValues,
        nargs="?",
        metavar="exclude-small|csv=OUT.csv",
        help="add the bias-audit tables of the data's rows: per protected attribute and their intersection, "
        "each cell's count, selection rate with a 95%% interval and impact ratio; small cells flagged, rows "
        "missing a protected value counted apart (repeatable): exclude-small: cells under 2%% leave the impact "
        "ratios; csv=OUT.csv: write the tables as CSV",
        keys={"on": str, "exclude-small": str, "csv": str},
        switches=("on", "exclude-small"),
        alone="on",
        aliases={"--audit-csv": "csv", "--exclude-small": "exclude-small"},
    )
    p.add_argument(
        "--gate-statistical",
        action="store_true",
        help="exit on the statistical answer instead of the proofs: the sampled metrics checked against "
        "the thresholds where the sound bounds stayed wide (0 fair, 1 unfair, 2 undecided)",
    )


def _bins(text: str) -> tuple[str, int | list[float]]:
    """One column's bins: NAME=K or NAME=E1:E2:..."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise ValueError(f"bins expects NAME=K or NAME=E1:E2:..., got {text!r}")
    try:
        return name.strip(), [float(v) for v in value.split(":")] if ":" in value else int(value)
    except ValueError:
        raise ValueError(f"bins {text!r}: expected an integer count or numbers separated by ':'") from None


#: `--learn`'s keys: `PopulationSpec`'s fields, the within-bin bounds and where to save the population.
LEARN_KEYS = {
    "max-bins": int,
    "binning": ("quantile", "width"),
    "bin-value": ("data", "mean", "midpoint"),
    "bins": _bins,
    "score": ("k2", "bic", "bdeu"),
    "max-indegree": int,
    "network-width": int,
    "bin-bounds": str,
    "save": str,
}


class Influence(argparse.Action):
    """--influence (every feature on its own, "*") or --influence A,B (a set); repeatable."""

    shown = 1

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        if option_string == "--influence-set" and values is None:
            raise argparse.ArgumentError(None, f"argument {option_string}: expected A,B")
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest) or []), values or "*"])


def group_keywords(args: argparse.Namespace) -> dict:
    """The keywords of `faircert.group` from the shared options."""
    threshold = args.threshold or {}
    gap = threshold.get("gap")
    gaps = {m.name: gap for m in METRICS.values() if m.direction == "<="} if gap is not None else None
    influence: bool | list = False
    if args.influence:  # "*" stands for every feature on its own
        sets = [s.split(",") for s in args.influence if s != "*"]
        influence = ([["*"]] if "*" in args.influence else []) + sets if sets else True
    learn = args.learn or {}
    knobs = {k.replace("-", "_"): v for k, v in learn.items() if k not in ("bins", "bin-bounds", "save")}
    knobs["max_width"] = knobs.pop("network_width", MAX_WIDTH) or None
    return {
        **common.picked(args, "label", "population", "mediators", "trust_pickle", "preprocessor"),
        "metrics": args.metric,
        "threshold": threshold.get("ratio", GroupQuestion.threshold),
        "gap_thresholds": gaps,
        "influence": influence,
        "bins": dict(learn.get("bins", [])),
        **knobs,
        "save_population": learn.get("save"),
        "bin_bounds": learn.get("bin-bounds", False),
        "options": common.options_of(GroupOptions, args, "method", "delta"),
    }


def run(args: argparse.Namespace) -> int:
    from ..api import group
    from ..report.console import progress_bar

    table = args.audit_table or {}
    csv = {"audit": table["csv"]} if "csv" in table else {}
    with common.run_guard(args, *csv.values(), (args.learn or {}).get("save")):
        if table and "on" not in table:
            raise FaircertError("--audit-csv and --exclude-small are about the audit tables: add --audit-table")
        audit: dict[str, Any] = {"audit_table": True, "exclude_small": "exclude-small" in table} if table else {}
        with progress_bar(not args.quiet, args.time_limit, "group fairness") as progress:
            result = group(
                args.model, args.data, protected=args.protected, progress=progress, **audit, **group_keywords(args)
            )
    args.csv = csv
    common.finish(result, args)
    return result.statistical_exit_code() if args.gate_statistical else result.exit_code
