"""Separable models: exact individual fairness and per-row audits of linear models."""
