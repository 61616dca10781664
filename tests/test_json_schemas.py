"""The JSON schemas shipped with the package describe what the commands write."""

from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pandas as pd
import pytest

import faircert
from faircert.models.linear import LinearModel

jsonschema = pytest.importorskip("jsonschema")


def _schema(name: str) -> dict:
    return json.loads(resources.files("faircert").joinpath(f"schemas/{name}.schema.json").read_text())


@pytest.fixture(scope="module")
def case():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"s": rng.integers(0, 2, 300), "x": rng.integers(0, 5, 300), "y": rng.integers(0, 2, 300)})
    return df, LinearModel.plain([0.9, 0.45], -1.7, ["s", "x"])


def test_verify_rows_and_group_results_match_their_schemas(case):
    df, model = case
    results = {
        "verify": faircert.verify(model, df[["s", "x"]], protected="s"),
        "rows": faircert.audit(model, df[["s", "x"]], protected="s", epsilon={"x": 1}),
        "group": faircert.group(model, df, protected="s", label="y", metrics="di,sp,eo", population="bayesnet"),
    }
    for name, result in results.items():
        payload = json.loads(result.to_json())
        jsonschema.validate(payload, _schema(name))


def test_a_schema_rejects_what_it_does_not_describe(case):
    df, model = case
    payload = json.loads(faircert.group(model, df, protected="s").to_json())
    jsonschema.validate(payload, _schema("group"))
    payload["groups"][0]["low"] = 1.5  # not a probability
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(payload, _schema("group"))
    del payload["metrics"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(payload, _schema("group"))


def test_a_group_estimate_matches_the_schema_with_its_method_and_label_rates(case, monkeypatch):
    """The sampled answer beside wide bounds names how it was drawn and carries the rates given
    each label value that EO is computed from."""
    from faircert.engines.group import estimate
    from faircert.models.network import ReluNetwork

    monkeypatch.setattr(estimate, "ESTIMATE_WIDTH", -1.0)  # every bound counts as wide here
    df, _ = case
    net = ReluNetwork([np.array([[0.9, 0.45]])], [np.array([-1.7])], input_names=["s", "x"])
    result = faircert.group(net, df, protected="s", label="y", metrics="di,sp,eo", population="bayesnet", time_limit=4)
    payload = json.loads(result.to_json())
    jsonschema.validate(payload, _schema("group"))
    sampled = payload["estimate"]
    assert sampled["method"].startswith("stratified") and set(sampled["conditional"]) == {"Y=0", "Y=1"}
    assert payload["metrics"]["eo"]["statistical"]["method"] == sampled["method"]
