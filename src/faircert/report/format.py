"""How every report writes numbers and intervals, so the console, HTML and CSV agree."""

from __future__ import annotations

from ..results.verify import StatisticalEstimate


def interval(lo: float, hi: float, digits: int = 4) -> str:
    """Sound bounds as "[lo, hi]"; a single value where they agree to the digits shown."""
    if abs(hi - lo) < 0.5 * 10.0**-digits:
        return f"{lo:.{digits}f}"
    return bounds(lo, hi, digits)


def bounds(lo: float, hi: float, digits: int = 6) -> str:
    """Both ends always, "[lo, hi]" (probabilities whose width is the point)."""
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def percent(share: float, digits: int = 4) -> str:
    """A share of the domain, the population or the rows as "12.3456 %"."""
    return f"{100 * share:.{digits}f} %"


def statistical(s: StatisticalEstimate) -> str:
    """A sampled share with its interval and sample count (never a proof)."""
    return f"{100 * s.unfair:.4f} % [{100 * s.ci_low:.4f}, {100 * s.ci_high:.4f}], {s.samples:,} samples"


def ratio(value: float | None) -> str:
    """An impact ratio, "-" where there is none."""
    return "-" if value is None else f"{value:.3f}"


def seconds(s: float) -> str:
    """Elapsed or remaining time: "12s", "3m05s"."""
    return f"{s:.0f}s" if s < 60 else f"{int(s // 60)}m{int(s % 60):02d}s"


def epsilon(values: dict[str, float], none: str = "-") -> str:
    """Tolerances as "age=2, hours=1.5"."""
    return ", ".join(f"{k}={v:g}" for k, v in values.items()) or none
