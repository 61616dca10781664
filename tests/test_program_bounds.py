"""Sound probability bounds for programs: the paper's examples, exact values, random programs vs
Monte Carlo, and the interval arithmetic they rest on."""

from pathlib import Path

import numpy as np
import pytest
from program_examples import FIG1
from scipy import integrate
from scipy.stats import norm

from faircert.engines.probability import intervals as iv
from faircert.engines.probability.bounds import probability, program_fairness
from faircert.engines.probability.interp import POINT, Interpreter
from faircert.models.program import parse_expression, parse_program
from faircert.population.program import site_marginals

EX = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "programs" / "fairsquare" / "ex.fr"


def _ex_ratio(factor: float) -> float:
    """Exact P[hire | min] / P[hire | not min] of Fig. 1 (expRank = factor*yExp - colRank) by quadrature."""

    def p_hire(shift: float) -> float:
        # colRank c ~ N(25 + shift, 10^2); not hired iff c > 5 and factor*y - c <= -5, y ~ N(10, 5^2)
        f = lambda c: norm.pdf(c, 25 + shift, 10) * norm.cdf(((c - 5) / factor - 10) / 5)
        miss, _ = integrate.quad(f, 5, np.inf, epsabs=1e-13, epsrel=1e-12)
        return 1 - miss

    return p_hire(5.0) / p_hire(0.0)


def test_example_3_1_sum_of_two_standard_normals():
    lo, hi = probability("x1 = gaussian(0, 1)\nx2 = gaussian(0, 1)\n", "x1 + x2 >= 0", tolerance=2e-3)
    assert lo <= 0.5 <= hi and hi - lo <= 2e-3


def test_example_3_2_is_0_327():
    # the paper's gauss(0, 2) has standard deviation 2: variance 4 in this language
    exact = 1 - norm.cdf(1 / np.sqrt(5))
    lo, hi = probability("x = gaussian(0, 4)\ny = gaussian(-1, 1)\nz = x + y\n", "z >= 0", tolerance=1e-3)
    assert lo <= exact <= hi and hi - lo <= 1e-3
    assert round(exact, 3) == 0.327


def test_step_bars_are_split_exactly():
    src = "s = step([(0, 1, 0.3307), (1, 2, 0.6693)])\nr = step([(0,1,0.25),(1,2,0.25),(3,4,0.5)])\n"
    lo, hi = probability(src, "s < 1 and r > 2", tolerance=1e-12, time_limit=5)
    assert lo <= 0.3307 * 0.5 <= hi and hi - lo < 1e-12
    lo, hi = probability("u = uniform(-1, 3)\n", "u <= 0", tolerance=1e-12, time_limit=5)
    assert lo <= 0.25 <= hi and hi - lo < 1e-12


def test_fig1_original_is_unfair_and_fixed_is_fair():
    source = EX.read_text() if EX.is_file() else FIG1
    bad = program_fairness(source, epsilon=0.1, time_limit=30)
    assert bad.verdict == "unfair"
    assert bad.ratio_low <= _ex_ratio(1.0) <= bad.ratio_high < 0.9
    assert abs(_ex_ratio(1.0) - 0.484) < 1e-3
    fixed = program_fairness(source.replace("yExp - colRank", "5*yExp - colRank"), epsilon=0.1, time_limit=30)
    assert fixed.verdict == "fair"
    assert 0.9 < fixed.ratio_low <= _ex_ratio(5.0) <= fixed.ratio_high
    assert abs(_ex_ratio(5.0) - 0.949) < 1e-3
    p = bad.probabilities["sensitive"]
    assert p[0] <= 1 - norm.cdf(1.0) <= p[1]


def test_difference_and_parity_forms():
    # P[t | s] = 0.5, P[t | not s] = 0.25: ratio 0.5, difference 0.25
    src = (
        "s = step([(0,1,0.5),(1,2,0.5)])\nx = uniform(0, 1)\n"
        "if s < 1:\n    t = x < 0.5\nelse:\n    t = x < 0.25\n"
        "sensitiveAttribute(s < 1)\nfairnessTarget(t > 0.5)\n"
    )
    r = program_fairness(src, epsilon=0.15, time_limit=10)
    assert r.verdict == "fair" and 0.85 < r.ratio_low <= 2.0 <= r.ratio_high  # the sensitive group is favoured
    assert program_fairness(src, epsilon=0.15, kind="parity", time_limit=10).verdict == "unfair"
    assert program_fairness(src, epsilon=0.2, kind="difference", time_limit=10).verdict == "unfair"
    assert program_fairness(src, epsilon=0.3, kind="difference", time_limit=10).verdict == "fair"


