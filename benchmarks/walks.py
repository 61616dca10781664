"""How far a parameter travels: the functions of faircert that receive it, followed at run time.

A parameter "stops" at every faircert function called with it as an argument (by name, or as the
very object given). Measured on one call of each entry point on a small generated case; writes
benchmarks/results/walks.{json,md}.

    python benchmarks/walks.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import faircert
from faircert.models.linear import ColumnEncoding, LinearModel

OUT = Path(__file__).resolve().parent / "results"
PACKAGE = str(Path(faircert.__file__).parent)


def _case() -> tuple[LinearModel, pd.DataFrame]:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"sex": rng.choice(["F", "M"], 300), "age": rng.integers(0, 5, 300)})
    model = LinearModel(np.array([0.8, 0.3]), -1.0, (ColumnEncoding("sex", "onehot", ("M",)), ColumnEncoding("age")))
    return model, frame


def walk(call, name: str, value: object) -> list[str]:
    """The faircert functions (module:function) that receive `value` as their parameter `name`, in
    the order first reached."""
    stops: list[str] = []

    def profile(frame, event, arg):
        if event != "call" or not frame.f_code.co_filename.startswith(PACKAGE):
            return
        code = frame.f_code
        params = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        if any(p == name and frame.f_locals.get(p) is value for p in params):
            module = code.co_filename[len(PACKAGE) + 1 :]
            stop = f"{module}:{code.co_name}"
            if stop not in stops:
                stops.append(stop)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return stops


def main() -> None:
    model, frame = _case()
    population, rows, limit = "independent", frame, 30.0
    spec = faircert.PopulationSpec("independent", max_bins=4)
    walks = {
        "population (verify)": walk(
            lambda: faircert.verify(model, frame, "sex", population=population, time_limit=limit),
            "population",
            population,
        ),
        "population (group)": walk(
            lambda: faircert.group(model, frame, "sex", population=population), "population", population
        ),
        "population (group, a PopulationSpec)": walk(
            lambda: faircert.group(model, frame, "sex", population=spec), "population", spec
        ),
        "rows (audit)": walk(lambda: faircert.audit(model, rows, protected="sex"), "rows", rows),
        "time_limit (verify)": walk(
            lambda: faircert.verify(model, frame, "sex", time_limit=limit), "time_limit", limit
        ),
    }
    out = {
        name: {
            "stops": len(stops),
            "api_visits": sum(s.startswith("api.py") for s in stops),
            "domain_visits": sum(s.startswith("domain.py") for s in stops),
            "functions": stops,
        }
        for name, stops in walks.items()
    }
    OUT.mkdir(exist_ok=True)
    (OUT / "walks.json").write_text(json.dumps(out, indent=2) + "\n")
    lines = [
        "# Parameter walks",
        "",
        "Measured by `benchmarks/walks.py`: the faircert functions that receive the parameter's value",
        "under its name, on one call of the entry point (a linear model, 300 generated rows).",
        "",
        "| parameter | stops | visits to api.py | visits to domain.py | functions, in order |",
        "|---|---|---|---|---|",
    ]
    for name, row in out.items():
        chain = " -> ".join(f"`{f}`" for f in row["functions"])
        lines.append(f"| {name} | {row['stops']} | {row['api_visits']} | {row['domain_visits']} | {chain} |")
    (OUT / "walks.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
