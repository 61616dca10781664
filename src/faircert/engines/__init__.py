"""Engines: how fairness questions are answered (each states the models and properties it accepts)."""
