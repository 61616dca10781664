"""Learning a Bayesian network's structure from discretised data: greedy hill climbing on a
decomposable score (K2, BIC or BDeu), with a tabu list, bounded in-degree and no edge into a
protected attribute.

Each step takes the single edge addition, removal or reversal that raises the score most (local
scores are cached per variable and parent set) and stops when no move gains more than `EPSILON`.
Moves that undo one of the last `TABU` moves are not taken, so the search can cross flat ground.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence

import numpy as np
from scipy.special import gammaln

from ..errors import DataError

SCORES = ("k2", "bic", "bdeu")
EPSILON = 1e-4
TABU = 100
#: The equivalent sample size of the BDeu prior.
BDEU_ESS = 10.0


class LocalScores:
    """score(variable, parents), cached; variables are the columns of `codes` (n rows x k)."""

    def __init__(self, codes: np.ndarray, cards: Sequence[int], score: str) -> None:
        if score not in SCORES:
            raise DataError(f"network score must be one of {', '.join(SCORES)}, got {score!r}")
        self.codes, self.cards, self.score = codes, [int(c) for c in cards], score
        self.cache: dict[tuple[int, frozenset[int]], float] = {}

    def __call__(self, child: int, parents: frozenset[int]) -> float:
        key = (child, parents)
        if key not in self.cache:
            self.cache[key] = self._score(child, sorted(parents))
        return self.cache[key]

    def _score(self, child: int, parents: list[int]) -> float:
        r = self.cards[child]
        q = math.prod(self.cards[p] for p in parents)
        index = np.zeros(len(self.codes), dtype=np.int64)
        for p in parents:
            index = index * self.cards[p] + self.codes[:, p]
        counts = np.bincount(index * r + self.codes[:, child], minlength=q * r).reshape(q, r).astype(np.float64)
        totals = counts.sum(axis=1)
        if self.score == "k2":  # uniform Dirichlet prior; unseen configurations add 0
            return float(np.sum(gammaln(counts + 1)) - np.sum(gammaln(totals + r)) + q * math.lgamma(r))
        if self.score == "bdeu":
            a_j, a_jk = BDEU_ESS / q, BDEU_ESS / (q * r)
            return float(
                q * math.lgamma(a_j)
                - np.sum(gammaln(totals + a_j))
                + np.sum(gammaln(counts + a_jk))
                - q * r * math.lgamma(a_jk)
            )
        with np.errstate(divide="ignore", invalid="ignore"):
            loglik = np.where(counts > 0, counts * np.log(counts / totals[:, None]), 0.0).sum()
        return float(loglik - 0.5 * math.log(len(self.codes)) * q * (r - 1))


def hill_climb(
    codes: np.ndarray,
    cards: Sequence[int],
    forbidden_children: set[int],
    score: str,
    max_indegree: int,
    max_moves: int = 10_000,
) -> list[tuple[int, int]]:
    """Edges (parent, child) of a locally best network; no edge enters `forbidden_children`."""
    k = len(cards)
    local = LocalScores(codes, cards, score)
    parents: list[set[int]] = [set() for _ in range(k)]
    tabu: deque[tuple[str, int, int]] = deque(maxlen=TABU)

    def reaches(a: int, b: int) -> bool:
        """A directed path a -> ... -> b."""
        children = [[c for c in range(k) if v in parents[c]] for v in range(k)]
        stack, seen = [a], {a}
        while stack:
            v = stack.pop()
            if v == b:
                return True
            for c in children[v]:
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        return False

    for _ in range(max_moves):
        best: tuple[float, str, int, int] | None = None
        for u in range(k):
            for v in range(k):
                if u == v:
                    continue
                old_v = frozenset(parents[v])
                if u in parents[v]:
                    gain = local(v, old_v - {u}) - local(v, old_v)
                    if ("+", u, v) not in tabu and (best is None or gain > best[0]):
                        best = (gain, "-", u, v)
                    if u in forbidden_children or len(parents[u]) >= max_indegree or ("<>", v, u) in tabu:
                        continue
                    parents[v].discard(u)
                    cyclic = reaches(u, v)
                    parents[v].add(u)
                    if not cyclic:
                        old_u = frozenset(parents[u])
                        gain += local(u, old_u | {v}) - local(u, old_u)
                        if best is None or gain > best[0]:
                            best = (gain, "<>", u, v)
                elif (
                    v not in forbidden_children
                    and len(parents[v]) < max_indegree
                    and ("-", u, v) not in tabu
                    and not reaches(v, u)
                ):
                    gain = local(v, old_v | {u}) - local(v, old_v)
                    if best is None or gain > best[0]:
                        best = (gain, "+", u, v)
        if best is None or best[0] < EPSILON:
            break
        _, move, u, v = best
        if move == "+":
            parents[v].add(u)
        elif move == "-":
            parents[v].discard(u)
        else:
            parents[v].discard(u)
            parents[u].add(v)
        tabu.append((move, u, v))
    return sorted((p, c) for c in range(k) for p in parents[c])