def _random_program(rng: np.random.Generator) -> tuple[str, str]:
    lines = []
    names = []
    for i in range(int(rng.integers(2, 4))):
        kind = rng.integers(3)
        name = f"v{i}"
        if kind == 0:
            lines.append(f"{name} = gaussian({rng.normal():.3f}, {rng.uniform(0.2, 4):.3f})")
        elif kind == 1:
            lo = rng.uniform(-2, 0)
            lines.append(f"{name} = uniform({lo:.3f}, {lo + rng.uniform(0.5, 3):.3f})")
        else:
            lines.append(f"{name} = step([(0, 1, 0.25), (1, 2, 0.35), (3, 5, 0.4)])")
        names.append(name)
    a, b = rng.choice(names, 2, replace=False)
    lines.append(f"w = {rng.normal():.3f} * {a} - {rng.normal():.3f} * {b} + {rng.normal():.3f}")
    lines.append(f"if {a} > {rng.normal():.3f}:\n    w = w * {rng.uniform(-2, 2):.3f}\nelse:\n    w = max(w, {b})")
    query = f"w > {rng.normal(scale=0.5):.3f} or {b} < {rng.normal():.3f}"
    return "\n".join(lines) + "\n", query


@pytest.mark.parametrize("seed", range(8))
def test_random_programs_bounds_bracket_monte_carlo(seed):
    rng = np.random.default_rng(seed)
    source, query = _random_program(rng)
    lo, hi = probability(source, query, tolerance=0.01, time_limit=3)
    prog = parse_program(source)
    marg = site_marginals(prog)
    n = 400_000
    _, (hits,), _ = Interpreter(POINT).run(prog, [m.sample(rng, n) for m in marg], [parse_expression(query)])
    p = float(np.mean(np.broadcast_to(hits, (n,))))
    se = max(np.sqrt(p * (1 - p) / n), 1 / n)
    assert lo - 5 * se <= p <= hi + 5 * se, (source, query, lo, hi, p)
    assert 0 <= lo <= hi <= 1


def _sample(a: iv.Iv, rng, n=2000):
    lo, hi = float(a.lo), float(a.hi)
    return np.concatenate([[lo, hi], rng.uniform(lo, hi, n)])


@pytest.mark.parametrize("seed", range(20))
def test_interval_operations_contain_every_point_result(seed):
    rng = np.random.default_rng(seed)

    def rand_iv():
        lo = rng.normal(scale=10) if rng.random() > 0.2 else 0.0
        hi = lo + (abs(rng.normal(scale=10)) if rng.random() > 0.2 else 0.0)
        return iv.Iv(np.float64(lo), np.float64(hi), np.bool_(False), np.bool_(False), np.uint64(0))

    a, b = rand_iv(), rand_iv()
    xa, xb = _sample(a, rng), rng.permutation(_sample(b, rng))
    for op, f in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply)):
        r = getattr(iv, op)(a, b)
        vals = f(xa, xb)
        assert np.all(vals >= r.lo) and np.all(vals <= r.hi), op
    if not (b.lo <= 0 <= b.hi):
        r = iv.div(a, b)
        vals = xa / xb
        assert np.all(vals >= r.lo) and np.all(vals <= r.hi)
    for op in ("<", "<=", ">", ">=", "==", "!="):
        c = iv.compare(op, a, b)
        truth = POINT.compare(op, xa, xb)
        if not bool(c.may_true):
            assert not truth.any(), op
        if not bool(c.may_false):
            assert truth.all(), op


def test_open_ends_decide_bar_edges_but_atoms_stay_closed():
    x = iv.Iv(np.float64(0.0), np.float64(1.0), np.bool_(False), np.bool_(True), None)  # [0, 1)
    assert bool(iv.compare("<", x, iv.const(1.0)).true)
    closed = iv.Iv(np.float64(0.0), np.float64(1.0), np.bool_(False), np.bool_(False), None)
    c = iv.compare("<", closed, iv.const(1.0))
    assert bool(c.may_true) and bool(c.may_false)
    # an exact constant equal to the threshold is never "less"
    assert bool(iv.compare("<", iv.const(1.0), iv.const(1.0)).false)


def test_underflow_and_overflow_never_lose_soundness():
    tiny = iv.Iv(np.float64(1e-200), np.float64(1e-200), np.bool_(False), np.bool_(False), None)
    p = iv.mul(tiny, tiny)  # the true product 1e-400 underflows to 0 in float64
    assert p.hi > 0 and p.lo <= 0
    big = iv.Iv(np.float64(1e200), np.float64(1e200), np.bool_(False), np.bool_(False), None)
    q = iv.mul(big, big)  # 1e400 overflows: the lower end must stay finite
    assert np.isfinite(q.lo) and q.hi == np.inf
    r = iv.div(iv.const(1.0), iv.Iv(np.float64(1e-320), np.float64(1e-320), np.bool_(False), np.bool_(False), None))
    assert np.isfinite(r.lo)
    s = iv.add(big, iv.const(1.7e308))
    assert np.isfinite(s.lo)


