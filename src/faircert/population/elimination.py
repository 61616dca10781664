"""The order in which variable elimination multiplies a network's tables, and how wide it gets.

A message is the product of the tables taken so far, summed over the variables no later table
reads; its size is the product of the cardinalities of the variables still open. The order with
the least total work is searched exactly over subsets of tables for small networks and greedily
otherwise. A variable without children and with one parent is taken with its parent's table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Networks up to this many tables get the exact search for the order of elimination.
EXACT_ORDER = 15


@dataclass(frozen=True)
class Factor:
    """One table of the network: the variable it belongs to and the open variables it reads."""

    var: str
    scope: tuple[str, ...]  # open variables (evidence removed), the table's own variable last if open
    leaves: tuple[str, ...] = ()  # childless one-parent variables eliminated right after this table


def factors(pop: Any, names: list[str], evidence: dict[str, int]) -> list[Factor]:
    """The network's tables over the open variables, with childless one-parent variables attached."""
    children = {n: [c for c in names if n in pop.variables[c].parents] for n in names}
    factors: list[tuple[str, tuple[str, ...]]] = []
    attached: dict[str, list[str]] = {}
    for n in names:
        v = pop.variables[n]
        open_parents = [p for p in v.parents if p not in evidence]
        if n not in evidence and not children[n] and len(open_parents) == 1:
            attached.setdefault(open_parents[0], []).append(n)
            continue
        factors.append((n, tuple(open_parents) + (() if n in evidence else (n,))))
    out = []
    for n, scope in factors:
        out.append(Factor(n, scope, tuple(attached.pop(n, ()))))
    for parent, leaves in attached.items():  # a parent outside `names`: each leaf is its own table
        out.extend(Factor(leaf, (parent, leaf)) for leaf in leaves)
    return out


def search_order(factors: list[Factor], cards: dict[str, int], exact: bool = True) -> list[Factor]:
    """The order of the tables with the least total work (sum of the configurations each step
    touches): exact over subsets for small networks, greedy otherwise."""
    n = len(factors)
    if n == 0:
        return []
    names = sorted({v for f in factors for v in f.scope})
    bit = {v: 1 << i for i, v in enumerate(names)}
    logc = {bit[v]: math.log(cards[v]) for v in names}
    scope = [sum(bit[v] for v in f.scope) for f in factors]
    extra = [math.log(max((cards[x] for x in f.leaves), default=1)) for f in factors]
    readers = {b: sum(1 << i for i in range(n) if scope[i] & b) for b in logc}

    opened: dict[int, int] = {}

    def open_after(done: int) -> int:
        if done not in opened:
            touched = 0
            for i in range(n):
                if done >> i & 1:
                    touched |= scope[i]
            opened[done] = sum(b for b in logc if touched & b and readers[b] & ~done)
        return opened[done]

    sizes: dict[int, float] = {}

    def cost(done: int, i: int) -> float:
        during = open_after(done) | scope[i]
        if during not in sizes:
            sizes[during] = math.exp(sum(w for b, w in logc.items() if during & b))
        return sizes[during] * math.exp(extra[i])

    if exact and n <= EXACT_ORDER:
        return [factors[i] for i in _exact_order(scope, readers, logc, extra)]
    done, seq = 0, []
    for _ in range(n):
        i = min((i for i in range(n) if not done >> i & 1), key=lambda i: (cost(done, i), i))
        seq.append(i)
        done |= 1 << i
    return [factors[i] for i in seq]


def _exact_order(scope: list[int], readers: dict[int, int], logc: dict[int, float], extra: list[float]) -> list[int]:
    """The cheapest order by dynamic programming over the subsets of tables taken (vectorised: the
    variables open after each subset, and each step's cost, are computed for all subsets at once)."""
    n = len(scope)
    subsets = np.arange(1 << n, dtype=np.int64)
    touched = np.zeros(1 << n, dtype=np.int64)
    for i in range(n):
        touched[subsets >> i & 1 == 1] |= scope[i]
    log_open = np.zeros((1 << n, n))
    for b, w in logc.items():
        open_b = (touched & b != 0) & (readers[b] & ~subsets != 0)
        for i in range(n):
            log_open[:, i] += w * (open_b | (scope[i] & b != 0))
    cost = np.exp(log_open + np.asarray(extra)[None, :]).tolist()
    best = [math.inf] * (1 << n)
    step = [-1] * (1 << n)
    best[0] = 0.0
    for done in range(1 << n):  # every subset comes after the subsets it contains
        base = best[done]
        if base == math.inf:
            continue
        row = cost[done]
        for i in range(n):
            nxt = done | 1 << i
            if nxt != done and base + row[i] < best[nxt]:
                best[nxt], step[nxt] = base + row[i], i
    order, done = [], (1 << n) - 1
    while done:
        order.append(step[done])
        done &= ~(1 << step[done])
    return order[::-1]


def network_width(
    parents: dict[str, tuple[str, ...]], cards: dict[str, int], evidence: list[str], exact: bool = True
) -> tuple[int, list[str]]:
    """The most configurations a message holds at once when the network is eliminated with
    `evidence` fixed, along the order the engine searches, and the variables open at that step."""
    from types import SimpleNamespace

    shape = SimpleNamespace(variables={n: SimpleNamespace(parents=tuple(p)) for n, p in parents.items()})
    tables = factors(shape, list(parents), dict.fromkeys(evidence, 0))
    order = search_order(tables, cards, exact=exact)
    widest, at = 1, []
    open_vars: dict[str, int] = {}
    for pos, f in enumerate(order):
        open_vars.update((v, cards[v]) for v in f.scope)
        size = math.prod(open_vars.values())  # a leaf is taken without becoming an axis
        if size > widest:
            widest, at = size, list(open_vars)
        later = order[pos + 1 :]
        for v in [v for v in open_vars if not any(v in g.scope for g in later)]:
            open_vars.pop(v)
    return widest, at
