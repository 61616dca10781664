"""The rule search: beam search over conjunctions of conditions, chosen by sequential covering.

The search sees codes (see `features`), never raw values. A candidate condition on a numeric feature
is any run of its bins; on a categorical feature, the categories ranked by their unfair rate within
the rule so far, any top few or bottom few (for a score that adds up over the categories, such as
the gain below, the best set is one of these prefixes).

Unfair rules maximise the unfair rows not yet covered that they hold beyond what a floor rate (a
given lift over the global rate) would give them, among those whose unfair rate reaches the floor.
On the practitioner models this finds more of the unfair rows at a lift of 3 on fresh rows than the
Jaccard index between the rule and the unfair rows, which takes in broad, diluted regions. Fair
rules maximise their rows among those with no unfair row. Each chosen rule's rows leave the search,
and the next rule describes the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .features import Encoded

#: Rules kept at each depth of the beam, and conditions per rule at most.
BEAM_WIDTH = 12
MAX_CONDITIONS = 3
#: An unfair rule holds at least this many unfair rows of the search half; a fair rule at least
#: MIN_FAIR_ROWS rows.
MIN_UNFAIR_ROWS = 5
MIN_FAIR_ROWS = 20

#: A condition goes where the rule without it keeps all but this share of its score.
PRUNE = 0.02

#: A rule in codes: (feature index, (first, last) bins) or (feature index, frozenset of categories).
Term = tuple[int, tuple[int, int] | frozenset[int]]
Score = Callable[[np.ndarray, np.ndarray, int, int], np.ndarray]


@dataclass(frozen=True)
class Found:
    terms: tuple[Term, ...]
    rows: int
    unfair: int
    score: float


def gain(floor: float) -> Score:
    """The unfair rows a rule holds beyond those its rows would hold at the rate `floor`: a rule takes
    in each part whose unfair rate beats the floor, and leaves out the others. Rules under the floor
    rank below every other (the beam still keeps them when nothing else is left: one more condition
    may lift them over it)."""

    def score(n: np.ndarray, k: np.ndarray, total: int, unfair: int) -> np.ndarray:
        out = k - floor * n
        out = np.where(k >= floor * n, out, out - total)
        return np.where(k >= MIN_UNFAIR_ROWS, out, -3.0 * total)

    return score


def fairness(n: np.ndarray, k: np.ndarray, total: int, unfair: int) -> np.ndarray:
    """Rows held, less each unfair row at the price of the rows that hold one unfair row on average:
    the beam prefers big, nearly clean regions, which one more condition may make clean."""
    return n - k * (total / max(unfair, 1))


class Search:
    """The search over the rows of one half: their codes and verdicts."""

    def __init__(self, features: list[Encoded], unfair: np.ndarray) -> None:
        self.features = [f for f in features if f.size >= 2]
        self.unfair = unfair

    def mask(self, terms: tuple[Term, ...], rows: np.ndarray) -> np.ndarray:
        out = rows.copy()
        for j, what in terms:
            codes = self.features[j].codes
            if isinstance(what, frozenset):
                out &= np.isin(codes, list(what))
            else:
                out &= (codes >= what[0]) & (codes <= what[1])
        return out

    def _candidates(self, j: int, rows: np.ndarray, score: Score, total: int, unfair: int, keep: int, fine: bool):
        """The best `keep` conditions on feature j for the rows `rows`: (score, term, n, k); numeric
        ranges run over the coarse bins, or over the fine ones where `fine`."""
        f = self.features[j]
        codes = f.codes[rows]
        held = codes >= 0
        n_b = np.bincount(codes[held], minlength=f.size)
        k_b = np.bincount(codes[held], weights=self.unfair[rows][held].astype(np.float64), minlength=f.size)
        now = int(rows.sum())
        if f.numeric:
            assert f.coarse is not None
            group = np.arange(f.size) if fine else f.coarse
            size = int(group[-1]) + 1
            n_g, k_g = np.bincount(group, n_b, minlength=size), np.bincount(group, k_b, minlength=size)
            cn, ck = np.concatenate([[0], np.cumsum(n_g)]), np.concatenate([[0.0], np.cumsum(k_g)])
            first, last = np.triu_indices(size)
            whole = (first == 0) & (last == size - 1)  # every bin: no condition, and no range to state
            first, last = first[~whole], last[~whole]
            n, k = cn[last + 1] - cn[first], ck[last + 1] - ck[first]
            starts, ends = np.searchsorted(group, first, side="left"), np.searchsorted(group, last, side="right") - 1
            terms: list[tuple[int, int] | frozenset[int]] = [(int(a), int(b)) for a, b in zip(starts, ends)]
        else:
            present = np.flatnonzero(n_b)
            by_rate = present[np.argsort(-k_b[present] / n_b[present], kind="stable")]
            # the most unfair categories first (unfair rules) or the least (fair ones): both orders
            orders = [by_rate, by_rate[::-1]]
            n = np.concatenate([np.cumsum(n_b[o]) for o in orders])
            k = np.concatenate([np.cumsum(k_b[o]) for o in orders])
            terms = [frozenset(int(c) for c in o[: i + 1]) for o in orders for i in range(len(o))]
        s = score(n.astype(np.float64), k, total, unfair)
        s = np.where((n > 0) & (n < now), s, -np.inf)  # a condition that keeps every row says nothing
        best = np.argsort(-s, kind="stable")[:keep]
        return [(float(s[i]), terms[i], int(n[i]), int(k[i])) for i in best if np.isfinite(s[i])]

    def best(self, rows: np.ndarray, score: Score, accept: Callable[[Found], bool]) -> Found | None:
        """The best accepted rule over `rows` found by the beam, its conditions then re-fitted."""
        total, unfair = int(rows.sum()), int(self.unfair[rows].sum())
        beam: list[Found] = [Found((), total, unfair, -np.inf)]
        winner: Found | None = None
        for _ in range(MAX_CONDITIONS):
            grown: dict[frozenset[Term], Found] = {}
            for rule in beam:
                inside = self.mask(rule.terms, rows)
                used = {j for j, _ in rule.terms}
                for j in range(len(self.features)):
                    if j in used:
                        continue
                    for s, term, n, k in self._candidates(j, inside, score, total, unfair, BEAM_WIDTH, False):
                        terms = (*rule.terms, (j, term))
                        grown.setdefault(frozenset(terms), Found(terms, n, k, s))
            beam = sorted(grown.values(), key=lambda r: -r.score)[:BEAM_WIDTH]
            for rule in beam:
                if accept(rule) and (winner is None or rule.score > winner.score):
                    winner = rule
            if not beam:
                break
        return None if winner is None else self._refit(winner, rows, score, accept)

    def _refit(self, rule: Found, rows: np.ndarray, score: Score, accept: Callable[[Found], bool]) -> Found:
        """Each condition re-chosen given the others, ranges over the fine bins, until none improves:
        the beam fixed the first condition before it knew the later ones, on coarse bins."""
        total, unfair = int(rows.sum()), int(self.unfair[rows].sum())
        for _ in range(5):
            improved = False
            for i, (j, _) in enumerate(rule.terms):
                others = rule.terms[:i] + rule.terms[i + 1 :]
                for s, term, n, k in self._candidates(j, self.mask(others, rows), score, total, unfair, 1, True):
                    better = Found((*others[:i], (j, term), *others[i:]), n, k, s)
                    if s > rule.score + 1e-12 and accept(better):
                        rule, improved = better, True
            if not improved:
                break
        return self._prune(rule, rows, score, accept)

    def _prune(self, rule: Found, rows: np.ndarray, score: Score, accept: Callable[[Found], bool]) -> Found:
        """Conditions dropped while the rule keeps all but PRUNE of its score without them: a
        condition that only trims a few rows off a rule fits noise and costs the reader a line."""
        total, unfair = int(rows.sum()), int(self.unfair[rows].sum())
        dropped = True
        while dropped and len(rule.terms) > 1:
            dropped = False
            for i in range(len(rule.terms)):
                others = rule.terms[:i] + rule.terms[i + 1 :]
                inside = self.mask(others, rows)
                n, k = int(inside.sum()), int(self.unfair[inside].sum())
                s = float(score(np.array([float(n)]), np.array([float(k)]), total, unfair)[0])
                shorter = Found(others, n, k, s)
                if s >= rule.score - PRUNE * abs(rule.score) and accept(shorter):
                    rule, dropped = shorter, True
                    break
        return rule


def unfair_rules(search: Search, rows: np.ndarray, max_rules: int, min_lift: float) -> list[tuple[Term, ...]]:
    """Up to `max_rules` rules, each over the unfair rows the ones before it left, each with an unfair
    rate at least `min_lift` times the global rate of the search rows, or halfway from that rate to 1
    where this is lower (a global rate of a half leaves no room for a lift of 3)."""
    base = search.unfair[rows].mean() if rows.any() else 0.0
    floor = min(min_lift * base, (1.0 + base) / 2)
    found: list[tuple[Term, ...]] = []
    left = rows.copy()
    while len(found) < max_rules and search.unfair[left].sum() >= MIN_UNFAIR_ROWS:
        rule = search.best(left, gain(floor), lambda r: r.unfair >= MIN_UNFAIR_ROWS and r.unfair >= floor * r.rows)
        if rule is None:
            break
        found.append(rule.terms)
        left &= ~search.mask(rule.terms, rows)
    return found


def fair_rules(search: Search, rows: np.ndarray, max_rules: int) -> list[tuple[Term, ...]]:
    """Up to `max_rules` regions without an unfair row, the largest first."""
    if rows.any() and not search.unfair[rows].any():
        return [()]  # no unfair row at all: every row is the one region
    found: list[tuple[Term, ...]] = []
    left = rows.copy()
    while len(found) < max_rules and left.sum() >= MIN_FAIR_ROWS:
        clean = lambda r: r.unfair == 0 and r.rows >= MIN_FAIR_ROWS
        rule = search.best(left, fairness, clean)
        if rule is None:
            break
        found.append(rule.terms)
        left &= ~search.mask(rule.terms, rows)
    return found