def test_qualification_conditions_both_groups():
    base = (
        "s = step([(0, 1, 0.5), (1, 2, 0.5)])\nx = uniform(0, 1)\n"
        "if s < 1:\n    t = x > 0.55 or x < 0.15\nelse:\n    t = x > 0.45\n"
        "sensitiveAttribute(s < 1)\n{qual}fairnessTarget(t > 0.5)\n"
    )
    plain = program_fairness(base.format(qual=""), epsilon=0.15, time_limit=20)
    assert plain.verdict == "fair" and plain.ratio_low <= 0.6 / 0.55 <= plain.ratio_high
    qual = program_fairness(base.format(qual="qualified(x > 0.2)\n"), epsilon=0.15, time_limit=20)
    # P[t | s, x > 0.2] = 0.45 / 0.8, P[t | not s, x > 0.2] = 0.55 / 0.8
    assert qual.verdict == "unfair" and qual.ratio_low <= 0.45 / 0.55 <= qual.ratio_high
    lo, hi = qual.probabilities["sensitive"]
    assert lo <= 0.5 * 0.8 <= hi


def test_empty_group_is_reported_not_decided():
    src = "x = uniform(0, 1)\nsensitiveAttribute(x > 2)\nfairnessTarget(x > 0.5)\n"
    r = program_fairness(src, time_limit=5)
    assert r.verdict == "unknown" and "probability 0" in r.stopped
    assert r.probabilities["sensitive"][0] == 0.0 and r.probabilities["sensitive"][1] < 1e-12


def test_more_random_draws_than_dependency_bits():
    # 66 draws: dependency masks are dropped (every input counts as relevant) and bounds stay sound
    src = "".join(f"u{i} = uniform(0, 1)\n" for i in range(66))
    lo, hi = probability(src, "u0 + u65 > 1", tolerance=0.02, time_limit=30)
    assert lo <= 0.5 <= hi and hi - lo <= 0.02


def test_affine_forms_keep_correlations_soundly():
    src = "x = gaussian(0, 1)\ny = uniform(-1, 2)\nd = (x + 2 * y) - y - x\n"
    # d == y exactly: intervals alone cannot see it, the affine form does
    lo, hi = probability(src, "d - y < 1e-9 and d - y > -1e-9", tolerance=1e-9, time_limit=10)
    assert hi == 1.0 and lo > 1 - 1e-9
    lo, hi = probability(src, "d > 0.5", tolerance=1e-6, time_limit=10)
    assert lo <= 0.5 <= hi  # P[y > 0.5] = 1.5 / 3


def _random_rich_program(rng: np.random.Generator) -> tuple[str, str]:
    """Nested ifs, products and quotients of variables, abs/min/max, chained comparisons."""
    lines = [
        f"a = gaussian({rng.normal():.3f}, {rng.uniform(0.3, 3):.3f})",
        f"b = uniform({-1 - rng.random():.3f}, {1 + rng.random():.3f})",
        "c = step([(0, 1, 0.2), (1, 3, 0.5), (4, 5, 0.3)])",
    ]
    e1 = rng.choice(["a * b", "a / (c + 1)", "abs(a) - b", "max(a, b) * 0.5", "min(a, c) + b * b"])
    lines.append(f"x = {e1}")
    lines.append(
        "if c < 1:\n    y = x + a\nelif 0 < b < 0.5:\n    if a > 0:\n        y = x - 2 * b\n"
        "    else:\n        y = -x\nelse:\n    y = x * 0.5 + c"
    )
    lines.append("z = y - x + (1 if a > b else -1)")
    query = rng.choice([f"z > {rng.normal():.3f}", "y < x or c > 3", f"not (z <= {rng.normal():.3f}) and b > -0.5"])
    return "\n".join(lines) + "\n", str(query)


@pytest.mark.parametrize("seed", range(6))
def test_rich_random_programs_bracket_monte_carlo(seed):
    rng = np.random.default_rng(100 + seed)
    source, query = _random_rich_program(rng)
    lo, hi = probability(source, query, tolerance=0.01, time_limit=3)
    prog = parse_program(source)
    n = 400_000
    draws = [m.sample(rng, n) for m in site_marginals(prog)]
    _, (hits,), _ = Interpreter(POINT).run(prog, draws, [parse_expression(query)])
    p = float(np.mean(np.broadcast_to(hits, (n,))))
    se = max(np.sqrt(p * (1 - p) / n), 1 / n)
    assert lo - 5 * se <= p <= hi + 5 * se, (source, query, lo, hi, p)


def test_ratio_width_keeps_refining_after_the_verdict():
    source = EX.read_text() if EX.is_file() else FIG1
    r = program_fairness(source, epsilon=0.1, time_limit=30, ratio_width=0.01)
    assert r.verdict == "unfair" and r.ratio_high - r.ratio_low <= 0.01
    assert r.ratio_low <= _ex_ratio(1.0) <= r.ratio_high
