"""Tree ensembles under the data's independent marginals: the uniform engine on each feature's grid
stretched by its counts gives P[x has an unfair twin] exactly, equal to brute force over the
product of the data's values; counterexamples are data values the model itself labels apart."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import faircert
from faircert.cli import main
from faircert.domain import Domain, Feature
from faircert.engines.trees.population import Stretch, stretched
from faircert.errors import PropertyError
from faircert.models.io import load_model
from faircert.population.marginals import Marginals
from faircert.properties import individual_fairness

DOMAIN = Domain(
    (Feature("a", "integer", 0, 9), Feature("s", "binary", protected=True), Feature("r", "real", -1.0, 2.0))
)


def _data(seed: int, n: int = 400) -> tuple[pd.DataFrame, np.ndarray]:
    """Skewed columns (most of `a` small, `r` rounded to cents: repeated values), some domain values never seen."""
    rng = np.random.default_rng(seed)
    a = np.minimum(rng.integers(0, 10, n), rng.integers(0, 10, n))
    s = rng.integers(0, 2, n)
    r = np.round(rng.normal(0.5, 0.2, n), 2)
    y = ((a + 3 * s + 5 * r + rng.normal(0, 1.5, n)) > 6).astype(int)
    return pd.DataFrame({"a": a, "s": s, "r": r}), y


def _truth(predict, frame: pd.DataFrame, free: list[str], protected: str) -> float:
    """P[some other protected value changes the label], x drawn from the product of the data's marginals."""
    values = [np.unique(frame[c], return_counts=True) for c in free]
    index = np.array(list(itertools.product(*[range(len(v)) for v, _ in values])))
    weight = np.prod([(c / len(frame))[index[:, k]] for k, (_, c) in enumerate(values)], axis=0)
    points = pd.DataFrame({c: v[index[:, k]] for k, (c, (v, _)) in enumerate(zip(free, values))})
    labels = []
    for p in np.unique(frame[protected]):
        grid = points.assign(**{protected: p})[list(frame.columns)]
        labels.append(np.asarray(predict(grid)))
    labels = np.stack(labels, axis=1)
    unfair = (labels != labels[:, :1]).any(axis=1)
    return float(weight[unfair].sum())


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("kind", ["forest", "boosting", "xgboost"])
def test_probabilities_equal_brute_force_over_the_data_marginals(seed, kind):
    frame, y = _data(seed)
    if kind == "xgboost":  # splits "<" on float32 inputs
        xgb = pytest.importorskip("xgboost")
        model = xgb.XGBClassifier(n_estimators=15, max_depth=3, random_state=seed, n_jobs=1).fit(frame, y)
    elif kind == "forest":
        model = RandomForestClassifier(12, max_depth=4, random_state=seed).fit(frame, y)
    else:
        model = GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=seed).fit(frame, y)
    truth = _truth(model.predict, frame, ["a", "r"], "s")
    assert 0.01 < truth < 0.99  # a case where the answer is neither all nor nothing
    result = faircert.verify(model, DOMAIN, protected="s", population="independent", data=frame, time_limit=30)
    assert result.population == "independent" and result.engine == "tree-population" and result.domain_size == 1.0
    assert result.stats["converged"] and result.undecided == 0
    assert result.falsified == pytest.approx(truth, abs=1e-12)
    assert result.certified == pytest.approx(1 - truth, abs=1e-12)
    assert result.unfair_size == pytest.approx(truth, abs=1e-12)
    # counterexamples: points of the data's values (where the measure is), labelled apart by the model
    assert result.verdict == "unfair" and result.counterexamples
    for c in result.counterexamples:
        assert c.x[0] in set(frame.a) and c.x[2] in set(frame.r) and c.x[0::2] == c.x_prime[0::2]
        pair = pd.DataFrame([c.x, c.x_prime], columns=["a", "s", "r"])
        assert model.predict(pair)[0] != model.predict(pair)[1]


