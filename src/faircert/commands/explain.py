"""`faircert explain`: where the unfair decisions are, as rules over the data's rows."""

from __future__ import annotations

import argparse
from typing import Any

from ..options import AuditOptions
from . import common
from .flags import add_key_values
from .group import LEARN_KEYS

#: `--learn`'s keys for explain: how the network is learned (the within-bin bounds are group's alone).
EXPLAIN_LEARN_KEYS = {k: v for k, v in LEARN_KEYS.items() if k != "bin-bounds"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explain",
        help="where the unfair decisions are: rules over the data's rows, with their rates and intervals",
        description="Audit every row of --data (as `faircert audit`), then describe where the unfair rows "
        "are: at most --max-rules rules (ranges and category sets in raw units) found on one half of the "
        "rows and measured on the other (exact counts, an interval, lift, a p-value corrected by "
        "Benjamini-Hochberg), what changes the decision under each, and the largest regions without an "
        "unfair row. With --population uniform, independent or bayesnet, points drawn from that population "
        "stand for the rows, and each rule also gets its sound proven-unfair share. "
        "Exit code: 0 no unfair row, 1 unfair rows, 2 rows left undecided, 3 bad input.",
    )
    p.add_argument("model", help="model file (as for verify), or a pickled classifier with --trust-pickle")
    p.add_argument("--data", required=True, metavar="DATA.csv", help="the rows to audit and explain (raw columns)")
    p.add_argument("--domain", help="domain file (YAML/JSON) or a CSV to infer it from; default: inferred from DATA")
    common.add_tolerances(p)
    p.add_argument(
        "--population",
        choices=("empirical", "uniform", "independent", "bayesnet"),
        default="empirical",
        help="what the rules describe: the data's rows (empirical, the default), or the domain, uniformly, "
        "under the data's independent marginals or under a Bayesian network learned from the data (epsilon 0; "
        "see --learn): points drawn from it, each decided exactly, and each rule's proven-unfair share, sound, "
        "from its boxes verified (under bayesnet: the network's boxes refined)",
    )
    add_key_values(
        p,
        "--learn",
        "KEY=VALUE",
        "with --population bayesnet, how the network is learned from --data (repeatable), as for `faircert group`: "
        "max-bins=N, binning=quantile|width, bin-value=data|mean|midpoint, bins=NAME=K or bins=NAME=E1:E2:..., "
        "score=k2|bic|bdeu, max-indegree=N, network-width=N (0: keep every edge), save=OUT.json",
        keys=EXPLAIN_LEARN_KEYS,
        repeated=("bins",),
    )
    p.add_argument(
        "--samples", type=int, default=4000, metavar="N", help="points drawn from a domain population (default 4000)"
    )
    p.add_argument("--max-rules", type=int, default=5, metavar="K", help="at most K rules (default 5)")
    common.add_defaulted(p, "--min-lift", 3.0, "the least lift of a rule over the global unfair rate, where found", "L")
    common.add_defaulted(p, "--confidence", 0.95, "level of each rule's interval", "C")
    common.add_run_arguments(p, AuditOptions, "chunks of rows")
    common.add_outputs(p, {"rules": "one line per rule"})
    common.add_model_loading(p)
    p.set_defaults(handler=run)


def learn_keywords(args: argparse.Namespace) -> dict[str, Any]:
    """`PopulationKeywords` from `--learn` (none without it)."""
    learn = dict(args.learn or {})
    if not learn:
        return {}
    out: dict[str, Any] = {
        k.replace("-", "_"): v for k, v in learn.items() if k not in ("bins", "save", "network-width")
    }
    if "bins" in learn:
        out["bins"] = dict(learn["bins"])
    if "network-width" in learn:
        out["max_width"] = learn["network-width"] or None
    if "save" in learn:
        out["save_population"] = learn["save"]
    return out


def run(args: argparse.Namespace) -> int:
    from ..api import explain

    with common.run_guard(args, (args.learn or {}).get("save")):
        result = explain(
            args.model,
            args.data,
            max_rules=args.max_rules,
            domain=args.domain,
            min_lift=args.min_lift,
            confidence=args.confidence,
            population=args.population,
            samples=args.samples,
            options=common.options_of(AuditOptions, args),
            **learn_keywords(args),
            **common.individual_keywords(args),
        )
    common.finish(result, args)
    return result.exit_code
