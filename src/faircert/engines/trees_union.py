"""Exact size of (disjoint boxes A) intersected with (a union of overlapping boxes U).

A k-d recursion over regions R: a region is settled when no A box meets it, when no U box
meets it (A there is outside the union), when one U box covers it, or when a single U box meets
it; otherwise it is cut at the median of the U boundaries strictly inside it (the cut dimension
is the one with most such boundaries). It terminates because every cut removes boundaries.
The settled pieces A ∩ R ∩ u are disjoint boxes whose union is exactly A ∩ (∪U).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Covered:
    """Result of `covered`: sizes, the exact covered region as disjoint pieces, completeness."""

    covered: float = 0.0          # size of A ∩ ∪U inside settled regions
    settled: float = 0.0          # size of A inside settled regions
    piece_lo: list = field(default_factory=list)
    piece_hi: list = field(default_factory=list)
    piece_a: list = field(default_factory=list)   # index of the A box of each piece
    piece_u: list = field(default_factory=list)   # index of a U box containing the piece
    complete: bool = True
    regions: int = 0


def _clip(lo, hi, r_lo, r_hi):
    clo = np.maximum(lo, r_lo)
    chi = np.minimum(hi, r_hi)
    keep = np.all(clo < chi, axis=1)
    return keep, clo[keep], chi[keep]


def covered(a_lo: np.ndarray, a_hi: np.ndarray, u_lo: np.ndarray, u_hi: np.ndarray,
            deadline: float = np.inf, on_progress=None, keep_pieces: bool = True) -> Covered:
    """Exact |A ∩ ∪U| with A's boxes pairwise disjoint; any-time via `settled`."""
    out = Covered()
    if len(a_lo) == 0:
        return out
    r_lo = np.minimum(a_lo.min(axis=0), u_lo.min(axis=0) if len(u_lo) else np.inf)
    r_hi = np.maximum(a_hi.max(axis=0), u_hi.max(axis=0) if len(u_hi) else -np.inf)
    stack = [(r_lo, r_hi, np.arange(len(a_lo)), a_lo, a_hi, np.arange(len(u_lo)), u_lo, u_hi)]
    while stack:
        if time.monotonic() > deadline:
            out.complete = False
            break
        r_lo, r_hi, ai, alo, ahi, ui, ulo, uhi = stack.pop()
        out.regions += 1
        k, alo, ahi = _clip(alo, ahi, r_lo, r_hi)
        ai = ai[k]
        if len(ai) == 0:
            continue
        amass = np.prod(ahi - alo, axis=1)
        k, ulo, uhi = _clip(ulo, uhi, r_lo, r_hi)
        ui = ui[k]
        total = float(amass.sum())
        if len(ui) == 0:
            out.settled += total
            continue
        full = np.all((ulo <= r_lo) & (uhi >= r_hi), axis=1)
        if full.any() or len(ui) == 1:
            if full.any():
                plo, phi, pa, pmass = alo, ahi, ai, amass
                pu = np.full(len(ai), ui[int(np.argmax(full))])
            else:
                k, plo, phi = _clip(alo, ahi, ulo[0], uhi[0])
                pa, pmass = ai[k], np.prod(phi - plo, axis=1)
                pu = np.full(len(pa), ui[0])
            out.covered += float(pmass.sum())
            out.settled += total
            if keep_pieces and len(pa):
                out.piece_lo.append(plo); out.piece_hi.append(phi); out.piece_a.append(pa); out.piece_u.append(pu)
            if on_progress is not None:
                on_progress(out)
            continue
        inner_lo = np.where(ulo > r_lo, ulo, np.nan)
        inner_hi = np.where(uhi < r_hi, uhi, np.nan)
        cand = np.concatenate([inner_lo, inner_hi])
        counts = np.sum(~np.isnan(cand), axis=0)
        d = int(np.argmax(counts))
        vals = np.unique(cand[:, d][~np.isnan(cand[:, d])])
        cut = vals[len(vals) // 2]
        left_hi = r_hi.copy(); left_hi[d] = cut
        right_lo = r_lo.copy(); right_lo[d] = cut
        stack.append((right_lo, r_hi, ai, alo, ahi, ui, ulo, uhi))
        stack.append((r_lo, left_hi, ai, alo, ahi, ui, ulo, uhi))
    return out
