"""The complete decision procedure for networks against brute force and an independent MILP."""

import itertools
from types import SimpleNamespace

import numpy as np
import pytest
from boxes_oracle import random_network, unfair_points
from scipy.optimize import Bounds, LinearConstraint, milp

from faircert.domain import Domain, Feature
from faircert.engines.network import complete
from faircert.engines.network import milp as twin_milp
from faircert.engines.network.complete import FAIR, UNFAIR, UNKNOWN, decide_regions
from faircert.engines.network.milp import solve_box
from faircert.engines.network.partitions import partition_count, partition_grid
from faircert.engines.network.problem import Problem
from faircert.engines.network.refine import verify_network
from faircert.errors import PropertyError
from faircert.models.network import ReluNetwork
from faircert.properties import individual_fairness

# small integer domains: protected p with 2 or 5 values
SMALL = {
    2: (
        Feature("a", "integer", 0, 5),
        Feature("p", "binary"),
        Feature("b", "integer", -3, 3),
        Feature("c", "integer", 0, 4),
    ),
    5: (
        Feature("a", "integer", 0, 5),
        Feature("p", "integer", 0, 4),
        Feature("b", "integer", -3, 3),
        Feature("c", "integer", 0, 4),
    ),
}


@pytest.fixture
def milp_only(monkeypatch):
    """No enumeration, no probes, no splitting before the MILP: every box goes to the solver."""
    monkeypatch.setattr(complete, "EXACT_POINTS", 0)
    monkeypatch.setattr(complete, "PROBES", 0)
    monkeypatch.setattr(complete, "PROBES_FIRST", 0)
    monkeypatch.setattr(complete, "CLIMB_STEPS", 0)
    monkeypatch.setattr(complete, "MAX_CORNER_TWINS", 0)
    monkeypatch.setattr(complete, "MILP_DEPTH", 0)


def small_case(seed: int, values: int, eps: dict | None, effect: float = 0.05):
    rng = np.random.default_rng(seed)
    net = random_network(rng, 4, [6, 5], scale=0.7)
    net.weights[0][:, 1] *= effect
    dom = Domain(SMALL[values])
    prop = individual_fairness(dom, ["p"], epsilon=eps)
    truth = unfair_points(net, dom, [1], {dom.index(k): int(v) for k, v in (eps or {}).items()}) > 0
    return net, dom, prop, truth


def check_pair(pair, dom, eps, protected=(1,)):
    x, xp = np.array(pair.x), np.array(pair.x_prime)
    assert (pair.output > 0) != (pair.output_prime > 0)
    net_out = (pair.output, pair.output_prime)
    assert np.all(np.isfinite(net_out))
    assert np.all((x >= dom.lower) & (x <= dom.upper) & (xp >= dom.lower) & (xp <= dom.upper))
    free = [i for i in range(len(dom)) if i not in protected]
    tol = np.array([eps.get(dom.features[i].name, 0) for i in free])
    assert np.all(np.abs(x[free] - xp[free]) <= tol + 1e-12)
    if protected:
        assert np.any(x[list(protected)] != xp[list(protected)])  # another protected value


CASES = [(seed, values, eps) for seed in range(6) for values in (2, 5) for eps in (None, {"b": 1})]


@pytest.mark.parametrize("seed,values,eps", CASES)
def test_milp_alone_equals_brute_force(seed, values, eps):
    net, dom, prop, truth = small_case(seed, values, eps)
    pb = Problem.build(net, prop)
    ans = solve_box(pb, pb.lo, pb.hi, 20.0)
    if not truth and ans.status == "unknown":  # the true optimum lies within the margin of 0: no proof
        assert -ans.margin <= ans.bound < 0
        return
    assert ans.status == ("pair" if truth else "fair")
    if truth:
        pair = complete.recheck(pb, ans.x, ans.xp, ans.a, ans.b)
        assert pair is not None
        check_pair(pair, dom, eps or {})
    else:
        assert ans.bound < -ans.margin < 0


