"""Exact group fairness of linear classifiers (`LinearModel`) under discrete populations.

Answers DI, SP, EO and PCF from exact P[yhat = 1 | group] by subset-sum over the population's
discrete features (`subset_sum`), with fairness influence functions (`influence`). Entry point:
`linear.analyse`.
"""
