"""Engines: how fairness questions are answered. One package per engine (`network`, `trees`,
`probability`, `group`, `sampling`), each stating the models and properties it accepts; shared box
machinery in `boxes`."""
