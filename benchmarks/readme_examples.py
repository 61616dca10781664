"""The README's worked examples, measured: a 200-tree random forest on the demo's lending data
(`faircert.demo.lending_data`, seed 0), answered by `verify` (10 s), `group` under independent
marginals (20 s) and `explain` (2,000 rows, income +-5). Writes benchmarks/results/readme_examples.{json,md}.

    python benchmarks/readme_examples.py
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

import faircert
from faircert.demo import DEMO_DOMAIN, lending_data

OUT = Path(__file__).resolve().parent / "results"


def main() -> None:
    from sklearn.ensemble import RandomForestClassifier

    frame = lending_data().frame()
    people = frame.drop(columns="approved")
    forest = RandomForestClassifier(200, max_depth=10, random_state=0).fit(people, frame["approved"])
    verified = faircert.verify(forest, DEMO_DOMAIN, protected="sex", time_limit=10)
    grouped = faircert.group(forest, people, protected="sex", population="independent", time_limit=20)
    explained = faircert.explain(forest, people.iloc[:2000], "sex", epsilon={"income": 5})
    s = verified.statistical
    out = {
        "machine": f"{platform.machine()}, 2 shared cores",
        "verify": {
            "certified": verified.certified,
            "falsified": verified.falsified,
            "undecided": verified.undecided,
            "statistical": s.to_dict() if s else None,
            "statistical_first": verified.statistical_first,
        },
        "group": {
            "sound": {m: [r.low, r.high] for m, r in grouped.metrics.items()},
            "statistical": grouped.statistical_blocks()[1],
            "statistical_first": grouped.statistical_first,
        },
        "explain": explained.to_dict(),
    }
    OUT.mkdir(exist_ok=True)
    (OUT / "readme_examples.json").write_text(json.dumps(out, indent=1, default=str) + "\n")
    di = out["group"]["statistical"].get("di", {})
    lines = [
        "# The README's worked examples",
        "",
        f"Measured by `benchmarks/readme_examples.py` ({out['machine']}): a 200-tree random forest on the demo's "
        "lending data.",
        "",
        "| question | proofs | statistical |",
        "|---|---|---|",
        f"| verify, 10 s: unfair share | certified {100 * verified.certified:.2f}%, proven unfair "
        f"{100 * verified.falsified:.2f}%, undecided {100 * verified.undecided:.2f}% | "
        + (
            f"{100 * s.unfair:.2f}% [{100 * s.ci_low:.2f}, {100 * s.ci_high:.2f}] at {100 * s.confidence:g}%"
            if s
            else "-"
        )
        + " |",
        f"| group, independent, 20 s: DI | [{grouped.metrics['di'].low:.3f}, {grouped.metrics['di'].high:.3f}] | "
        + (f"[{di['low']:.3f}, {di['high']:.3f}] at {100 * di['confidence']:g}%" if di else "-")
        + " |",
        f"| explain, 2,000 rows: unfair rows | {explained.unfair_rate.estimate:.3%} of the decided rows | "
        f"{len(explained.rules)} rules holding {explained.coverage():.1%} of the unfair rows |",
        "",
        "```text",
        str(explained),
        "```",
    ]
    (OUT / "readme_examples.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
