"""FairSquare's benchmark programs: verdicts agree with the Monte-Carlo ratios of the notes."""

from pathlib import Path

import pytest

from faircert import verify_program

PROGRAMS = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "programs" / "fairsquare"

# (file, Monte-Carlo ratio from the notes): fair iff the ratio exceeds 0.85
QUICK = [
    ("M_ind_F_DT_V2_D2_N4.fr", 1.005),
    ("M_BN_F_DT_V2_D2_N4.fr", 0.377),
    ("M_BN_F_SVM_V3.fr", 0.661),
    ("M_BN_F_DT_A.fr", 0.970),
]
SLOW = [
    ("M_BNc_F_DT_V3_D2_N44.fr", 0.702),
    ("M_BN_F_SVM_V6.fr", 0.663),
    ("M_BNc_F_SVM_V6.fr", 0.663),
    ("M_ind_F_NN_V3_H2.fr", 0.994),
    ("M_BN_F_NN_V3_H2.fr", 0.882),
    ("M_BNc_F_NN_V3_H2.fr", 0.882),
    ("M_BN_F_NN_V2_H1.fr", 0.995),
    ("M_ind_F_SVM_V6.fr", 0.989),
]


def _check(name: str, mc: float, method: str, limit: float) -> None:
    path = PROGRAMS / name
    if not path.is_file():
        pytest.skip("shared benchmark files are not present")
    r = verify_program(path, epsilon=0.15, time_limit=limit, method=method)
    assert r.verdict == ("fair" if mc > 0.85 else "unfair"), (name, r.ratio)
    if method == "sound":
        # the Monte-Carlo estimate has a standard error below 0.01
        assert r.ratio_low - 0.04 <= mc <= r.ratio_high + 0.04


@pytest.mark.parametrize("name, mc", QUICK)
def test_quick_benchmarks_sound(name, mc):
    _check(name, mc, "sound", 30)


@pytest.mark.parametrize("name, mc", QUICK)
def test_quick_benchmarks_sampling(name, mc):
    _check(name, mc, "sampling", 30)


@pytest.mark.slow
@pytest.mark.parametrize("name, mc", SLOW)
def test_hard_benchmarks_sound(name, mc):
    _check(name, mc, "sound", 60)
