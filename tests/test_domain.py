import json

import numpy as np
import pandas as pd
import pytest

from faircert import Domain, DomainError, Feature
from faircert.data import encode_table, infer_domain

YAML = """
features:
  - {name: age, kind: integer, min: 10, max: 100}
  - {name: sex, kind: binary, protected: true}
  - {name: hours, kind: real, min: 1.0, max: 99.5}
  - {name: race, kind: categorical, min: 0, max: 4}
"""


def test_yaml_domain_round_trip(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text(YAML)
    dom = Domain.load(path)
    assert dom.names == ["age", "sex", "hours", "race"]
    assert dom.protected_names == ["sex"]
    assert dom["sex"].min == 0 and dom["sex"].max == 1
    assert dom["age"].size == 91 and dom["race"].size == 5
    assert dom["hours"].size == pytest.approx(98.5)
    # measure over the non-protected features: grid count x length
    assert dom.measure(exclude=[1]) == pytest.approx(91 * 98.5 * 5)
    for suffix in (".json", ".yaml"):
        out = tmp_path / f"again{suffix}"
        dom.save(out)
        assert Domain.load(out) == dom
    assert json.loads((tmp_path / "again.json").read_text())["features"][1]["protected"] is True


@pytest.mark.parametrize(
    "text, message",
    [
        ("features:\n  - {name: a, kind: integer, min: 5, max: 1}", "min 5 > max 1"),
        ("features:\n  - {name: a, kind: weird, min: 0, max: 1}", "unknown kind"),
        ("features:\n  - {name: a, kind: integer, min: 0.5, max: 3}", "must be integers"),
        ("features:\n  - {name: a, kind: real, min: 0}", "needs 'min' and 'max'"),
        ("features:\n  - {name: a, kind: real, min: 0, max: 1, colour: red}", "unknown keys"),
        (
            "features:\n  - {name: a, kind: real, min: 0, max: 1}\n  - {name: a, kind: real, min: 0, max: 1}",
            "appears twice",
        ),
        ("features:\n  - {name: a, min: 0, max: 9}", "needs a 'kind'"),
        ("features:\n  - {name: a, kind: binary, min: 0, max: 2}", "binary features take values in"),
        ("- just a list", "expected a mapping"),
        ("features: [", "cannot parse"),
    ],
)
def test_bad_domain_files(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(DomainError, match=message) as caught:
        Domain.load(path)
    assert str(caught.value).startswith(f"{path}: ")  # every message names the file
    assert "np." not in str(caught.value)  # plain numbers, no numpy reprs


def test_binary_or_malformed_domain_file_is_a_one_line_error(tmp_path):
    binary = tmp_path / "model.onnx"
    binary.write_bytes(bytes(range(256)))
    with pytest.raises(DomainError, match="not a domain file"):
        Domain.load(binary)
    broken = tmp_path / "broken.yaml"
    broken.write_text("features:\n  - {name: a, kind: real, min: 0, max: [1\n")
    with pytest.raises(DomainError, match="cannot parse domain file") as err:
        Domain.load(broken)
    assert "\n" not in str(err.value)


def test_missing_domain_file(tmp_path):
    with pytest.raises(DomainError, match="not found"):
        Domain.load(tmp_path / "nope.yaml")


def test_infer_kinds_and_codes():
    frame = pd.DataFrame(
        {
            "age": [20, 35, 61],
            "sex": ["M", "F", "F"],
            "race": ["b", "a", "c"],
            "hours": [1.5, 40.0, 99.5],
            "flag": [0, 1, 1],
            "income": [0, 1, 0],
        }
    )
    dom = infer_domain(frame, protected=["sex"], label="income")
    assert dom.names == ["age", "sex", "race", "hours", "flag"]
    assert [f.kind for f in dom] == ["integer", "binary", "categorical", "real", "binary"]
    assert (dom["age"].min, dom["age"].max) == (20, 61)
    assert dom["race"].categories == ("a", "b", "c") and dom["race"].max == 2
    assert dom.protected_names == ["sex"]
    X = encode_table(frame, dom)
    np.testing.assert_array_equal(X[:, 1], [1, 0, 0])  # F=0, M=1
    np.testing.assert_array_equal(X[:, 2], [1, 0, 2])
    assert dom.contains(X).all()


def test_infer_unknown_column():
    with pytest.raises(DomainError, match="unknown column 'gender'"):
        infer_domain(pd.DataFrame({"a": [1, 2]}), protected=["gender"])


def test_contains_checks_integrality_and_bounds():
    dom = Domain((Feature("a", "integer", 0, 3), Feature("b", "real", 0.0, 1.0)))
    got = dom.contains(np.array([[1, 0.5], [1.5, 0.5], [4, 0.5], [0, 1.0]]))
    np.testing.assert_array_equal(got, [True, False, False, True])


def test_a_model_s_stored_names_and_an_unnamed_domain_are_refused_unless_matched_by_position(tmp_path):
    from faircert.errors import DomainError as Error

    class Named:  # a model that stores the names it was trained with
        n_inputs = 3
        input_names = ["a", "b", "c"]

    unnamed = Domain.from_bounds([0, 0, 0], [1, 1, 1])
    with pytest.raises(Error, match=r"stores its input names \(a, b, c\) but the domain's features are unnamed"):
        unnamed.check_model(Named())
    path = tmp_path / "d.yaml"
    Domain(unnamed.features, match="position").save(path)
    loaded = Domain.load(path)
    assert loaded.match == "position" and "match: position" in path.read_text()
    loaded.check_model(Named())  # by position, as asked
    loaded.with_protected(["x0"]).check_model(Named())
    path.write_text("match: names-ish\nfeatures: [{name: a, kind: integer, min: 0, max: 1}]\n")
    with pytest.raises(Error, match="'match' must be one of names, position"):
        Domain.load(path)


@pytest.mark.parametrize(
    "text",
    [
        "features:\n  - {name: age, kind: integer, min: 18, max: 90}\n  - {name: s, kind: binary, protected: true}\n",
        "a: [1, -2.5, 1.5e3, 0x1F, 1_000, .inf, .nan_is_text, ~, null, off, 'yes', \"no\", 2001-12-14]\nb: !!str "
        "5\nc:\n",
        "- [a, {b: [c, {d: e}]}]\n- ''\n- '1'\n",
        "",
        "# a comment only\n",
        "plain text",
    ],
)
def test_yaml_domains_read_as_pyyaml_safe_loader_reads_them(text):
    yaml = pytest.importorskip("yaml")
    from faircert.domain import _load_yaml

    assert _load_yaml(text, "d.yaml") == yaml.safe_load(text)


def test_a_wide_yaml_domain_reads_as_its_json_twin(tmp_path):
    rows = [{"name": f"f{i}", "kind": "integer", "min": 0, "max": i % 50 + 1} for i in range(20_000)]
    (tmp_path / "d.json").write_text(json.dumps({"features": rows}))
    (tmp_path / "d.yaml").write_text(
        "features:\n"
        + "".join(f"  - {{name: f{i}, kind: integer, min: 0, max: {i % 50 + 1}}}\n" for i in range(20_000))
    )
    assert Domain.load(tmp_path / "d.yaml") == Domain.load(tmp_path / "d.json")


def test_a_model_wider_than_a_domain_of_categories_is_pointed_to_the_preprocessor():
    from faircert.errors import DomainError as Error

    dom = Domain((Feature("job", "categorical", 0, 2, categories=("a", "b", "c")), Feature("age", "integer", 0, 9)))
    with pytest.raises(Error, match="takes 4 inputs.*--preprocessor PREP.pkl"):
        dom.check_width(4)
    with pytest.raises(Error) as plain:
        Domain.from_bounds([0, 0], [1, 1]).check_width(3)
    assert "--preprocessor" not in str(plain.value)


# ----- large and hostile YAML domains ----------------------------------------------------------
#: CPU seconds (this process's, unaffected by other jobs on the machine) a read at the limits may
#: take: loading a 100,000-feature YAML domain takes about 3 s, inferring one from a 20,000-column
#: CSV about 2 s (PyYAML's own loader and emitter took a minute and 9 s).
CPU_SECONDS = 10


def _cpu_seconds(call):
    import time

    start = time.process_time()
    call()
    return time.process_time() - start


def test_a_yaml_domain_of_100000_features_reads_in_seconds(tmp_path):
    from faircert.limits import MAX_FEATURES

    domain = Domain(tuple(Feature(f"f{i}", "integer", 0, i % 9 + 1, protected=i == 1) for i in range(MAX_FEATURES)))
    domain.save(tmp_path / "d.yaml")
    loaded = []
    assert _cpu_seconds(lambda: loaded.append(Domain.load(tmp_path / "d.yaml"))) < CPU_SECONDS
    assert loaded == [domain]


@pytest.mark.parametrize(
    "text,message",
    [
        (lambda: "features:\n" + "- 0\n" * 4_000_000, r"the number of features is more than 100,000"),  # 16 MB
        (lambda: "features: [" + "{name: a, kind: binary}, " * 600_000 + "]\n", r"the number of features is more than"),
        (lambda: "a: " + "[" * 101 + "]" * 101 + "\n", r"YAML nested more than 100 levels deep"),
    ],
    ids=["16 MB of list items", "600,000 features", "nested 101 deep"],
)
def test_hostile_yaml_domains_are_refused_in_one_line_quickly(tmp_path, text, message):
    """Refused as soon as the limit is passed, not after reading the whole file."""
    from faircert.limits import LimitError

    path = tmp_path / "d.yaml"
    path.write_text(text())
    errors = []

    def load():
        with pytest.raises(LimitError, match=message) as err:
            Domain.load(path)
        errors.append(str(err.value))

    assert _cpu_seconds(load) < CPU_SECONDS / 2
    assert "\n" not in errors[0]


def test_yaml_domains_of_too_many_values_are_refused_with_a_pointer_to_json(tmp_path, monkeypatch):
    import faircert.domain
    from faircert.limits import LimitError

    monkeypatch.setattr(faircert.domain, "MAX_YAML_VALUES", 1_000)
    path = tmp_path / "d.yaml"
    path.write_text("notes: [" + "0, " * 1_000 + "]\nfeatures: [{name: a, kind: binary}]\n")
    with pytest.raises(LimitError, match=r"more than 1,000 values .* write a domain this large as JSON"):
        Domain.load(path)
    path.write_text("notes: [" + "0, " * 900 + "]\nfeatures: [{name: a, kind: binary}]\n")
    assert Domain.load(path).names == ["a"]


def test_without_libyaml_small_yaml_domains_read_the_same_and_large_ones_are_refused(tmp_path, monkeypatch):
    from faircert.limits import LimitError

    yaml = pytest.importorskip("yaml")
    path = tmp_path / "d.yaml"
    path.write_text(YAML)
    with_libyaml = Domain.load(path)
    monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    assert Domain.load(path) == with_libyaml
    path.write_text("features:\n" + "".join(f"  - {{name: f{i}, kind: binary}}\n" for i in range(40_000)))
    with pytest.raises(LimitError, match=r"more than faircert reads without libyaml .* write the domain as JSON"):
        Domain.load(path)


def test_yaml_written_for_any_names_reads_back_as_the_same_domain(tmp_path):
    names = [
        "a: b",
        "yes",
        "null",
        "1.5",
        "",
        " x",
        "#c",
        "- y",
        "'q'",
        '"d"',
        "back\\slash",
        "tab\tnew\nline",
        "\u00e9t\u00e9",
        "\U0001f600",
        "\x85\u2028\ufeff\x7f",
        "=SUM(A1)",
        "[x]",
        "{y}",
        "&a",
        "*a",
        "!t",
    ]
    features = [Feature(n, "integer", -3, 3, protected=k == 0) for k, n in enumerate(names)]
    features += [
        Feature("r", "real", -1e-300, 1e15),
        Feature("big", "integer", -(2**53), 2**53),
        Feature("c", "categorical", 0, len(names) - 1, categories=tuple(names)),
    ]
    domain = Domain(tuple(features), match="position")
    domain.save(tmp_path / "d.yaml")
    assert Domain.load(tmp_path / "d.yaml") == domain
    import yaml

    assert yaml.safe_load(domain.to_yaml()) == domain.to_dict()  # plain YAML, as any reader reads it


def test_domain_infer_of_a_wide_csv_takes_seconds(tmp_path, capsys):
    from faircert.cli import main

    rng = np.random.default_rng(0)
    table = rng.integers(0, 5, size=(20, 20_000))
    path = tmp_path / "wide.csv"
    path.write_text(
        ",".join(f"c{i}" for i in range(table.shape[1]))
        + "\n"
        + "".join(",".join(map(str, row)) + "\n" for row in table)
    )
    assert _cpu_seconds(lambda: main(["domain", "infer", str(path)])) < CPU_SECONDS / 2
    out = capsys.readouterr().out
    (tmp_path / "d.yaml").write_text(out)
    assert Domain.load(tmp_path / "d.yaml") == infer_domain(path)
