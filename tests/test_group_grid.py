"""The histogram-message engine: its bounds contain brute force on random networks, and are tight."""

from __future__ import annotations

import numpy as np
import pytest
from test_group_engine import random_model, random_population

from faircert.engines.group.grid import GridEngine
from faircert.engines.group.subset_sum import brute_force
from faircert.models.linear import LinearModel
from faircert.population import DiscretePopulation, Variable


@pytest.mark.parametrize("seed", range(40))
def test_bounds_contain_brute_force_and_are_tight(seed):
    rng = np.random.default_rng(seed)
    pop = random_population(rng, int(rng.integers(3, 8)), label=seed % 3 == 0)
    model = random_model(rng, pop, integer=seed % 2 == 0)
    engine = GridEngine(model, pop)
    evidences = [dict(g) for g in pop.groups()]
    if pop.label:
        evidences += [{**g, "y": 1} for g in pop.groups()]
    for ev in evidences:
        want, size = brute_force(model, pop, ev)
        lo, hi, mass = engine.probability(ev)
        assert mass == pytest.approx(size, rel=1e-9)
        if size > 0:
            assert lo <= want <= hi
            assert hi - lo <= 1e-3


def test_ties_at_the_threshold_stay_inside_the_bounds():
    """Integer scores put mass exactly on 0: '>' and '>=' differ by it and both are bracketed."""
    b = lambda n, p, parents=(), t=None: Variable(n, (0, 1), ("0", "1"), parents, t if t is not None else [1 - p, p])
    pop = DiscretePopulation(
        {"P": b("P", 0.5), "Q": b("Q", 0.4, ("P",), [[0.7, 0.3], [0.4, 0.6]]), "R": b("R", 0.5), "S": b("S", 0.3)},
        ("P",),
    )
    for strict in (True, False):
        model = LinearModel.plain([1, 1, 1, -1], -2, ["P", "Q", "R", "S"], strict=strict)
        for v in (0, 1):
            lo, hi, _ = GridEngine(model, pop).probability({"P": v})
            want = brute_force(model, pop, {"P": v})[0]
            assert lo <= want <= hi and hi - lo < 1e-6


def test_a_learned_network_is_kept_within_its_width_and_says_which_edges_it_dropped():
    import pandas as pd

    from faircert.population import PopulationSpec, learn_population
    from faircert.population.elimination import network_width

    rng = np.random.default_rng(3)
    n = 4000
    hub = rng.integers(0, 12, n)  # one many-valued column that every other column depends on
    frame = pd.DataFrame({"s": rng.integers(0, 2, n), "hub": hub})
    for i in range(5):
        frame[f"c{i}"] = (hub + rng.integers(0, 3, n) + i) % 8
    full = learn_population(frame, list(frame.columns), ["s"], PopulationSpec("bayesnet", max_width=None))
    capped = learn_population(frame, list(frame.columns), ["s"], PopulationSpec("bayesnet", max_width=40))

    def width(pop):
        parents = {k: v.parents for k, v in pop.variables.items()}
        return network_width(parents, {k: v.card for k, v in pop.variables.items()}, ["s"])[0]

    assert width(full) > 40 >= width(capped)
    dropped = capped.info["edges_dropped"]
    assert dropped and all(d["loglik"] >= 0 for d in dropped)
    assert len(capped.edges) == len(full.edges) - len(dropped)
    assert "edges_dropped" not in full.info


def test_group_without_a_population_uses_the_data_rows_and_needs_data():
    import faircert
    from faircert.errors import PropertyError

    model = LinearModel.plain([1.0, -0.5], 0.1, ["s", "x"])
    import pandas as pd

    df = pd.DataFrame({"s": [0, 0, 1, 1, 1], "x": [0, 3, 0, 1, 4]})
    r = faircert.group(model, df, protected="s")
    assert r.engine == "empirical"
    assert [g.value for g in r.groups] == [0.5, pytest.approx(2 / 3)]
    with pytest.raises(PropertyError, match="no population"):
        faircert.group(model, protected="s")


def test_inside_a_bin_a_column_takes_the_data_values_with_their_frequencies(tmp_path):
    import pandas as pd

    from faircert.population import PopulationSpec, learn_population

    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"s": rng.integers(0, 2, 500), "age": rng.integers(17, 80, 500)})
    pop = learn_population(frame, ["age"], ["s"], PopulationSpec(max_bins=4))
    assert pop.variables["age"].card == 4 and pop.variables["age"].within is not None
    flat = pop.expanded()
    assert flat.variables["age"].parents == ("age (bin)",)
    values = np.asarray(flat.variables["age"].states)
    want = frame["age"].value_counts(normalize=True).reindex(values).to_numpy()
    assert flat.marginal("age") == pytest.approx(want, abs=1e-12)
    pop.save(tmp_path / "p.json")
    again = DiscretePopulation.load(tmp_path / "p.json")
    assert again.variables["age"].within == pop.variables["age"].within
    with pytest.raises(Exception, match="within"):
        Variable("x", (0, 1), ("a", "b"), (), [0.5, 0.5], (0.0, 1.0, 2.0), [((0.0,), (0.5,)), ((1.0,), (1.0,))])


