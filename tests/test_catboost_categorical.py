"""CatBoost with categorical features: one-hot and CTR splits read exactly, as functions of one column."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import faircert
from faircert.data import encode_table, infer_domain
from faircert.errors import UnsupportedModelError
from faircert.models.binding import bind
from faircert.models.io.catboost import load_catboost
from faircert.models.io.catboost_categories import one_hot_split
from faircert.models.io.cityhash import category_hash
from faircert.models.pipeline import PipelineModel

catboost = pytest.importorskip("catboost")

CATS = ["c", "s", "e"]
EDUCATION = ["HS", "BSc", "MSc", "PhD", "none", "other"]


def _frame(rng: np.random.Generator, n: int, unseen: bool = False) -> pd.DataFrame:
    extra = ["NEW", "ünïcode category"] if unseen else []
    weights = np.array([0.4, 0.25, 0.15, 0.1, 0.06, 0.04] + [0.05] * len(extra))
    return pd.DataFrame(
        {
            "a": rng.integers(18, 60, n),
            "r": rng.normal(size=n),
            "c": rng.choice(list("vwxyz") + extra, n),
            "s": rng.choice(["Female", "Male"], n),
            "e": rng.choice(EDUCATION + extra, n, p=weights / weights.sum()),
        }
    )


def _train(simple_ctr: list[str] | None = None):
    rng = np.random.default_rng(0)
    frame = _frame(rng, 1500)
    y = ((frame.a > 35) ^ frame.c.isin(["x", "y"]) | ((frame.s == "Male") & (frame.r > 0))) | frame.e.isin(
        ["PhD", "none"]
    )
    model = catboost.CatBoostClassifier(
        iterations=40,
        depth=4,
        verbose=0,
        random_seed=0,
        thread_count=1,
        allow_writing_files=False,
        cat_features=CATS,
        one_hot_max_size=2,  # s one-hot, c and e by CTRs
        max_ctr_complexity=1,
        **({"simple_ctr": simple_ctr} if simple_ctr else {}),
    ).fit(frame, y.astype(int))
    return model, frame


@pytest.fixture(scope="module")
def trained():
    return _train()


def _kinds(model, tmp_path) -> set[str]:
    path = tmp_path / "m.json"
    model.save_model(str(path), format="json")
    data = json.loads(path.read_text())
    return {s["split_type"] for t in data["oblivious_trees"] for s in t["splits"] or []} | {
        c["ctr_type"] for c in data["features_info"]["ctrs"]
    }


def _margins(ir: PipelineModel, frame: pd.DataFrame) -> np.ndarray:
    """The pipeline's raw score: each encoded feature of its column, then the trees."""
    Z = np.stack([f.value(frame[f.column].to_numpy(dtype=object)) for f in ir.features], axis=1)
    return ir.estimator.score(Z)


@pytest.mark.parametrize("kind", ["Borders", "Counter", "Buckets"])
def test_margins_equal_catboost_exactly_on_random_rows_with_unseen_categories(kind, tmp_path):
    model, _ = _train([kind])
    assert {"OneHotFeature", "OnlineCtr", kind} <= _kinds(model, tmp_path)
    rows = _frame(np.random.default_rng(1), 4000, unseen=True)
    rows["r"] = np.random.default_rng(2).normal(size=len(rows)) * 3
    theirs = np.asarray(model.predict(rows, prediction_type="RawFormulaVal"), dtype=np.float64)
    model.save_model(str(tmp_path / "m.cbm"))
    model.save_model(str(tmp_path / "m.json"), format="json")
    for given in (model, tmp_path / "m.cbm", tmp_path / "m.json"):
        ir = load_catboost(given)
        assert isinstance(ir, PipelineModel) and ir.columns == ["a", "r", "c", "s", "e"]
        assert np.array_equal(_margins(ir, rows), theirs)  # float64, bit for bit


def test_bound_trees_give_catboost_margins_on_every_domain_point(trained):
    """Bound to a domain with unseen categories, the trees over domain codes score as CatBoost does."""
    model, _ = trained
    rows = _frame(np.random.default_rng(3), 3000, unseen=True)
    domain = infer_domain(rows)
    bound, dom = bind(load_catboost(model), domain)
    codes = encode_table(rows, dom)
    theirs = np.asarray(model.predict(rows[["a", "r", "c", "s", "e"]], prediction_type="RawFormulaVal"))
    assert np.array_equal(bound.score(codes), theirs)