def test_a_pipeline_over_raw_categorical_columns_equals_brute_force():
    rng = np.random.default_rng(3)
    n = 500
    frame = pd.DataFrame(
        {
            "job": rng.choice(["clerk", "nurse", "smith", "judge"], n, p=[0.5, 0.3, 0.15, 0.05]),
            "sex": rng.choice(["F", "M"], n),
            "hours": rng.integers(10, 60, n),
        }
    )
    y = ((frame.job == "judge") | ((frame.sex == "M") & (frame.hours > 40)) | (rng.random(n) < 0.1)).astype(int)
    prep = ColumnTransformer(
        [("cat", OneHotEncoder(handle_unknown="ignore"), ["job", "sex"]), ("num", StandardScaler(), ["hours"])]
    )
    pipe = Pipeline([("prep", prep), ("clf", RandomForestClassifier(10, max_depth=5, random_state=0))]).fit(frame, y)
    result = faircert.verify(pipe, frame, protected="sex", population="independent", data=frame, time_limit=30)
    truth = _truth(pipe.predict, frame, ["job", "hours"], "sex")
    assert 0.01 < truth < 0.99
    assert result.undecided == 0 and result.falsified == pytest.approx(truth, abs=1e-12)
    # counterexamples are data values (codes of the result's categories), labelled apart by the pipeline
    jobs, sexes = result.categories["job"], result.categories["sex"]
    assert result.counterexamples
    for c in result.counterexamples:
        pair = pd.DataFrame(
            {
                "job": [jobs[int(c.x[0])]] * 2,
                "sex": [sexes[int(c.x[1])], sexes[int(c.x_prime[1])]],
                "hours": [c.x[2]] * 2,
            }
        )
        assert c.x[2] in set(frame.hours) and pipe.predict(pair)[0] != pipe.predict(pair)[1]


def test_the_stretched_grid_of_a_feature():
    """Values 1, 2.5, 7 seen 2, 4 and 6 times: grids of 1, 2 and 3 points (gcd 2); a test sends left
    the same values on the grid as on the domain, whichever split rule and rounding."""
    stretch = Stretch([0], [np.array([1.0, 2.5, 7.0])], [np.array([1, 3, 6])])
    assert stretch.back(np.array([[0.0], [1.0], [2.0], [3.0], [5.0]]))[:, 0].tolist() == [1, 2.5, 2.5, 7, 7]

    class Rule:
        def __init__(self, split):
            self.split, self.input_float32 = split, False

    for split in ("<", "<="):
        for t in (0.5, 1.0, 2.0, 2.5, 3.0, 7.0, 8.0):
            u = stretch.threshold(Rule(split), 0, t)
            grid = np.arange(6.0)
            on_grid = grid < u if split == "<" else grid <= u
            values = stretch.back(grid[:, None])[:, 0]
            assert np.array_equal(on_grid, values < t if split == "<" else values <= t), (split, t)


def test_the_stretched_ensemble_labels_every_grid_point_as_the_model_labels_its_value():
    frame, y = _data(5)
    ir = load_model(RandomForestClassifier(8, max_depth=5, random_state=0).fit(frame, y))
    codes = frame[["a", "s", "r"]].to_numpy(dtype=float)
    prop = individual_fairness(DOMAIN, "s")
    prop = type(prop)(prop.domain, prop.protected, prop.epsilon, population=Marginals.from_codes(codes))
    ir_s, prop_s, stretch = stretched(ir, prop)
    sizes = [prop_s.domain.features[j].size for j in (0, 2)]
    # gcd-reduced grids: `a` and `r` have as many points as rows over the gcd of their counts
    assert sizes == [int(stretch.ends[0][-1]), int(stretch.ends[1][-1])] and max(sizes) <= len(frame)
    grid = np.array(list(itertools.product(range(sizes[0]), [0, 1], range(sizes[1]))), dtype=float)
    assert np.array_equal(ir_s.predict(grid), ir.predict(stretch.back(grid)))