def test_a_linear_rate_under_data_values_in_bins_equals_enumeration_of_the_data_distribution():
    """Independent marginals with the data's values: the rate is a sum over the data's value
    combinations, which enumeration gives exactly."""
    import itertools

    import pandas as pd

    import faircert

    rng = np.random.default_rng(9)
    n = 400
    frame = pd.DataFrame(
        {"s": rng.integers(0, 2, n), "age": rng.integers(18, 70, n), "hours": np.round(rng.normal(40, 8, n), 1)}
    )
    model = LinearModel.plain([0.7, 0.0513, 0.0417], -4.0, ["s", "age", "hours"])  # no exact ties at 0
    r = faircert.group(model, frame, protected="s", population="independent", max_bins=5, time_limit=None)
    ages = frame["age"].value_counts(normalize=True)
    hours = frame["hours"].value_counts(normalize=True)
    for g in r.groups:
        s = int(g.group["s"])
        want = sum(
            pa * ph
            for (a, pa), (h, ph) in itertools.product(ages.items(), hours.items())
            if 0.7 * s + 0.0513 * a + 0.0417 * h - 4.0 >= 0
        )
        assert g.low - 1e-9 <= want <= g.high + 1e-9
        assert g.high - g.low < 1e-3


def test_a_real_column_with_thousands_of_values_is_bounded_soundly_and_quickly(monkeypatch):
    """Many distinct data values inside bins: shifts are coarsened (a wider but sound band)."""
    import time

    import pandas as pd

    import faircert
    from faircert.engines.group import grid

    monkeypatch.setattr(grid, "MAX_SHIFTS", 64)
    rng = np.random.default_rng(2)
    n = 3000
    frame = pd.DataFrame({"s": rng.integers(0, 2, n), "x": rng.normal(0, 1, n), "z": rng.integers(0, 4, n)})
    model = LinearModel.plain([0.4, 1.3, -0.2], -0.3, ["s", "x", "z"])
    start = time.monotonic()
    r = faircert.group(model, frame, protected="s", population="independent", time_limit=20)
    assert time.monotonic() - start < 20
    for g in r.groups:
        s = int(g.group["s"])
        # independent: x and z drawn from all rows' values, s fixed; the truth is a double sum
        xs, zs = frame["x"].to_numpy(), frame["z"].value_counts(normalize=True)
        truth = sum(q * np.mean(0.4 * s + 1.3 * xs - 0.2 * z - 0.3 > 0) for z, q in zs.items())
        assert g.low - 1e-9 <= truth <= g.high + 1e-9 and g.high - g.low < 0.02


def test_a_column_with_too_many_distinct_values_takes_its_bin_means_and_says_so():
    import pandas as pd

    from faircert.population import learn_population
    from faircert.population.discretize import MAX_DATA_VALUES

    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"s": rng.integers(0, 2, MAX_DATA_VALUES + 10), "x": rng.normal(0, 1, MAX_DATA_VALUES + 10)})
    pop = learn_population(frame, ["x"], ["s"])
    assert pop.variables["x"].within is None and pop.expanded() is pop


def test_a_bad_network_width_is_one_clear_error(tmp_path):
    import pandas as pd

    from faircert.cli import main
    from faircert.errors import DataError
    from faircert.population import PopulationSpec, learn_population

    frame = pd.DataFrame({"s": [0, 1, 0, 1], "x": [1, 2, 3, 4], "y": [0, 1, 0, 1]})
    with pytest.raises(DataError, match="network width"):
        learn_population(frame, ["x"], ["s"], PopulationSpec("bayesnet", max_width=-1))
    frame.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "m.json").write_text(
        '{"weights": [1.0, 0.5], "intercept": -1.0, "encoding": [{"column": "s"}, {"column": "x"}]}'
    )
    assert (
        main(
            [
                "group",
                str(tmp_path / "m.json"),
                "--data",
                str(tmp_path / "d.csv"),
                "--protected",
                "s",
                "--population",
                "bayesnet",
                "--network-width",
                "-1",
                "--quiet",
            ]
        )
        == 3
    )