def test_per_row_verdicts_equal_brute_force_over_each_ball(trained):
    model, frame = trained
    rows = frame.head(60)
    result = faircert.audit(model, rows, domain=frame, protected="s", epsilon={"a": 2}, time_limit=30)
    assert result.engine == "rows-trees"
    lo, hi = frame.a.min(), frame.a.max()
    expected = []
    for _, row in rows.iterrows():  # a twin takes the other protected value, a within 2 (in the domain)
        other = "Male" if row.s == "Female" else "Female"
        twins = [dict(row, a=a, s=other) for a in range(max(lo, row.a - 2), min(hi, row.a + 2) + 1)]
        labels = model.predict(pd.DataFrame([dict(row)] + twins)[list(frame.columns)])
        expected.append("fair" if len(set(labels)) == 1 else "unfair")
    assert list(result.verdicts) == expected and "unfair" in expected and "fair" in expected


def test_a_one_hot_hash_written_signed_reads_the_category():
    assert category_hash("Female") == 2**32 - 2114564283  # CatBoost may write it as -2114564283
    split = one_hot_split(-2114564283, "test")
    assert list(split.encode(np.array(["Male", "Female", "NEW"], dtype=object))) == [0.0, 1.0, 0.0]


def test_category_hash_is_catboosts_for_texts_of_every_length(tmp_path):
    texts = ["".join(chr(97 + (i * 7 + k) % 26) for k in range(n)) for i, n in enumerate(range(1, 140, 3))]
    texts += ["é" * 40, "x" * 257, "a b-c"]
    frame = pd.DataFrame({"a": np.arange(2 * len(texts), dtype=float), "c": texts * 2})
    pool = catboost.Pool(frame, np.arange(len(frame)) % 2, cat_features=["c"])
    model = catboost.CatBoostClassifier(iterations=2, depth=2, verbose=0, allow_writing_files=False).fit(pool)
    model.save_model(str(tmp_path / "h.json"), format="json", pool=pool)
    hashes = json.loads((tmp_path / "h.json").read_text())["features_info"]["cat_features_hash"]
    assert len(hashes) == len(texts)
    assert all(category_hash(h["value"]) == h["hash"] for h in hashes)


def test_a_ctr_over_a_combination_is_refused_and_an_object_answered_as_a_black_box():
    rng = np.random.default_rng(0)
    frame = _frame(rng, 4000)
    y = ((frame.c.map(ord) * 7 + frame.e.str.len() * 3) % 5 < 2) | ((frame.s == "Male") & (frame.a > 40))
    model = catboost.CatBoostClassifier(
        iterations=60,
        depth=6,
        verbose=0,
        random_seed=0,
        thread_count=1,
        allow_writing_files=False,
        cat_features=CATS,
        one_hot_max_size=2,
        max_ctr_complexity=3,
    ).fit(frame, y.astype(int))
    with pytest.raises(UnsupportedModelError, match="combination of 2 features.*max_ctr_complexity=1"):
        load_catboost(model)
    result = faircert.verify(model, frame, "s", time_limit=3)
    assert result.engine == "blackbox-sampling" and "combination" in result.stats["black_box"]
    assert result.statistical is not None and result.statistical.samples > 0


def test_a_file_is_checked_against_catboost_itself_on_the_domain_rows(trained, tmp_path):
    """Binding a model read from a file scores sampled raw rows with CatBoost in a child process: the
    reading agrees, and a wrong reading (two indicators swapped) is caught."""
    from dataclasses import replace

    from faircert.errors import ModelFormatError

    model, frame = trained
    model.save_model(str(tmp_path / "m.cbm"))
    ir = load_catboost(tmp_path / "m.cbm")
    rows = frame.head(50)
    labels, margin = ir.reference(rows[ir.columns])
    assert np.array_equal(margin, model.predict(rows, prediction_type="RawFormulaVal"))
    assert np.array_equal(labels, model.predict(rows))
    bound, _ = bind(ir, infer_domain(frame))  # check_bound compares 400 sampled rows: they agree
    splits = [k for k, f in enumerate(ir.features) if f.encoder.kind != "identity"]
    features = list(ir.features)
    features[splits[0]], features[splits[-1]] = features[splits[-1]], features[splits[0]]
    with pytest.raises(ModelFormatError, match="disagrees"):
        bind(replace(ir, features=tuple(features)), infer_domain(frame))