def test_epsilon_kappa_and_the_complete_method_are_refused_in_one_line():
    frame, y = _data(0)
    model = RandomForestClassifier(5, max_depth=3, random_state=0).fit(frame, y)
    with pytest.raises(PropertyError, match="epsilon 0"):
        faircert.verify(model, DOMAIN, protected="s", population="independent", data=frame, epsilon={"a": 1})
    with pytest.raises(PropertyError, match="without kappa"):
        faircert.verify(model, DOMAIN, protected="s", population="independent", data=frame, kappa=0.6)
    with pytest.raises(PropertyError, match="not with --complete"):
        faircert.verify(model, DOMAIN, protected="s", population="independent", data=frame, complete=True)


def test_the_command_answers_under_the_population_and_gates_on_it(tmp_path):
    frame, y = _data(2)
    xgb = pytest.importorskip("xgboost")
    model = xgb.XGBClassifier(n_estimators=10, max_depth=3, random_state=0, n_jobs=1).fit(frame, y)
    model.save_model(tmp_path / "model.json")
    frame.to_csv(tmp_path / "data.csv", index=False)
    DOMAIN.save(tmp_path / "domain.yaml")
    code = main(
        [
            "verify",
            str(tmp_path / "model.json"),
            "--domain",
            str(tmp_path / "domain.yaml"),
            "--protected",
            "s",
            "--population",
            "independent",
            "--data",
            str(tmp_path / "data.csv"),
            "--json",
            str(tmp_path / "out.json"),
            "--quiet",
        ]
    )
    out = json.loads((tmp_path / "out.json").read_text())
    truth = _truth(model.predict, frame, ["a", "r"], "s")
    assert code == 1 and out["verdict"] == "unfair" and out["population"] == "independent"
    assert out["falsified"] == pytest.approx(truth, abs=1e-12)


def test_a_checkpointed_run_resumes_to_the_uninterrupted_answer(tmp_path):
    frame, y = _data(4, n=2000)
    frame["r"] = np.round(frame.r, 3)  # many values: the refinement takes about 100 boxes
    model = GradientBoostingClassifier(n_estimators=40, max_depth=4, random_state=0).fit(frame, y)

    def run(**options):
        return faircert.verify(
            model, DOMAIN, protected="s", population="independent", data=frame, time_limit=30, workers=1, **options
        )

    whole = run(max_boxes=100)
    assert not whole.stats["converged"] and whole.undecided > 0
    part = run(max_boxes=50, checkpoint=tmp_path / "run.ckpt")
    assert part.undecided > whole.undecided
    resumed = run(max_boxes=100, resume=tmp_path / "run.ckpt")
    assert (resumed.certified, resumed.falsified, resumed.undecided) == (
        whole.certified,
        whole.falsified,
        whole.undecided,
    )


def test_stretching_the_grids_counts_in_the_time_limit(monkeypatch):
    """The uniform engine gets the time limit less what stretching the grids took (on a clock of the
    test's own: stretching takes 2 of the 10 seconds)."""
    from faircert.engines.trees import population
    from faircert.engines.trees import verify as trees_verify

    now = [0.0]

    class Clock:
        @staticmethod
        def perf_counter() -> float:
            return now[0]

    real_stretch, real_answer = population.stretched, trees_verify.answer
    given = []

    def slow_stretch(ir, prop):
        now[0] += 2.0
        return real_stretch(ir, prop)

    def recorded(ir, prop, options, progress=None):
        given.append(options.time_limit)
        return real_answer(ir, prop, options, progress)

    monkeypatch.setattr(population, "time", Clock)
    monkeypatch.setattr(population, "stretched", slow_stretch)
    monkeypatch.setattr(trees_verify, "answer", recorded)
    frame, y = _data(0)
    model = GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0).fit(frame, y)
    result = faircert.verify(model, DOMAIN, protected="s", population="independent", data=frame, time_limit=10)
    assert result.engine == "tree-population"
    (limit,) = given
    assert limit <= 8.0 + 1e-9 and limit > 7.0  # less the stretching (and what reading the inputs took)