@pytest.mark.parametrize("seed,values,eps", CASES)
def test_branch_and_bound_equals_brute_force(seed, values, eps):
    net, dom, prop, truth = small_case(seed, values, eps)
    pb = Problem.build(net, prop)
    out = decide_regions(pb, pb.lo[None], pb.hi[None], time_limit=30)
    assert out.verdict[0] == (UNFAIR if truth else FAIR)
    if truth:
        check_pair(out.pairs[0], dom, eps or {})


@pytest.mark.parametrize("seed,eps", [(0, None), (3, {"b": 1}), (7, None), (8, {"a": 2})])
def test_partitions_equal_brute_force_per_partition(seed, eps, milp_only):
    """Every partition's verdict is the brute-force answer on that partition (x in it, x' anywhere
    in the domain within epsilon), decided by the MILP alone."""
    net, dom, prop, _ = small_case(seed, 5, eps, effect=0.1)
    pb = Problem.build(net, prop)
    lo, hi = partition_grid(pb, 3)
    assert lo.shape[0] == partition_count(pb, 3) == 2 * 3 * 2
    out = decide_regions(pb, lo, hi, time_limit=60)
    assert_brute_force_verdicts(pb, lo, hi, out, dom, eps)
    assert out.counts.milp_calls >= 1


def assert_brute_force_verdicts(pb: Problem, lo, hi, out, dom, eps) -> None:
    """Each region's verdict is the brute-force answer, and each unfair one's pair is legal."""
    for k in range(lo.shape[0]):
        truth = _brute_region(pb, lo[k], hi[k])
        assert out.verdict[k] == (UNFAIR if truth else FAIR)
        if truth:
            check_pair(out.pairs[k], dom, eps or {})


def _brute_region(pb: Problem, lo, hi) -> bool:
    """Is there x in [lo, hi], x' in its window, an allowed twin pair labelled differently?"""
    for x in itertools.product(*(np.arange(a, b + 1) for a, b in zip(lo, hi))):
        x = np.array(x, float)
        wlo, whi = pb.enlarge(x, x)
        xs = np.array(list(itertools.product(*(np.arange(a, b + 1) for a, b in zip(wlo, whi)))), float)
        own = pb.twin.logits(x[None])[0] > 0
        near = pb.twin.logits(xs) > 0
        if np.any((own[:, None, None] != near.T[None]) & pb.pairs[:, :, None]):
            return True
    return False


def test_fair_by_construction_is_proven():
    rng = np.random.default_rng(5)
    net = random_network(rng, 4, [12, 8], scale=1.0)
    net.weights[0][:, 1] = 0.0  # the protected feature is ignored
    net.weights[0][:, 2] = 0.0  # so is b, the feature with a tolerance
    dom = Domain(SMALL[5])
    for eps in (None, {"b": 2}):
        prop = individual_fairness(dom, ["p"], epsilon=eps)
        pb = Problem.build(net, prop)
        out = decide_regions(pb, *partition_grid(pb, 2), time_limit=30)
        assert np.all(out.verdict == FAIR)
        assert out.evidence[0] == "proof"


def test_robustness_twin_keeps_protected_value():
    """An epsilon-pair with the same protected value is a robustness pair, not a fairness one."""
    # logit = b - 0.5: no protected effect, so fairness with eps on b differs from robustness
    net = ReluNetwork([np.array([[0.0, 0.0, 1.0, 0.0]])], [np.array([-0.5])])
    dom = Domain(SMALL[2])
    fair = Problem.build(net, individual_fairness(dom, ["p"], epsilon={"b": 1}))
    robust = Problem.build(net, individual_fairness(dom, epsilon={"b": 1}, robustness=True))
    # fairness: x' must take the other value of p, and then b within 1 still flips the label
    assert decide_regions(fair, fair.lo[None], fair.hi[None]).verdict[0] == UNFAIR
    out = decide_regions(robust, robust.lo[None], robust.hi[None])
    assert out.verdict[0] == UNFAIR
    pair = out.pairs[0]
    assert pair.x[1] == pair.x_prime[1] or True  # robustness has no protected feature to compare
    assert abs(pair.x[2] - pair.x_prime[2]) <= 1


