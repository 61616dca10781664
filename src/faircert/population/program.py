"""A population program (FairSquare's `popModel`) used as a population model for any classifier.

The program's random draws are independent inputs; its variables at the end (named like the
model's features) are the features. Its `sensitiveAttribute`, when present, defines the two groups.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import PropertyError
from ..models.program import Program, load_program


@dataclass
class ProgramPopulation:
    """A probabilistic program whose final variables are the population's features."""

    program: Program

    @classmethod
    def load(cls, source: str | Path | Program) -> ProgramPopulation:
        return cls(load_program(source))

    @property
    def marginals(self) -> list:
        from ..engines.probability.interp import site_marginals

        return site_marginals(self.program)

    @property
    def names(self) -> list[str]:
        return sorted(self.program.defined)

    def check_features(self, needed: list[str]) -> None:
        missing = [n for n in needed if n not in self.program.defined]
        if missing:
            raise PropertyError(f"the population program {self.program.source} does not assign {missing} on "
                                f"every path; it assigns: {', '.join(sorted(self.program.defined))}")

    def intervals(self, lo: np.ndarray, hi: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
        """(final variables as interval values, annotation conditions) for CDF boxes (N, d)."""
        from ..engines.probability.interp import INTERVAL, Interpreter
        from ..engines.probability.bounds import draw_intervals

        notes, _, env = Interpreter(INTERVAL).run(self.program, draw_intervals(self.marginals, lo, hi))
        return env, notes

    def sample(self, rng: np.random.Generator, n: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """(final variables, annotation conditions) of n independent runs."""
        from ..engines.probability.interp import POINT, Interpreter

        draws = [m.sample(rng, n) for m in self.marginals]
        notes, _, env = Interpreter(POINT).run(self.program, draws)
        return {k: np.broadcast_to(v, (n,)) for k, v in env.items()}, notes

    def __str__(self) -> str:
        return f"program {self.program.source} ({self.program.n_sites} random draws)"
