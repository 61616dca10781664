"""Programs shared by the program tests: FairSquare's Fig. 1 hiring example, and one whose ratio is
known in closed form."""

from statistics import NormalDist

#: Fig. 1: proven unfair at epsilon 0.1; with `5*yExp - colRank` (FIG1_FIXED) proven fair.
FIG1 = """
def popModel():
    ethnicity = gaussian(0,100)
    colRank = gaussian(25,100)
    yExp = gaussian(10,25)
    if ethnicity > 10:
        colRank = colRank + 5
    sensitiveAttribute(ethnicity > 10)

def F():
    expRank = yExp - colRank
    if colRank <= 5:
        hire = 1
    elif expRank > -5:
        hire = 1
    else:
        hire = 0
    fairnessTarget(hire > 0.5)
"""

FIG1_FIXED = FIG1.replace("yExp - colRank", "5*yExp - colRank")

#: P[hire | x > 0] = P[y + 1 > 0] = Phi(1); P[hire | x <= 0] = 1/2; the ratio is (1/2) / Phi(1) = 0.594.
GAUSSIAN_SHIFT = """
def popModel():
    x = gaussian(0, 1)
    y = gaussian(0, 1)
    if x > 0:
        y = y + 1
    sensitiveAttribute(x <= 0)

def F():
    if y > 0:
        hire = 1
    else:
        hire = 0
    fairnessTarget(hire > 0.5)
"""
GAUSSIAN_SHIFT_RATIO = 0.5 / NormalDist().cdf(1.0)
