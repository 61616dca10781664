"""`faircert demo`: generate data, train a small network, certify it and report, in seconds."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="run the whole pipeline on a generated lending example",
        description="Generate a synthetic lending dataset with a planted dependence on sex, train a small "
        "ReLU network on it with numpy, write data, domain and model to --out, then certify and "
        "quantify the network's individual fairness with respect to sex. Needs no downloads. "
        "Exits 0 when the demo ran (whatever the verdict), 3/4 on errors.",
    )
    p.add_argument("--out", default="faircert-demo", help="folder for the generated files (default ./faircert-demo)")
    p.add_argument("--time-limit", type=float, default=15.0, metavar="S", help="verification budget (default 15 s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..api import verify
    from ..demo import accuracy, lending_data, train_relu_network
    from ..errors import FaircertError
    from ..models.io.nnet import save_nnet
    from ..report.console import console, progress_bar
    from ..report.render import Outputs, render
    from ..results import Result

    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FaircertError(f"cannot create {out}: {exc}") from None
    say = console().print if not args.quiet else (lambda *a, **k: None)
    data = lending_data(seed=args.seed)
    data.frame().to_csv(out / "lending.csv", index=False)
    data.domain.save(out / "domain.yaml")
    network = train_relu_network(data.X, data.y, seed=args.seed)
    network.input_lower, network.input_upper = data.domain.lower, data.domain.upper
    save_nnet(network, out / "model.nnet")
    say(
        f"[bold]faircert demo[/]: {len(data.y):,} synthetic loan applications, approval rate "
        f"{data.y.mean():.1%}; approval depends on sex by construction."
    )
    say(
        f"trained a {'-'.join(map(str, network.layer_sizes))} ReLU network (accuracy "
        f"{accuracy(network, data.X, data.y):.1%}); "
        f"wrote {out}/lending.csv, domain.yaml, model.nnet"
    )
    say("certifying: does any applicant's decision change when only their sex changes?")
    with progress_bar(not args.quiet, args.time_limit) as progress:
        result = verify(
            str(out / "model.nnet"),
            domain=data.domain,
            protected="sex",
            time_limit=args.time_limit,
            seed=args.seed,
            progress=progress,
        )
    assert isinstance(result, Result)  # a domain's answer, not a per-row audit
    written = {"counterexamples": str(out / "counterexamples.csv")}
    render(result, Outputs(json=str(out / "result.json"), csv=written, console=not args.quiet))
    if not args.quiet:
        say(
            f"JSON: {out}/result.json; counterexamples: {out}/counterexamples.csv\n"
            f"same check from the command line: faircert verify {out}/model.nnet --domain {out}/domain.yaml "
            f"--protected sex --time-limit {args.time_limit:g}"
        )
    else:
        print(result.to_json(), file=sys.stdout)
    return 0
