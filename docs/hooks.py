"""Fills the documentation's generated parts from the code and the README, so they cannot drift:
the README's introduction and guide, every subcommand's --help, the group metrics and the engines
(from their registries), and the list of benchmark tables."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The README's introduction ends where its guide begins.
GUIDE_STARTS = "## From a DataFrame to a report"


def on_page_markdown(markdown: str, page, config, files) -> str:
    for marker, fill in FILLS.items():
        token = "{{ " + marker + " }}"
        if token in markdown:
            markdown = markdown.replace(token, fill())
    return markdown


def _readme() -> str:
    return (ROOT / "README.md").read_text()


def readme_intro() -> str:
    return _readme().split(GUIDE_STARTS)[0]


def readme_guide() -> str:
    text = _readme()
    guide = GUIDE_STARTS + text.split(GUIDE_STARTS, 1)[1]
    return "# User guide\n\n" + guide


def cli() -> str:
    from faircert.cli import build_parser

    parser = build_parser()
    parts = ["## faircert", "", "```text", parser.format_help().rstrip(), "```", ""]
    subcommands = next(a for a in parser._actions if a.dest == "command").choices
    for command, sub in subcommands.items():
        buffer = io.StringIO()
        with redirect_stdout(buffer):
            sub.print_help()
        parts += [f"## faircert {command}", "", "```text", buffer.getvalue().rstrip(), "```", ""]
    return "\n".join(parts)


def metrics() -> str:
    from faircert.metrics import METRICS

    needs = {
        "": "the groups' rates",
        "label": "the rates given each label value (--label)",
        "mediators": "the rates with the mediators redistributed (--mediators)",
        "predicted": "P[Y=1 | yhat=1, group] (the data's rows)",
    }
    rows = ["| name | title | also called | checked as | needs |", "|---|---|---|---|---|"]
    for m in METRICS.values():
        check = "value >= threshold (a ratio)" if m.direction == ">=" else "value <= gap threshold"
        rows.append(
            f"| `{m.name}` | {m.title} | {', '.join(f'`{a}`' for a in m.aliases)} | {check} | {needs[m.needs]} |"
        )
    rows.append("")
    for m in METRICS.values():
        rows += [f"## `{m.name}`: {m.title}", "", " ".join((type(m).__doc__ or "").split()), ""]
    return "\n".join(rows)


def engines() -> str:
    from faircert.engines.registry import ENGINES

    def short(names) -> str:
        return ", ".join(n.rsplit(".", 1)[-1] for n in names) or "any"

    rows = ["| engine | answers | models | questions | populations | methods |", "|---|---|---|---|---|---|"]
    for e in ENGINES:
        rows.append(
            f"| `{e.name}` | {e.answers} | {short(e.models)} | {short(e.questions)} | "
            f"{short(e.populations)} | {', '.join(e.methods)} |"
        )
    return "\n".join(rows)


def benchmarks() -> str:
    rows = ["| table | what it holds |", "|---|---|"]
    for path in sorted((ROOT / "benchmarks" / "results").glob("*.md")):
        lines = path.read_text().splitlines()
        title = next((line.lstrip("# ").strip() for line in lines if line.strip()), "")
        rows.append(f"| `benchmarks/results/{path.name}` | {title} |")
    return "\n".join(rows)


FILLS = {
    "readme_intro": readme_intro,
    "readme_guide": readme_guide,
    "cli": cli,
    "metrics": metrics,
    "engines": engines,
    "benchmarks": benchmarks,
}
