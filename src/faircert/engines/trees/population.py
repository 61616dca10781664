"""Tree ensembles under the data's independent marginals, exactly, by a change of variables.

Under `Marginals` a free feature j takes its observed values v_1 < ... < v_m with counts c_1..c_m.
Stretch v_k over the integers [C_{k-1}, C_k) / g (C the running counts, g their gcd): the uniform
measure on that grid is the feature's marginal, and the product of the grids is the product
measure. A tree's test on feature j sends left a prefix v_1..v_k of the observed values (a test is
monotone in x, the model's float32 rounding included), which on the stretched grid is one
threshold, C_k / g. So the ensemble over the stretched grid is a tree ensemble whose uniform
shares are the probabilities under the marginals; the uniform engine answers it, and its
counterexamples are mapped back to the domain and re-checked on the model itself.

Epsilon must be 0 on the free features: a twin within epsilon of x in value is not a fixed
ball on the stretched grid. Protected features keep their domain values (twins take every one);
whether x has an unfair twin does not depend on its own protected value, so their measure does
not matter, but the confident set of kappa would, and kappa is refused.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from ...domain import Domain, Feature
from ...errors import PropertyError
from ...models.trees import Tree, TreeEnsemble
from ...options import VerifyOptions
from ...progress import Progress
from ...properties import IndividualFairness
from ...results import Counterexample, Result

#: Largest stretched grid of one feature: its integers are exact in float32 (models that round
#: their inputs to float32 read them unchanged).
MAX_STRETCH = 2**24

#: The least share of the time limit the uniform engine keeps after the grids are stretched.
MIN_AFTER_STRETCH = 0.1


@dataclass
class Stretch:
    """The stretched grid of each free feature: `ends[k]` is where observed value `values[k]` ends."""

    free: list[int]
    values: list[np.ndarray]
    ends: list[np.ndarray]

    def back(self, u: np.ndarray) -> np.ndarray:
        """Domain points of stretched points (protected coordinates unchanged)."""
        x = np.array(u, dtype=np.float64)
        for j, values, ends in zip(self.free, self.values, self.ends):
            x[:, j] = values[np.searchsorted(ends, u[:, j], "right")]
        return x

    def threshold(self, ens: TreeEnsemble, j: int, t: float) -> float:
        """The threshold on the stretched grid of free feature `j` that sends left what `t` sends left."""
        k = self.free.index(j)
        v = self.values[k]
        if ens.input_float32:
            v = v.astype(np.float32).astype(np.float64)
        left = int(np.count_nonzero(v < t if ens.split == "<" else v <= t))  # a prefix: v increases
        end = int(self.ends[k][left - 1]) if left else 0  # stretched values below `end` go left
        return float(end) if ens.split == "<" else float(end - 1)


def stretched(ir: TreeEnsemble, prop: IndividualFairness) -> tuple[TreeEnsemble, IndividualFairness, Stretch]:
    """The ensemble and property over the stretched grids of `prop.population` (see the module docstring)."""
    eps = np.asarray(prop.epsilon, dtype=np.float64)
    if np.any(eps[prop.free] > 0):
        raise PropertyError(
            "tree ensembles under a population are answered with epsilon 0 (a twin within epsilon "
            "is not a ball under the data's measure); use the uniform domain or the per-row audit "
            "for epsilon"
        )
    if prop.kappa is not None:  # X_kappa depends on x's own protected value, which stays uniform here
        raise PropertyError(
            "tree ensembles under a population are answered without kappa; use the uniform domain for kappa"
        )
    pop = prop.population
    features = list(prop.domain.features)
    values, ends = [], []
    for j in prop.free:
        counts = np.asarray(pop.counts[j], dtype=np.int64)
        end = np.cumsum(counts // np.gcd.reduce(counts))
        if end[-1] > MAX_STRETCH:
            raise PropertyError(
                f"feature {features[j].name!r}: its marginal needs a grid of {int(end[-1]):,} points; "
                f"at most {MAX_STRETCH:,} (sample fewer rows for the population)"
            )
        values.append(np.asarray(pop.values[j], dtype=np.float64))
        ends.append(end)
        features[j] = Feature(features[j].name, "integer", 0, int(end[-1]) - 1, features[j].protected)
    stretch = Stretch(list(prop.free), values, ends)
    moved = set(prop.free)
    trees = []
    for tree in ir.trees:
        threshold = tree.threshold.copy()
        for node in np.flatnonzero((tree.left >= 0) & np.isin(tree.feature, list(moved))):
            threshold[node] = stretch.threshold(ir, int(tree.feature[node]), float(tree.threshold[node]))
        trees.append(Tree(tree.feature, threshold, tree.left, tree.right, tree.value))
    domain = Domain(tuple(features), match=prop.domain.match)
    return replace(ir, trees=trees), replace(prop, domain=domain, population=None), stretch


def _rechecked(ir: TreeEnsemble, prop: IndividualFairness, x: np.ndarray, xp: np.ndarray) -> np.ndarray:
    """Rows where the model labels x and x' differently, x' differs from x only in protected
    features, and x is confident beyond kappa."""
    free = prop.free
    same = np.all(x[:, free] == xp[:, free], axis=1)
    label, confident = ir.label_and_confident(ir.score(x), prop.kappa)
    return same & confident & (label != ir.predict(xp))


def answer(
    ir: TreeEnsemble, prop: IndividualFairness, options: VerifyOptions, progress: Progress | None = None
) -> Result:
    """Registry entry point: P[x has an unfair twin] for x drawn from the data's independent
    marginals, with the bounds, estimate and counterexamples of the uniform engine on the
    stretched grids (stretching them counts in the time limit)."""
    from .verify import answer as answer_uniform

    started = time.perf_counter()
    ir_s, prop_s, stretch = stretched(ir, prop)
    if options.time_limit is not None:
        spent = time.perf_counter() - started
        options = replace(options, time_limit=max(options.time_limit - spent, MIN_AFTER_STRETCH * options.time_limit))
    result = answer_uniform(ir_s, prop_s, options, progress)
    cexs = result.counterexamples
    if cexs:
        x = stretch.back(np.array([c.x for c in cexs]))
        xp = stretch.back(np.array([c.x_prime for c in cexs]))
        ok = _rechecked(ir, prop, x, xp)
        result.stats["rejected_counterexamples"] = result.stats.get("rejected_counterexamples", 0) + int((~ok).sum())
        x, xp = x[ok], xp[ok]
        result.counterexamples = [
            Counterexample(a.tolist(), b.tolist(), float(o), float(p))
            for a, b, o, p in zip(x, xp, ir.predict_proba(x), ir.predict_proba(xp))
        ]
        if not result.counterexamples and result.verdict == "unfair":
            result.verdict = "unknown"
    grid = result.domain_size  # sizes on the stretched grid become probabilities
    result.stats["population_grid"] = grid
    result.domain_size = 1.0
    m = result.measure
    assert m is not None  # the uniform engine always measures
    result.measure = replace(m, confident_size=m.confident_size / grid, unfair_size=m.unfair_size / grid)
    result.model = ir.source or repr(ir)
    result.engine = "tree-population"
    return result
