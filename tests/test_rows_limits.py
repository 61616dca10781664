"""Per-row audits of rows outside the domain, under the time and memory limits, and with the
per-row budgets: every verdict against brute force over the row's ball."""

from __future__ import annotations

import itertools
import json
import time

import numpy as np
import pandas as pd
import pytest
from boxes_oracle import random_network
from test_rows import DOM, EPS, _trees

import faircert
from faircert.cli import main
from faircert.domain import Domain, Feature
from faircert.engines.registry import find_engine
from faircert.engines.rows.audit import DEFERRED, ROUND_SECONDS, Decisions, past, run
from faircert.engines.rows.blackbox import BlackBoxRows
from faircert.models.blackbox import BlackBoxModel
from faircert.models.io.nnet import save_nnet
from faircert.models.network import ReluNetwork
from faircert.models.trees import Tree, TreeEnsemble
from faircert.options import AuditOptions
from faircert.properties import RowAudit, individual_fairness

#: whole weights and a half bias: every score is exact in float64, whatever the summation order
WEIGHTS = np.array([3.0, -7.0, 2.0, -1.0])
BIAS = 0.5


class Rule:
    """A classifier known only by its predictions (a linear rule), optionally slow: `delay`
    seconds per row predicted, as a remote or heavy model takes."""

    def __init__(self, delay: float = 0.0, weights: np.ndarray = WEIGHTS) -> None:
        self.delay, self.weights = delay, weights
        self.n_features_in_ = len(weights)

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        if self.delay:
            time.sleep(self.delay * len(X))
        return (X @ self.weights + BIAS > 0).astype(int)


def _linear() -> ReluNetwork:
    return ReluNetwork([WEIGHTS[None]], [np.array([BIAS])])


def _blackbox(delay: float = 0.0) -> BlackBoxModel:
    return BlackBoxModel.of(Rule(delay), DOM)[0]


def _outside_rows(n: int = 80, seed: int = 0) -> np.ndarray:
    """Rows reaching past the domain on every non-protected feature (a: 0..6, b: -3..3, c: 0..4)."""
    rng = np.random.default_rng(seed)
    return np.stack(
        [rng.integers(-3, 11, n), rng.integers(0, 3, n), rng.integers(-6, 7, n), rng.integers(-2, 8, n)], axis=1
    ).astype(float)


def _brute(predict, rows: np.ndarray, eps: dict[str, int]) -> list[str]:
    """fair / unfair per row: every twin, each epsilon-move within the domain or towards the row's
    own value (the domain widened to hold the row), the protected value any other of the domain."""
    out = []
    for x in rows:
        axes = []
        for j, f in enumerate(DOM.features):
            e = eps.get(f.name, 0)
            if f.name == "s":
                axes.append([v for v in f.values() if v != x[j]])
            else:
                lo, hi = max(x[j] - e, min(f.min, x[j])), min(x[j] + e, max(f.max, x[j]))
                axes.append(np.arange(lo, hi + 1))
        twins = np.array(list(itertools.product(*axes)), dtype=float)
        out.append("unfair" if np.any(predict(twins) != predict(x[None])[0]) else "fair")
    return out


