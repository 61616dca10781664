"""`faircert domain infer`: write a domain file from data."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "domain", help="create and check domain files", description="Create and inspect domain files (YAML or JSON)."
    )
    inner = p.add_subparsers(dest="domain_command", metavar="ACTION", parser_class=type(p))
    infer = inner.add_parser(
        "infer",
        help="infer a domain from a CSV file",
        description="Infer a domain from data: bounds from the data; strings become "
        "categorical codes (sorted labels), {0,1} binary, whole numbers integer, "
        "the rest real. Edit the file afterwards if the data's range is not the "
        "range you want to verify.",
    )
    infer.add_argument("data", help="CSV file")
    infer.add_argument("--protected", default="", help="protected column(s), comma-separated")
    infer.add_argument("--label", help="label column to leave out")
    infer.add_argument("-o", "--output", help="domain file to write (.yaml or .json); default: print YAML")
    infer.set_defaults(handler=run_infer)
    show = inner.add_parser(
        "show",
        help="check a domain file and print its features",
        description="Load and check a domain file, print its features, bounds and sizes; "
        "with --model, also check that it fits the model's inputs.",
    )
    show.add_argument("domain", help="domain file (YAML or JSON)")
    show.add_argument("--model", help="a model file whose inputs the domain must match")
    show.set_defaults(handler=run_show)
    p.set_defaults(handler=lambda args: (p.print_help(sys.stderr), 3)[1])


def run_infer(args: argparse.Namespace) -> int:
    from ..data import infer_domain
    from ..files import check_writable, print_stdout

    check_writable([args.output])
    protected = [n.strip() for n in args.protected.split(",") if n.strip()]
    domain = infer_domain(args.data, protected=protected, label=args.label)
    if args.output:
        domain.save(args.output)
        print(
            f"wrote {args.output}: {len(domain)} features, protected: {', '.join(domain.protected_names) or 'none'}",
            file=sys.stderr,
        )
    else:
        print_stdout(domain.to_yaml())
    return 0


def run_show(args: argparse.Namespace) -> int:
    from rich.table import Table

    from ..domain import Domain
    from ..report.console import console

    domain = Domain.load(args.domain)
    if args.model:
        from ..api import load_model

        model = load_model(args.model)
        domain.check_model(model, f"the model {args.model}")
    table = Table(title=f"domain {args.domain}", header_style="bold")
    for column in ("feature", "kind", "min", "max", "size", "protected"):
        table.add_column(column, justify="left" if column in ("feature", "kind") else "right")
    for f in domain.features:
        table.add_row(f.name, f.kind, f"{f.min:g}", f"{f.max:g}", f"{f.size:g}", "yes" if f.protected else "")
    out = console(stderr=False)
    out.print(table)
    protected = [i for i, f in enumerate(domain.features) if f.protected]
    out.print(f"{len(domain)} features; size of the non-protected part: {domain.measure(exclude=protected):.6g}")
    return 0
