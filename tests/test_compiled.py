"""The compiled kernels (numba) against the numpy paths they replace: the same numbers, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from test_trees_engine import _models, _small_problem
from test_trees_open import _problem, _prop, _unstarted

from faircert.engines.trees.boxes import normalise
from faircert.engines.trees.open import Checker, OpenBoxes, _scaled, multinomial_rows
from faircert.models import trees_compiled
from faircert.models.trees import Tree, TreeEnsemble


def _numpy_scores(ir, X):
    return ir.score_of_leaves(ir.leaf_values(X))


def _inputs(ir, X, seed=0):
    """Random inputs, half of their values on split thresholds (where the split rule decides) or one
    float64 step beside them (where rounding the input to float32 decides)."""
    rng = np.random.default_rng(seed)
    ths = np.concatenate([t.threshold[~t.is_leaf] for t in ir.trees])
    near = rng.choice(ths, X.shape) + rng.choice([-1.0, 0.0, 1.0], X.shape) * np.spacing(ths.max())
    return np.where(rng.random(X.shape) < 0.5, near, X + rng.normal(0, 0.7, X.shape))


@pytest.mark.parametrize("seed", [0, 1])
def test_scores_equal_numpy_on_every_framework(seed):
    """XGBoost (float32 running sum, split <), LightGBM and scikit-learn (split <=, float64 sums,
    forests' identity link): identical scores, also on inputs that sit exactly on thresholds."""
    pytest.importorskip("xgboost")
    pytest.importorskip("lightgbm")
    pytest.importorskip("sklearn")
    X, y, _ = _small_problem(seed)
    for ir in _models(X, y, seed):
        Z = _inputs(ir, np.repeat(X, 25, axis=0), seed)
        assert np.array_equal(trees_compiled.scores(ir, Z), _numpy_scores(ir, Z)), ir.source
        assert np.array_equal(ir.score(Z), _numpy_scores(ir, Z))  # 10,000 rows: compiled, split among cores


def test_float32_running_sum_is_kept():
    """Leaves 1, 2**-25, -1: float64 sums to 2**-25 > 0, XGBoost's float32 running sum to 0."""
    leaf = -1
    trees = [Tree([0, 0, 0], [5.0, 0, 0], [1, leaf, leaf], [2, leaf, leaf], [0.0, v, v]) for v in (1.0, 2.0**-25, -1.0)]
    for f32, expect in ((True, 0.0), (False, 2.0**-25)):
        ir = TreeEnsemble(trees, 1, split="<", sum_float32=f32)
        X = np.zeros((3, 1))
        assert np.array_equal(trees_compiled.scores(ir, X), np.full(3, expect))
        assert np.array_equal(_numpy_scores(ir, X), np.full(3, expect))


def test_slice_scores_evaluate_every_protected_value():
    pytest.importorskip("xgboost")
    X, y, dom = _small_problem(3)
    ir = next(_models(X, y, 3))
    values = np.arange(dom.features[0].min, dom.features[0].max + 1, dtype=float)[:, None]
    own = np.random.default_rng(0).integers(0, len(values), len(X))
    Z = X.copy()
    Z[:, 0] = values[own, 0]
    got = trees_compiled.slice_scores(ir, Z, own, [0], values, ir.trees_reading([0]))
    for u, v in enumerate(values[:, 0]):
        W = Z.copy()
        W[:, 0] = v
        assert np.array_equal(got[:, u], _numpy_scores(ir, W))


@pytest.mark.parametrize("seed", [0, 1])
def test_setting_scores_equal_scores_of_each_setting(seed):
    """One descent for every setting of the protected features gives, bit for bit, the scores of
    the rows with each setting written in, on every framework (inputs on thresholds included),
    with settings that part at a split and settings that agree everywhere."""
    pytest.importorskip("xgboost")
    pytest.importorskip("lightgbm")
    pytest.importorskip("sklearn")
    X, y, _ = _small_problem(seed)
    for ir in _models(X, y, seed):
        Z = _inputs(ir, np.repeat(X, 10, axis=0), seed)
        prot = [0, 2] if ir.n_features > 2 else [0]
        ths = np.concatenate([t.threshold[~t.is_leaf] for t in ir.trees])
        rng = np.random.default_rng(seed)
        values = np.vstack([rng.choice(ths, (9, len(prot))), rng.normal(0, 2, (9, len(prot)))])
        values[-1] = values[-2]  # two settings alike
        got = trees_compiled.setting_scores(ir, Z, prot, values)
        for u, setting in enumerate(values):
            W = Z.copy()
            W[:, prot] = setting
            assert np.array_equal(got[:, u], _numpy_scores(ir, W)), (ir.source, u)


def test_setting_scores_take_64_settings_and_no_more():
    trees = [Tree([0, 0, 0], [0.5, 0, 0], [1, -1, -1], [2, -1, -1], [0.0, -1.0, 1.0])]
    ir = TreeEnsemble(trees, 1, split="<")
    values = np.arange(64, dtype=float)[:, None] / 63  # settings 32.. go right
    got = trees_compiled.setting_scores(ir, np.zeros((3, 1)), [0], values)
    assert np.array_equal(got, np.tile(np.where(values[:, 0] >= 0.5, 1.0, -1.0), (3, 1)))
    with pytest.raises(ValueError):
        trees_compiled.setting_scores(ir, np.zeros((3, 1)), [0], np.zeros((65, 1)))


@pytest.mark.parametrize("eps,kappa,robust", [(0, None, False), (0, 0.7, False), (1, 0.5, False), (1, 0.8, True)])
def test_verdicts_equal_numpy(monkeypatch, eps, kappa, robust):
    """The checker's verdicts and twins, compiled and by numpy, on draws from the whole domain."""
    ir, dom = _problem(0)
    q = _unstarted(ir, _prop(dom, eps, kappa, robust))
    x, slice_of = OpenBoxes(q).draw(np.random.default_rng(1), 3000)
    check = Checker(ir, normalise(ir, dom), q)
    fast = check(x, slice_of, np.inf)
    monkeypatch.setenv("FAIRCERT_NO_COMPILE", "1")
    slow = check(x, slice_of, np.inf)
    assert fast[1].any() and not fast[1].all()
    for a, b in zip(fast, slow):
        assert np.array_equal(a, b)


def test_points_in_boxes_equal_numpy():
    from faircert.engines.sampling.compiled import points_in_boxes

    rng = np.random.default_rng(0)
    lo = np.floor(rng.normal(0, 50, (200, 5)))
    hi = lo + np.concatenate([rng.integers(1, 40, (200, 3)), rng.random((200, 2)) * 3 + 1e-9], axis=1)
    discrete = np.array([True, True, True, False, False])
    rows = np.sort(rng.integers(0, 200, 20_000))  # split among cores
    u = rng.random((20_000, 5))
    u[:7] = np.nextafter(1.0, 0.0)  # the largest uniform: floors stay inside the box
    got = points_in_boxes(u, rows, lo, hi, discrete)
    assert np.array_equal(got, _scaled(u.copy(), lo[rows], hi[rows], discrete))
    assert np.all(got >= lo[rows]) and np.all(got < hi[rows])
    assert np.all(got[:, :3] == np.floor(got[:, :3]))


@pytest.mark.parametrize("m,chunk", [(100_000, 4096), (1000, 100_000), (7, 3), (0, 5)])
def test_multinomial_rows_draw_rows_by_weight(m, chunk):
    """Sorted rows in steps of at most `chunk`, m in all, never a weightless row, each row as often
    as its weight says (4 sigma)."""
    weight = np.array([0.0, 3.0, 0.0, 1.0, 5.0, 0.0, 2.0, 1e-3])
    steps = list(multinomial_rows(np.random.default_rng(4), m, weight, chunk))
    assert all(0 < len(s) <= chunk for s in steps)
    rows = np.concatenate(steps) if steps else np.zeros(0, dtype=np.int64)
    assert len(rows) == m and np.all(np.diff(rows) >= 0)
    counts = np.bincount(rows, minlength=len(weight))
    assert np.all(counts[weight == 0] == 0)
    p = weight / weight.sum()
    assert np.all(np.abs(counts - m * p) <= 4 * np.sqrt(m * p * (1 - p)) + 1)


def test_testing_mode_draws_the_same_samples_as_numpy(monkeypatch):
    """The same seed gives the same samples and twins, compiled or not (an unfinished run: draws
    from the open part, kept by the verdicts)."""
    from faircert.engines.trees.sampling import sample_unfair

    ir, dom = _problem(0)
    q = _unstarted(ir, _prop(dom, 0, 0.7, False))
    fast = sample_unfair(ir, q, 5000, seed=4)
    monkeypatch.setenv("FAIRCERT_NO_COMPILE", "1")
    slow = sample_unfair(ir, q, 5000, seed=4)
    assert len(fast[0]) == 5000
    for a, b in zip(fast, slow):
        assert np.array_equal(a, b)


def test_kernels_compile_without_a_writable_cache(monkeypatch):
    """Where numba finds nowhere to cache (it raises RuntimeError), kernels compile uncached."""
    import numba

    from faircert import compiled

    real = numba.njit

    def no_cache(*args, cache=False, **options):
        if cache:
            raise RuntimeError("cannot cache function: no locator available")
        return real(*args, **options)

    monkeypatch.setattr(numba, "njit", no_cache)

    def twice(x):
        return 2 * x

    assert compiled.jit(twice)(21) == 42
    assert compiled.jit_inline(twice)(4) == 8


def test_a_first_compilation_is_announced_once(capsys):
    from faircert import compiled

    class Kernel:
        def __init__(self, signatures):
            self.signatures = signatures

        def __call__(self, x):
            return x + 1

    compiled.announce_compiling.cache_clear()
    fresh, loaded = compiled._Announced(Kernel([])), compiled._Announced(Kernel(["(int64,)"]))
    assert loaded(1) == 2 and capsys.readouterr().err == ""
    assert fresh(1) == 2 and fresh(2) == 3 and compiled._Announced(Kernel([]))(0) == 1
    assert capsys.readouterr().err == "compiling kernels (first run only)\n"