KINDS = {
    "linear": (_linear, lambda m: (np.asarray(m, float) @ WEIGHTS + BIAS > 0).astype(int), "rows-linear"),
    "network": (lambda: random_network(np.random.default_rng(3), 4, [8, 6]), None, "rows-network"),
    "trees": (_trees, None, "rows-trees"),
    "blackbox": (_blackbox, None, "rows-blackbox"),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("eps", [{}, EPS], ids=["flip", "epsilon"])
def test_rows_outside_the_domain_are_audited_against_brute_force(kind, eps):
    make, predict, engine = KINDS[kind]
    model = make()
    predict = predict or model.predict
    rows = _outside_rows()
    assert not DOM.contains(rows).all()
    question = RowAudit(individual_fairness(DOM, "s", epsilon=eps), rows)
    result = find_engine(model, question).run(model, question, AuditOptions(), None)
    assert result.engine == engine and result.counts()["unknown"] == 0
    assert result.verdicts == _brute(predict, rows, eps)
    for i, v in enumerate(result.verdicts):  # each twin re-checked, and within its row's reach
        if v == "unfair":
            twin = np.array(result.twins[i])
            assert predict(twin[None])[0] != predict(rows[i][None])[0] and twin[1] != rows[i, 1]
            for j, f in enumerate(DOM.features):
                if f.name != "s":
                    x, e = rows[i, j], eps.get(f.name, 0)
                    assert max(x - e, min(f.min, x)) <= twin[j] <= min(x + e, max(f.max, x))


def test_network_rows_outside_the_domain_are_decided_by_bounds_and_the_milp_too():
    net = KINDS["network"][0]()
    rows = _outside_rows(60, seed=1)
    question = RowAudit(individual_fairness(DOM, "s", epsilon=EPS), rows)
    result = find_engine(net, question).run(net, question, AuditOptions(max_twins=1), None)
    assert result.counts()["unknown"] == 0 and result.stats["methods"].keys() - {"flip test"} <= {
        "bounds",
        "search",
        "milp",
    }
    assert result.verdicts == _brute(net.predict, rows, EPS)


def test_a_row_the_model_cannot_evaluate_is_unknown_with_its_reason_and_alone():
    net = KINDS["network"][0]()
    rows = _outside_rows(20, seed=2)
    rows[3, 3] = np.nan  # a category the encoder never saw reaches the engine as no value
    rows[5, 1] = 0.5  # not a code of the protected feature
    rows[7, 1] = 3  # a protected value outside the domain's
    rows[9, 0] = 2.5  # not a whole number of an integer feature
    question = RowAudit(individual_fairness(DOM, "s", epsilon=EPS), rows)
    result = find_engine(net, question).run(net, question, AuditOptions(), None)
    reasons = {i: result.methods[i] for i in (3, 5, 7, 9)}
    assert reasons == {
        3: "cannot be evaluated: c: no value (missing, or a category the domain does not name)",
        5: "cannot be evaluated: s: a code that is not a category of the domain",
        7: "cannot be evaluated: s: a code that is not a category of the domain",
        9: "cannot be evaluated: a: a value that is not a whole number",
    }
    assert all(result.verdicts[i] == "unknown" and result.twins[i] is None for i in reasons)
    others = [i for i in range(len(rows)) if i not in reasons]
    assert [result.verdicts[i] for i in others] == _brute(net.predict, rows[others], EPS)
    assert result.groups[5] == "0.5" and result.groups[7] == "3" and result.flip_unfair <= len(others)


def test_the_time_limit_holds_row_by_row_on_a_slow_model():
    model = _blackbox(delay=1e-3)  # a millisecond a twin: 300 rows of 30 twins take about 10 s
    rows = np.stack([np.arange(300) % 7, np.arange(300) % 3, np.arange(300) % 7 - 3, np.arange(300) % 5], axis=1)
    question = RowAudit(individual_fairness(DOM, "s", epsilon=EPS), rows.astype(float))
    events = []
    limit = 2.0
    result = run(lambda prop: BlackBoxRows(model), question, AuditOptions(time_limit=limit, workers=1), events.append)
    assert result.stopped == "time limit"
    assert result.elapsed_s <= 1.1 * limit + 2.0  # the engine's own clock
    counts = result.counts()
    assert 0 < counts["fair"] + counts["unfair"] < len(rows)
    left = [i for i, v in enumerate(result.verdicts) if v == "unknown"]
    assert {result.methods[i] for i in left} == {"time limit"}
    decided = [i for i in range(len(rows)) if i not in left]
    assert [result.verdicts[i] for i in decided] == _brute(Rule().predict, rows[decided].astype(float), EPS)
    # the bar moves with the rows decided: one event a round of about ROUND_SECONDS, not one at the end
    done = [e.rows_done for e in events]
    assert done == sorted(done) and len(set(done)) >= 3 and ROUND_SECONDS < limit / 4
    assert done[-1] == len(decided) and all(e.rows == len(rows) for e in events)


def test_the_memory_limit_ends_the_run_at_once_with_the_rows_decided():
    net = KINDS["network"][0]()
    question = RowAudit(individual_fairness(DOM, "s", epsilon=EPS), _outside_rows(1200, seed=3))
    full = find_engine(net, question).run(net, question, AuditOptions(), None)
    assert full.stopped == "done" and full.counts()["unknown"] == 0
    tiny = find_engine(net, question).run(net, question, AuditOptions(memory_limit=2048), None)
    assert tiny.stopped == "memory limit" and tiny.stats["memory_limited"]
    assert set(tiny.methods) == {"memory limit"} and set(tiny.verdicts) == {"unknown"}
    # room for the rows' bookkeeping and a few dozen twins: the flip test runs, the rest stops
    some = find_engine(net, question).run(net, question, AuditOptions(memory_limit=160_000), None)
    assert some.stopped == "memory limit"
    decided = [i for i, v in enumerate(some.verdicts) if v != "unknown"]
    assert 0 < len(decided) < len(question.rows)
    assert all(some.verdicts[i] == full.verdicts[i] and some.twins[i] == full.twins[i] for i in decided)
    assert {m for v, m in zip(some.verdicts, some.methods) if v == "unknown"} == {"memory limit"}


def test_a_larger_twin_budget_decides_the_black_box_rows_the_default_left_open():
    model = _blackbox()
    rows = _outside_rows(60, seed=4)
    question = RowAudit(individual_fairness(DOM, "s", epsilon=EPS), rows)
    small = find_engine(model, question).run(model, question, AuditOptions(max_twins=10), None)
    left = [i for i, v in enumerate(small.verdicts) if v == "unknown"]
    assert left and {small.methods[i] for i in left} == {
        "ball too large for a black box: searched, not proven (raise max_twins, now 10)"
    }
    larger = find_engine(model, question).run(model, question, AuditOptions(max_twins=100), None)
    assert larger.counts()["unknown"] == 0 and larger.verdicts == _brute(Rule().predict, rows, EPS)


def test_the_command_line_memory_limit_ends_a_per_row_audit(tmp_path, capsys):
    rows = _outside_rows(200, seed=5)
    rows[:, 0], rows[:, 2], rows[:, 3] = (
        np.clip(rows[:, 0], 0, 6),
        np.clip(rows[:, 2], -3, 3),
        np.clip(rows[:, 3], 0, 4),
    )
    frame = pd.DataFrame(rows, columns=DOM.names).astype(int)
    frame.to_csv(tmp_path / "rows.csv", index=False)
    DOM.save(tmp_path / "domain.yaml")
    network = random_network(np.random.default_rng(3), 4, [8, 6])
    save_nnet(network, tmp_path / "m.nnet")
    args = ["audit", str(tmp_path / "m.nnet"), str(tmp_path / "rows.csv"), "--domain", str(tmp_path / "domain.yaml")]
    args += ["--protected", "s", "--epsilon", "a=2,b=1", "--json", "-", "--quiet"]
    assert main(args + ["--memory-limit", "2KiB"]) == 2
    payload = json.loads(capsys.readouterr().out)
    assert payload["stopped"] == "memory limit" and payload["unknown_reasons"] == {"memory limit": 200}
    assert main(args) in (0, 1)
    payload = json.loads(capsys.readouterr().out)
    assert payload["stopped"] == "done" and payload["counts"]["unknown"] == 0


def test_rows_outside_the_domain_on_a_real_feature_are_decided_soundly():
    dom = Domain((Feature("s", "binary", 0, 1), Feature("t", "real", -2.0, 2.0), Feature("k", "integer", 0, 3)))
    rng = np.random.default_rng(4)
    rows = np.stack([rng.integers(0, 2, 60), rng.uniform(-3.5, 3.5, 60), rng.integers(-1, 5, 60)], axis=1)
    question = RowAudit(individual_fairness(dom, "s", epsilon={"t": 0.5}), rows)
    network = random_network(np.random.default_rng(9), 3, [6])  # bounds, search and a MILP decide its rows
    trees = TreeEnsemble(
        [
            # s matters only above t = 2.25: reached from rows above the domain and those within 0.5 of it
            Tree(
                (1, -1, 0, -1, -1), (2.25, 0, 0, 0, 0), (1, -1, 3, -1, -1), (2, -1, 4, -1, -1), (0, -0.3, 0, 0.6, -0.4)
            ),
            Tree((1, -1, -1), (-2.3, 0, 0), (1, -1, -1), (2, -1, -1), (0, -0.5, 0.2)),
        ],
        3,
        split="<=",
    )
    for model in (network, trees):
        result = find_engine(model, question).run(model, question, AuditOptions(), None)
        assert result.counts()["unknown"] == 0
        for i, x in enumerate(rows):  # a dense grid of the window, and each threshold, never contradicts a verdict
            lo, hi = max(x[1] - 0.5, min(-2.0, x[1])), min(x[1] + 0.5, max(2.0, x[1]))
            t = np.concatenate([np.linspace(lo, hi, 2001), [c for c in (2.25, -2.3) if lo <= c <= hi]])
            twins = np.stack([np.full_like(t, 1 - x[0]), t, np.full_like(t, x[2])], axis=1)
            flips = bool(np.any(model.predict(twins) != model.predict(x[None])[0]))
            if result.verdicts[i] == "fair":
                assert not flips, i
            else:
                twin = np.array(result.twins[i])
                assert lo - 1e-9 <= twin[1] <= hi + 1e-9 and twin[0] != x[0] and twin[2] == x[2]
                assert model.predict(twin[None])[0] != model.predict(x[None])[0]
            if model is trees:  # constant between thresholds: the grid with them is exact
                assert result.verdicts[i] == ("unfair" if flips else "fair")
        outside = (np.abs(rows[:, 1]) > 2) | (rows[:, 2] < 0) | (rows[:, 2] > 3)
        assert outside.sum() > 15 and {"fair", "unfair"} <= {result.verdicts[i] for i in np.flatnonzero(outside)}


def test_a_run_stopped_at_its_time_limit_resumes_to_the_whole_answer(tmp_path):
    model = _blackbox(delay=2e-4)
    rows = _outside_rows(300, seed=6)
    question = RowAudit(individual_fairness(DOM, "s", epsilon=EPS), rows)
    path = str(tmp_path / "rows.ckpt")
    kind = lambda prop: BlackBoxRows(model)  # noqa: E731
    stopped = run(kind, question, AuditOptions(time_limit=0.5, workers=1, checkpoint=path), None)
    assert stopped.stopped == "time limit" and "time limit" in stopped.methods
    resumed = run(kind, question, AuditOptions(time_limit=None, workers=1, resume=path), None)
    whole = run(kind, question, AuditOptions(time_limit=None, workers=1), None)
    assert resumed.stopped == "done" and resumed.counts()["unknown"] == 0
    assert resumed.verdicts == whole.verdicts == _brute(Rule().predict, rows, EPS)
    assert resumed.twins == whole.twins and resumed.methods == whole.methods
    kept = [i for i, v in enumerate(stopped.verdicts) if v != "unknown"]
    assert kept and all(resumed.verdicts[i] == stopped.verdicts[i] for i in kept)


def test_one_large_ball_is_cut_short_at_the_deadline_and_its_row_left_open():
    dom = Domain((Feature("s", "binary", 0, 1), Feature("t", "integer", 0, 9_998)))
    question = RowAudit(individual_fairness(dom, "s", epsilon={"t": 9_998}), np.array([[0.0, 5_000.0]] * 2))
    # a millisecond a twin, never flipped: each row's 9,999 twins would take 10 s
    model = BlackBoxModel.of(Rule(delay=1e-3, weights=np.zeros(2)), dom)[0]
    result = run(lambda prop: BlackBoxRows(model), question, AuditOptions(time_limit=1.0, workers=1), None)
    assert result.stopped == "time limit" and result.methods == ["time limit", "time limit"]
    assert result.elapsed_s <= 1.1 * 1.0 + 2.0


def test_a_model_too_slow_to_label_every_row_in_time_keeps_the_limit():
    model = _blackbox(delay=1e-3)  # 3,000 rows take 3 s to label alone
    question = RowAudit(individual_fairness(DOM, "s"), np.clip(_outside_rows(3000, seed=7), DOM.lower, DOM.upper))
    result = run(lambda prop: BlackBoxRows(model), question, AuditOptions(time_limit=0.5, workers=1), None)
    assert result.stopped == "time limit" and result.elapsed_s <= 1.1 * 0.5 + 2.0
    assert set(result.methods) == {"time limit"} and set(result.verdicts) == {"unknown"}
    labelled = [i for i, label in enumerate(result.labels) if label is not None]
    assert 0 < len(labelled) < 3000 and labelled == list(range(len(labelled)))
    assert [result.labels[i] for i in labelled] == Rule().predict(question.rows[labelled]).tolist()


def test_the_public_audit_takes_the_per_row_budgets_in_its_options():
    rows = pd.DataFrame(np.clip(_outside_rows(80, seed=9), DOM.lower, DOM.upper), columns=DOM.names)
    few = faircert.audit(_trees(), rows, DOM, protected="s", epsilon=EPS, options=AuditOptions(max_cells=1))
    assert (
        few.unknown_reasons()
        == {"too many cells: searched, not proven (raise max_cells, now 1)": few.counts()["unknown"]}
        and few.counts()["unknown"] > 0
    )
    more = faircert.audit(_trees(), rows, DOM, protected="s", epsilon=EPS, options=AuditOptions(max_cells=100))
    assert more.counts()["unknown"] == 0 and more.verdicts == _brute(_trees().predict, rows.to_numpy(float), EPS)


def test_a_resumed_audit_with_larger_budgets_tries_the_open_rows_again(tmp_path):
    ir = _trees()
    question = RowAudit(individual_fairness(DOM, "s", epsilon=EPS), _outside_rows(80, seed=9))
    path = str(tmp_path / "rows.ckpt")
    small = find_engine(ir, question).run(ir, question, AuditOptions(max_cells=1, checkpoint=path), None)
    assert small.counts()["unknown"] > 0
    same = find_engine(ir, question).run(ir, question, AuditOptions(max_cells=1, resume=path), None)
    assert same.verdicts == small.verdicts and same.methods == small.methods  # kept as they were
    larger = find_engine(ir, question).run(ir, question, AuditOptions(max_cells=100, resume=path), None)
    assert larger.counts()["unknown"] == 0 and larger.verdicts == _brute(ir.predict, question.rows, EPS)


class _Staged(BlackBoxRows):
    """A black box whose odd rows need a slow last stage (a fifth of a second each, fair)."""

    def decide(self, audit, rows, deadline):
        out = super().decide(audit, rows, deadline)
        for k, i in enumerate(rows.tolist()):
            if i % 2 and out.verdicts[k] == "fair":
                out.set(k, "unknown", DEFERRED)
        return out

    def finish(self, audit, rows, deadline):
        out = Decisions.open(len(rows))
        for k in range(len(rows)):
            if past(deadline):
                out.set(k, "unknown", "time limit")
            else:
                time.sleep(0.2)
                out.set(k, "fair", "last stage")
        return out


def test_every_row_gets_the_cheap_stages_before_any_gets_the_costly_one():
    model = _blackbox()
    rows = _outside_rows(200, seed=8)
    question = RowAudit(individual_fairness(DOM, "s", epsilon=EPS), rows)
    result = run(lambda prop: _Staged(model), question, AuditOptions(time_limit=1.0, workers=1), None)
    brute = _brute(Rule().predict, rows, EPS)
    assert result.stopped == "time limit"
    for i, (v, m) in enumerate(zip(result.verdicts, result.methods)):
        if i % 2 == 0 or brute[i] == "unfair":  # decided by the cheap stages, whatever the time limit
            assert v == brute[i] and m in ("flip test", "enumeration")
        else:  # some by the last stage, the rest left at the time limit
            assert (v, m) in (("fair", "last stage"), ("unknown", "time limit"))
    assert 0 < result.methods.count("last stage") < sum(b == "fair" for b in brute[1::2])