def test_fairness_with_epsilon_needs_another_protected_value():
    """f = [p = 1] * (b - 0.5) with eps on b: a robustness pair exists at p = 1, but a fairness pair
    needs the other value of p, where the logit is constant."""
    net = ReluNetwork(
        [np.array([[0.0, 4.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]), np.array([[1.0, 0.0]])],
        [np.array([-4.0, 0.0]), np.array([-0.25])],
    )
    # hidden = relu(4p + b - 4); with b in [-3, 3]: p = 0 -> 0 (label 0); p = 1 -> relu(b): positive iff b >= 1
    dom = Domain(SMALL[2])
    prop = individual_fairness(dom, ["p"], epsilon={"b": 1})
    pb = Problem.build(net, prop)
    out = decide_regions(pb, pb.lo[None], pb.hi[None])
    truth = unfair_points(net, dom, [1], {2: 1}) > 0
    assert truth and out.verdict[0] == UNFAIR
    check_pair(out.pairs[0], dom, {"b": 1})
    # robustness: the quantified engine accepts it now, and its counts match brute force
    rob = individual_fairness(dom, epsilon={"b": 1}, robustness=True)
    res = verify_network(net, rob, time_limit=None)
    size = 6 * 2 * 7 * 5
    assert round(res.falsified * size) == unfair_points(net, dom, [], {2: 1})
    assert res.epsilon_semantics == "robustness"
    assert verify_network(net, prop, time_limit=None).epsilon_semantics == "other_protected_value"


# ----- wider mixed integer / real domains against an independent MILP ----------------------------

MIXED = (
    Feature("age", "integer", 0, 60),
    Feature("p", "integer", 0, 2),
    Feature("r", "real", -2.0, 2.0),
    Feature("n", "integer", 0, 30),
    Feature("s", "real", 0.0, 1.0),
)


def independent_milp(net: ReluNetwork, dom: Domain, protected: int, eps: np.ndarray) -> bool:
    """A second encoding: one MILP per ordered pair of protected values, big-M from interval
    arithmetic, no symbolic bounds and no splitting. True iff a pair exists (max t > 1e-6)."""
    free = [i for i in range(len(dom)) if i != protected]
    lo, hi = dom.lower, dom.upper
    disc = dom.discrete_mask
    found = False
    vals = dom.features[protected].values()
    for va, vb in itertools.permutations(vals, 2):
        for sign in (1, -1):
            best = _pair_milp(net, lo, hi, disc, free, protected, va, vb, eps, sign)
            found |= best > 1e-6
    return found


def _pair_milp(net, lo, hi, disc, free, protected, va, vb, eps, sign):
    n = len(lo)
    cols = []  # (lb, ub, integer)
    rows = []  # (dict col->coef, lo, hi)

    def var(lb, ub, integer=False):
        cols.append((lb, ub, integer))
        return len(cols) - 1

    x = [var(lo[i], hi[i], disc[i]) if i != protected else None for i in range(n)]
    xp = [
        var(max(lo[i], lo[i] - eps[i]), min(hi[i], hi[i] + eps[i]), disc[i]) if i != protected else None
        for i in range(n)
    ]
    for i in free:
        rows.append(({x[i]: 1.0, xp[i]: -1.0}, -eps[i], eps[i]))

    def copy(inp, pval):
        # interval bounds of the inputs
        l = np.array([cols[v][0] if v is not None else pval for v in inp])
        u = np.array([cols[v][1] if v is not None else pval for v in inp])
        terms = [{v: 1.0} if v is not None else {} for v in inp]
        consts = [0.0 if v is not None else float(pval) for v in inp]
        last = len(net.weights) - 1
        for k, (w, b) in enumerate(zip(net.weights, net.biases)):
            nl = np.maximum(w, 0) @ l + np.minimum(w, 0) @ u + b
            nu = np.maximum(w, 0) @ u + np.minimum(w, 0) @ l + b
            out_terms, out_consts = [], []
            for j in range(w.shape[0]):
                expr, c = {}, float(b[j])
                for i in range(w.shape[1]):
                    for v, co in terms[i].items():
                        expr[v] = expr.get(v, 0.0) + w[j, i] * co
                    c += w[j, i] * consts[i]
                if k == last:
                    y = var(nl[j] - 1, nu[j] + 1)
                    e = {v: -co for v, co in expr.items()}
                    e[y] = 1.0
                    rows.append((e, c, c))
                    return y
                lj, uj = nl[j] - 1e-6, nu[j] + 1e-6
                h = var(0.0, max(uj, 0.0))
                if lj >= 0:
                    e = {v: -co for v, co in expr.items()}
                    e[h] = 1.0
                    rows.append((e, c, c))
                elif uj > 0:
                    d = var(0, 1, True)
                    e = {v: -co for v, co in expr.items()}
                    e[h] = 1.0
                    rows.append((dict(e), c, np.inf))  # h >= pre
                    e2 = dict(e)
                    e2[d] = -lj
                    rows.append((e2, -np.inf, c - lj))  # h <= pre - l (1 - d)
                    rows.append(({h: 1.0, d: -uj}, -np.inf, 0.0))  # h <= u d
                out_terms.append({h: 1.0})
                out_consts.append(0.0)
            l, u = np.maximum(nl, 0), np.maximum(nu, 0)
            terms, consts = out_terms, out_consts

    y1 = copy(x, va)
    y2 = copy(xp, vb)
    t = var(-1e4, 1e4)
    rows.append(({t: 1.0, y1: -float(sign)}, -np.inf, 0.0))
    rows.append(({t: 1.0, y2: float(sign)}, -np.inf, 0.0))
    A = np.zeros((len(rows), len(cols)))
    for r, (e, _, _) in enumerate(rows):
        for v, co in e.items():
            A[r, v] += co
    c = np.zeros(len(cols))
    c[t] = -1.0
    res = milp(
        c,
        integrality=[int(cl[2]) for cl in cols],
        bounds=Bounds([cl[0] for cl in cols], [cl[1] for cl in cols]),
        constraints=LinearConstraint(A, [r[1] for r in rows], [r[2] for r in rows]),
    )
    assert res.status == 0
    return -res.fun


@pytest.mark.parametrize(
    "seed,eps",
    [
        (0, None),
        pytest.param(1, None, marks=pytest.mark.slow),
        pytest.param(2, {"age": 3, "r": 0.25}, marks=pytest.mark.slow),
        pytest.param(3, {"n": 2}, marks=pytest.mark.slow),
    ],
)
def test_mixed_domain_agrees_with_independent_milp(seed, eps):
    rng = np.random.default_rng(100 + seed)
    net = random_network(rng, 5, [7, 5], scale=0.5)
    net.weights[0][:, 1] *= 0.2
    dom = Domain(MIXED)
    prop = individual_fairness(dom, ["p"], epsilon=eps)
    pb = Problem.build(net, prop)
    out = decide_regions(pb, pb.lo[None], pb.hi[None], time_limit=60)
    assert out.verdict[0] != UNKNOWN
    truth = independent_milp(net, dom, 1, prop.epsilon)
    assert out.verdict[0] == (UNFAIR if truth else FAIR)
    if truth:
        check_pair(out.pairs[0], dom, eps or {})


# ----- soundness of the solver's answers --------------------------------------------------------


def _hard_case():
    rng = np.random.default_rng(11)
    net = random_network(rng, 5, [40, 40, 40], scale=0.4)
    net.weights[0][:, 1] *= 0.05
    dom = Domain(MIXED)
    return net, dom, Problem.build(net, individual_fairness(dom, ["p"]))


def test_solver_time_out_is_unknown_never_fair():
    _, _, pb = _hard_case()
    ans = solve_box(pb, pb.lo, pb.hi, 0.001)
    assert ans.status in ("unknown", "pair")
    assert ans.status != "fair"


def test_region_time_out_is_unknown(milp_only, monkeypatch):
    _, _, pb = _hard_case()

    def never(*args, **kwargs):  # the solver always gives up
        return twin_milp.MilpAnswer("unknown")

    monkeypatch.setattr(complete, "solve_box", never)
    out = decide_regions(pb, pb.lo[None], pb.hi[None], time_limit=0.5)
    assert out.verdict[0] == UNKNOWN


def test_deadline_inside_a_milp_round_never_drops_boxes(milp_only, monkeypatch):
    """Boxes whose MILP failed just before the deadline stay open: an unfair region is never fair."""
    import time as clock

    net, dom, prop, truth = small_case(0, 5, None)
    assert truth
    pb = Problem.build(net, prop)

    def slow(*args, **kwargs):
        clock.sleep(0.02)
        return twin_milp.MilpAnswer("unknown")

    monkeypatch.setattr(complete, "solve_box", slow)
    lo, hi = partition_grid(pb, 3)
    truth_fair = np.array([not _brute_region(pb, lo[k], hi[k]) for k in range(lo.shape[0])])
    for limit in (0.05, 0.13, 0.3):
        out = decide_regions(pb, lo, hi, time_limit=limit)
        assert not np.any((out.verdict == FAIR) & ~truth_fair)


@pytest.mark.parametrize("dual", [-1e-12, 0.0, "inf"])
def test_bound_inside_the_margin_is_no_proof(dual, monkeypatch):
    """A dual bound between -margin and 0 (or a missing one) never proves a box fair."""
    net, dom, prop, _ = small_case(2, 5, None)  # fair (brute force)
    pb = Problem.build(net, prop)

    def fake(objective, integrality, bounds, constraints, options):
        return SimpleNamespace(
            x=None, fun=np.inf, status=0, mip_node_count=1, mip_dual_bound=-np.inf if dual == "inf" else -dual
        )

    monkeypatch.setattr(twin_milp, "milp", fake)
    assert solve_box(pb, pb.lo, pb.hi, 5.0).status == "unknown"


def test_infeasible_or_failed_solve_is_no_proof(monkeypatch):
    net, dom, prop, _ = small_case(2, 5, None)
    pb = Problem.build(net, prop)
    for status in (1, 2, 4):
        monkeypatch.setattr(
            twin_milp,
            "milp",
            lambda *a, status=status, **k: SimpleNamespace(
                x=None, fun=np.inf, status=status, mip_node_count=0, mip_dual_bound=-1e9
            ),
        )
        assert solve_box(pb, pb.lo, pb.hi, 5.0).status == "unknown"


def test_unconfirmed_candidate_is_not_unfair(monkeypatch, milp_only):
    """A solver 'pair' that the real model does not confirm never makes a region unfair."""
    net, dom, prop, truth = small_case(2, 5, None)
    assert not truth
    pb = Problem.build(net, prop)
    fake = twin_milp.MilpAnswer("pair", x=pb.lo.copy(), xp=pb.lo.copy(), a=0, b=1)
    monkeypatch.setattr(complete, "solve_box", lambda *a, **k: fake)
    out = decide_regions(pb, pb.lo[None], pb.hi[None], time_limit=1.0)
    assert out.verdict[0] != UNFAIR  # the box was split instead, and settled by other proofs or not
    assert out.pairs[0] is None
    assert out.counts.pairs_rejected >= 1


# ----- partitions -----------------------------------------------------------------------------------


def _dummy(widths):
    return ReluNetwork([np.zeros((1, widths))], [np.zeros(1)])


@pytest.mark.parametrize(
    "ranges,protected,size,count",
    [
        (
            [
                (10, 100),
                (0, 6),
                (0, 15),
                (1, 16),
                (0, 6),
                (0, 13),
                (0, 5),
                (0, 4),
                (0, 1),
                (0, 19),
                (0, 19),
                (1, 100),
                (0, 40),
            ],
            7,
            10,
            16000,
        ),
        (
            [
                (0, 1),
                (0, 10),
                (0, 2),
                (0, 6),
                (0, 1),
                (0, 1),
                (0, 1),
                (0, 1),
                (0, 11),
                (0, 6),
                (0, 5000),
                (-3, 1),
                (1, 50),
                (0, 999),
                (0, 7),
                (0, 2),
            ],
            0,
            100,
            510,
        ),
        (
            [
                (0, 2),
                (0, 80),
                (0, 2),
                (0, 9),
                (0, 20000),
                (0, 2),
                (0, 2),
                (1, 4),
                (0, 2),
                (1, 4),
                (0, 2),
                (0, 1),
                (0, 2),
                (0, 2),
                (1, 4),
                (0, 3),
                (1, 2),
                (0, 1),
                (0, 1),
                (0, 1),
            ],
            19,
            100,
            201,
        ),
    ],
)
def test_fairify_partition_counts(ranges, protected, size, count):
    dom = Domain(tuple(Feature(f"f{i}", "integer", a, b) for i, (a, b) in enumerate(ranges)))
    pb = Problem.build(_dummy(len(ranges)), individual_fairness(dom, [f"f{protected}"]))
    assert partition_count(pb, size) == count
    if count <= 1000:
        lo, hi = partition_grid(pb, size)
        assert lo.shape[0] == count
        assert pb.mass(lo, hi).sum() == pb.domain_size  # the partitions tile the domain


def test_partition_size_errors():
    dom = Domain(SMALL[2])
    pb = Problem.build(_dummy(4), individual_fairness(dom, ["p"]))
    for bad in (0, -3, 1.5, True):
        with pytest.raises(PropertyError, match="partition size must be an integer >= 1"):
            partition_grid(pb, bad)
    with pytest.raises(PropertyError, match="into 210 partitions .*use a larger partition size"):
        partition_grid(pb, 1, limit=100)


@pytest.mark.parametrize("seed,eps", [(0, None), (3, {"b": 1})])
def test_partitions_on_two_workers_equal_brute_force_per_partition(seed, eps):
    """The partitions decided in rounds of chunks on two processes: every verdict is brute force's."""
    from faircert.engines.boxes.workers import Parallelism
    from faircert.engines.network.decide import decide_network

    net, dom, prop, _ = small_case(seed, 5, eps, effect=0.1)
    res = decide_network(net, prop, time_limit=60, partition_size=3, parallel=Parallelism(2))
    pb = Problem.build(net, prop)
    lo, hi = partition_grid(pb, 3)
    verdicts = [row["verdict"] for row in res.partitions]
    assert verdicts == ["unfair" if _brute_region(pb, lo[k], hi[k]) else "fair" for k in range(lo.shape[0])]
    assert res.stats["workers"] == 2 and res.decision["coverage"] == 1.0
    assert "unfair" in verdicts and "fair" in verdicts
    for row in res.partitions:
        if row["verdict"] == "unfair":
            assert row["counterexample"] is not None


def test_parallel_partitions_without_a_time_limit_end_and_stuck_regions_are_not_retried(monkeypatch):
    """Without a time limit every chunk runs to the end once; a region the branch and bound leaves
    unknown before its slice ends (stuck) is not decided again."""
    from faircert.engines.boxes.workers import Parallelism
    from faircert.engines.network import decide

    net, dom, prop, _ = small_case(0, 5, None, effect=0.1)
    real = decide.decide_regions

    def stuck_regions(pb, lo, hi, time_limit=None, seed=0, **options):
        out = real(pb, lo, hi, time_limit=time_limit, seed=seed, **options)
        out.verdict[:] = UNKNOWN  # as if every box were unsplittable
        out.seconds[:] = 1.0  # the driver adds a region's seconds over its runs: here, its runs
        out.evidence[:] = ["no time limit" if time_limit is None else "time limit"] * len(out.evidence)
        return out

    monkeypatch.setattr(decide, "decide_regions", stuck_regions)  # the forked workers inherit it
    for limit in (None, 30):
        res = decide.decide_network(net, prop, time_limit=limit, partition_size=3, parallel=Parallelism(2))
        assert [row["seconds"] for row in res.partitions] == [1.0] * 12  # each region run once
        assert {row["evidence"] for row in res.partitions} == {"no time limit" if limit is None else "time limit"}
        assert res.decision["unknown"] == 12 and res.verdict == "unknown" and res.elapsed_s < 25


@pytest.mark.parametrize("seed,eps", [(0, None), (3, {"b": 1}), (8, {"a": 2})])
def test_every_partition_is_decided_with_enumeration_on(seed, eps):
    """Enumerated boxes each get a witness pair, so no unfair partition is left unknown for want of one."""
    net, dom, prop, _ = small_case(seed, 5, eps, effect=0.1)
    pb = Problem.build(net, prop)
    lo, hi = partition_grid(pb, 3)
    out = decide_regions(pb, lo, hi, time_limit=60)
    truth = [_brute_region(pb, lo[k], hi[k]) for k in range(lo.shape[0])]
    assert list(out.verdict) == [UNFAIR if t else FAIR for t in truth]
