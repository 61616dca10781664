"""Hostile files: each reader ends in a result or a one-line FaircertError (CLI exit 3), never a
traceback, a native crash, a hang, an unbounded allocation, a silent acceptance or a read of
another file."""

import json
import os
import re

import h5py
import hostile_files as hf
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from timing import wall

from faircert.cli import main
from faircert.data import infer_domain
from faircert.domain import Domain
from faircert.errors import DataError, DomainError, FaircertError, ModelFormatError
from faircert.limits import LimitError, quoted
from faircert.models.io import isolated, load_model
from faircert.models.program import ProgramError, load_program, parse_program


def _exit3(capsys, argv):
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


# ----- .nnet -----------------------------------------------------------------------------------
def _nnet_lines(tmp_path):
    return hf.nnet_file(tmp_path).read_text().splitlines()


@pytest.mark.parametrize(
    "sizes,message",
    [
        ("4,inf,1,", "not a finite number"),
        ("4,nan,1,", "not a finite number"),
        ("4,-3,1,", "a layer size must be a whole number >= 1, got -3"),
        ("4,1000000000,1,", "a layer size is 1,000,000,000, more than faircert reads"),
        ("4,0,1,", "a layer size must be a whole number >= 1, got 0"),
        ("4,2.5,1,", "a layer size must be a whole number >= 1, got 2.5"),
    ],
)
def test_nnet_header_sizes_are_validated_before_allocating(tmp_path, sizes, message):
    lines = _nnet_lines(tmp_path)
    lines[2] = sizes
    (tmp_path / "m.nnet").write_text("\n".join(lines))
    with pytest.raises((ModelFormatError, LimitError), match=re.escape(message)):
        load_model(tmp_path / "m.nnet")


def test_nnet_body_is_consumed_exactly(tmp_path):
    lines = _nnet_lines(tmp_path)
    (tmp_path / "m.nnet").write_text("\n".join(lines + ["1.0,"]))
    with pytest.raises(ModelFormatError, match="the header describes 13 .*truncated or has extra lines"):
        load_model(tmp_path / "m.nnet")
    (tmp_path / "m.nnet").write_text("\n".join(lines[:-1]))
    with pytest.raises(ModelFormatError, match="truncated or has extra lines"):
        load_model(tmp_path / "m.nnet")
    short = list(lines)
    short[10] = short[10].rsplit(",", 2)[0] + ","  # a weight row one value short
    (tmp_path / "m.nnet").write_text("\n".join(short))
    with pytest.raises(ModelFormatError, match="m.nnet:11: layer 0 row 2 has 3 values, expected 4"):
        load_model(tmp_path / "m.nnet")


def test_nnet_huge_layer_is_one_line_exit_3(tmp_path, capsys):
    lines = _nnet_lines(tmp_path)
    lines[1], lines[2] = "3,4,1,1000000,", "4,1000000,1000,1,"
    (tmp_path / "m.nnet").write_text("\n".join(lines))
    err = _exit3(capsys, ["verify", str(tmp_path / "m.nnet"), "--protected", "x0"])
    assert "the number of weights is 1,004,001,000, more than faircert reads" in err


# ----- domains ---------------------------------------------------------------------------------
def test_yaml_aliases_are_refused_without_expanding(tmp_path):
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")
    )
    path = hf.text_file(tmp_path, "d.yaml", laughs + "features: *i\n")
    with pytest.raises(DomainError, match=r"d.yaml:2: YAML aliases \(\*name\) are not allowed"):
        Domain.load(path)


@pytest.mark.parametrize(
    "entry,message",
    [
        ("{name: s, kind: binary, protected: 'false'}", "'protected' must be true or false (unquoted), got 'false'"),
        (
            "{name: s, kind: integer, min: 0, max: " + "9" * 400 + "}",
            "max must be a finite number of magnitude at most",
        ),
        ("{name: s, kind: real, min: 0, max: 1.0e+400}", "max must be a finite number"),
        ("{name: [1, 2], kind: binary}", "'name' must be text"),
        ("{name: " + "n" * 5000 + ", kind: wrong, min: 0, max: 1}", "unknown kind 'wrong'"),
    ],
)
def test_domain_values_are_checked_for_type(tmp_path, entry, message):
    path = hf.text_file(tmp_path, "d.yaml", f"features:\n  - {entry}\n")
    with pytest.raises(DomainError, match=re.escape(message)) as err:
        Domain.load(path)
    assert len(str(err.value)) < 400  # a 5,000-character name is quoted cut short


def test_json_domain_with_huge_integer_or_deep_nesting(tmp_path):
    path = hf.text_file(
        tmp_path, "d.json", '{"features": [{"name": "a", "kind": "integer", "min": 0, "max": ' + "9" * 400 + "}]}"
    )
    with pytest.raises(DomainError, match="an integer with 400 digits"):
        Domain.load(path)
    path.write_text('{"features": ' + "[" * 20000 + "]" * 20000 + "}")
    with pytest.raises(LimitError, match="JSON nested more than 100 levels deep"):
        Domain.load(path)


def test_quoted_never_formats_more_than_it_shows():
    assert quoted("x" * 10**7) == "'" + "x" * 76 + "..."
    assert quoted(10**400) == "<an integer of 1329 bits>"
    assert (quoted(np.float64(1e308)), quoted(np.int64(5)), quoted(np.bool_(True))) == ("1e+308", "5", "True")
    assert quoted([[1] * 10**6]) == "<list>"


# ----- programs --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "expression", ["+".join(["x"] * 1500), "-" * 5000 + "x", "not " * 3000 + "x", "(" * 1000 + "x" + ")" * 1000]
)
def test_deep_program_expressions_are_one_line_errors(expression):
    with pytest.raises(ProgramError, match="nested|too many nested parentheses") as err:
        parse_program(f"x = 1\ny = {expression}\n")
    assert "\n" not in str(err.value)


def test_huge_program_literal(tmp_path, capsys):
    with pytest.raises(ProgramError, match=r"<program>:1:5: the number <an integer of 1329 bits> is too large"):
        parse_program("x = " + "9" * 400)
    path = hf.text_file(tmp_path, "p.fr", hf.PROGRAM.replace("0.0006", "9" * 400))
    with pytest.raises(ProgramError, match="is too large"):
        load_program(path)


# ----- CSV data --------------------------------------------------------------------------------
def test_csv_with_huge_or_infinite_numbers(tmp_path):
    path = hf.text_file(tmp_path, "d.csv", hf.CSV.replace("40,", "9" * 400 + ","))
    with pytest.raises(DataError, match="column 'age' holds a number with more digits than faircert reads"):
        infer_domain(path, label="label")
    path.write_text(hf.CSV.replace("0.25", "1e400"))
    with pytest.raises(DataError, match=r"column 'income' holds a number too large \(inf\)"):
        infer_domain(path, label="label")


# ----- XGBoost / LightGBM ----------------------------------------------------------------------
def _xgb_doc(path):
    return json.loads(path.read_text())


def test_xgboost_tree_info_naming_another_class_is_refused(tmp_path):
    pytest.importorskip("xgboost")
    path = hf.xgboost_file(tmp_path)
    doc = _xgb_doc(path)
    doc["learner"]["gradient_booster"]["model"]["tree_info"][1] = 5
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match="tree_info must give class 0 for each of the 3 trees"):
        load_model(path)


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("left_children", ["x", 1], "tree 0 left_children must be a list of numbers"),
        ("split_conditions", {"a": 1}, "tree 0 split_conditions must be a list, got <dict>"),
        ("split_indices", [10**30], "not valid JSON: an integer with 31 digits"),
        ("split_indices", [2**40], "tree 0 split_indices holds an integer outside 0..2147483647"),
        ("right_children", [7, 7, -1], "tree 0: its node arrays differ in length"),
    ],
)
def test_xgboost_wrong_types_in_tree_arrays(tmp_path, field, value, message):
    pytest.importorskip("xgboost")
    path = hf.xgboost_file(tmp_path)
    doc = _xgb_doc(path)
    doc["learner"]["gradient_booster"]["model"]["trees"][0][field] = value
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match=re.escape(message)):
        load_model(path)


def test_xgboost_json_nested_deep(tmp_path, capsys):
    path = hf.text_file(tmp_path, "m.json", '{"learner": ' + "[" * 20000 + "]" * 20000 + "}")
    err = _exit3(capsys, ["verify", str(path), "--protected", "x0"])
    assert "JSON nested more than 100 levels deep" in err


def test_truncated_ubj_is_parsed_by_faircert_not_xgboost(tmp_path):
    pytest.importorskip("xgboost")
    data = hf.xgboost_file(tmp_path, ".ubj").read_bytes()
    for size in (1, 100, len(data) // 2, len(data) - 1):
        (tmp_path / "t.ubj").write_bytes(data[:size])
        with pytest.raises(
            ModelFormatError,
            match=r"not a readable XGBoost model \(UBJSON, at byte \d+: the file "
            r"ends early",
        ):
            load_model(tmp_path / "t.ubj")


def test_ubj_container_claiming_more_elements_than_bytes(tmp_path):
    from faircert.models.io.ubjson import loads_ubjson

    with pytest.raises(ModelFormatError, match="a container of 1152921504606846976 elements in 0 remaining bytes"):
        loads_ubjson(b"[#L" + (2**60).to_bytes(8, "big"), "x")
    with pytest.raises(ModelFormatError, match="elements of no size"):
        loads_ubjson(b"[$Z#L" + (2**60).to_bytes(8, "big"), "x")
    assert loads_ubjson(b"{i\x01a[$d#i\x02" + np.array([1.5, -2], ">f4").tobytes() + b"}", "x")["a"].tolist() == [
        1.5,
        -2,
    ]


@pytest.mark.parametrize(
    "edit,message",
    [
        (
            lambda t: re.sub(r"leaf_value=\S+", "leaf_value=nan", t, count=1),
            "tree 0 leaf_value holds a value that is not a finite number",
        ),
        (lambda t: t[: t.index("Tree=1") + 40] + "\nend of trees\n", "incomplete: 2 of 3 trees"),
        (lambda t: t[: t.index("Tree=1") + 40] + "\nTree=2\nend of trees\n", "tree 1 has no leaf_value"),
        (lambda t: t[: len(t) // 2], "incomplete (truncated?): no 'end of parameters' line"),
        (lambda t: t[: t.index("Tree=2")], "incomplete (truncated?): no 'end of trees' line"),
        (lambda t: t.replace("num_leaves=4", "num_leaves=40", 1), "tree 0: leaf_value has 4 values, expected 40"),
        (lambda t: t.replace("num_leaves=4", "num_leaves=400000000", 1), "tree 0 num_leaves must lie in 1..10000000"),
        (lambda t: re.sub(r"left_child=\S+", "left_child=99", t, count=1), "left_child holds an integer outside"),
    ],
)
def test_lightgbm_text_is_validated_before_lightgbm_sees_it(tmp_path, edit, message):
    pytest.importorskip("lightgbm")
    path = hf.lightgbm_file(tmp_path)
    path.write_text(edit(path.read_text()))
    with pytest.raises(ModelFormatError, match=re.escape(message)):
        load_model(path)


def test_framework_crash_in_the_child_is_a_clean_error(tmp_path, monkeypatch):
    crash = hf.text_file(tmp_path, "crash.py", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    monkeypatch.setattr(isolated, "CHILD", crash)
    with pytest.raises(ModelFormatError, match=r"m.json: the XGBoost library crashed reading this file \(SIGSEGV\)"):
        isolated.framework_outputs("xgboost", tmp_path / "m.json", np.zeros((2, 3)))
    failing = hf.text_file(
        tmp_path, "fail.py", "import sys\nprint('faircert-child: bad magic', file=sys.stderr)\nsys.exit(3)\n"
    )
    monkeypatch.setattr(isolated, "CHILD", failing)
    with pytest.raises(ModelFormatError, match="LightGBM cannot read this file: bad magic"):
        isolated.framework_outputs("lightgbm", tmp_path / "m.txt", np.zeros((2, 3)))


def test_lightgbm_text_read_by_faircert_scores_as_lightgbm(tmp_path):
    lgb = pytest.importorskip("lightgbm")
    X = np.random.default_rng(0).uniform(-1, 7, size=(500, 4))
    ir = load_model(hf.lightgbm_file(tmp_path))
    raw = lgb.Booster(model_file=str(tmp_path / "m.txt")).predict(X, raw_score=True)
    assert np.allclose(ir.score(X), raw, rtol=0, atol=1e-12)


# ----- ONNX ------------------------------------------------------------------------------------
def _onnx(tmp_path, edit):
    proto = onnx.load(str(hf.onnx_file(tmp_path)))
    edit(proto)
    onnx.save(proto, str(tmp_path / "m.onnx"))
    return tmp_path / "m.onnx"


def _set_input_dims(proto, dims):
    shape = proto.graph.input[0].type.tensor_type.shape
    for d, v in zip(shape.dim, dims):
        d.ClearField("dim_param")
        d.dim_value = v


def test_onnx_fixed_batch_of_ten_million_is_refused_not_allocated(tmp_path):
    path = _onnx(tmp_path, lambda p: _set_input_dims(p, [10**7, 4]))
    with pytest.raises(ModelFormatError, match="declares a fixed batch size of 10,000,000"):
        load_model(path)


def test_onnx_negative_dims_are_refused(tmp_path):
    path = _onnx(tmp_path, lambda p: _set_input_dims(p, [1, -1]))
    with pytest.raises(ModelFormatError, match=r"negative dimension in its shape \[1, -1\]"):
        load_model(path)


def test_onnx_initializer_dims_must_match_data(tmp_path):
    def edit(proto):
        proto.graph.initializer[0].dims[0] = 1000

    with pytest.raises(ModelFormatError, match=r"initializer 'W0': dims \[1000, 4\] need 32000 stored"):
        load_model(_onnx(tmp_path, edit))


def _external(proto, location):
    t = proto.graph.initializer[0]
    t.ClearField("raw_data")
    t.ClearField("double_data")
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value=location)


def test_onnx_external_data_only_beside_the_model(tmp_path):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.arange(12, dtype=np.float64).tobytes())
    inner = tmp_path / "model"
    inner.mkdir()
    for location in ("../secret.bin", str(secret), "sub/../../secret.bin"):
        proto = onnx.load(str(hf.onnx_file(inner)))
        _external(proto, location)
        onnx.save(proto, str(inner / "m.onnx"))
        with pytest.raises(ModelFormatError, match="is not a file name beside the model"):
            load_model(inner / "m.onnx")
    os.symlink(secret, inner / "link.bin")
    proto = onnx.load(str(hf.onnx_file(inner)))
    _external(proto, "link.bin")
    onnx.save(proto, str(inner / "m.onnx"))
    with pytest.raises(ModelFormatError, match="symbolic links are refused"):
        load_model(inner / "m.onnx")
    # beside the model it is read, by faircert
    (inner / "w.bin").write_bytes(hf.W1.astype(np.float64).tobytes())
    proto = onnx.load(str(hf.onnx_file(inner)))
    _external(proto, "w.bin")
    onnx.save(proto, str(inner / "m.onnx"))
    assert np.allclose(load_model(inner / "m.onnx").weights[0], hf.W1)
    # as onnx itself writes it: every tensor in one file, at offsets
    onnx.save(
        onnx.load(str(hf.onnx_file(inner))),
        str(inner / "e.onnx"),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="e.data",
        size_threshold=0,
    )
    network = load_model(inner / "e.onnx")
    assert np.allclose(network.weights[0], hf.W1) and np.allclose(network.weights[1], hf.W2)


def test_onnx_constant_expression_too_large_is_not_evaluated(tmp_path):
    def edit(proto):
        shape = numpy_helper.from_array(np.array([10**6, 10**6], dtype=np.int64), "shape")
        proto.graph.initializer.append(shape)
        proto.graph.node.insert(0, helper.make_node("ConstantOfShape", ["shape"], ["big"]))
        proto.graph.node.insert(1, helper.make_node("Add", ["input", "big"], ["unused"]))
        proto.graph.node[2].input[0] = "input"

    proto = onnx.load(str(hf.onnx_file(tmp_path)))
    edit(proto)
    # the unused branch is never run; used, the constant is refused before it is made
    onnx.save(proto, str(tmp_path / "m.onnx"))
    assert load_model(tmp_path / "m.onnx").n_inputs == 4
    proto.graph.node[2].input[0] = "unused"
    onnx.save(proto, str(tmp_path / "m.onnx"))
    with pytest.raises(ModelFormatError, match="would make more than 100,000,000 values"):
        load_model(tmp_path / "m.onnx")


# ----- Keras / HDF5 ----------------------------------------------------------------------------
def test_keras_dense_with_use_bias_but_no_bias_is_refused(tmp_path):
    path = hf.keras_file(tmp_path, weights={"d1": {"kernel": hf.W1.T}, "d2": {"kernel": hf.W2.T, "bias": hf.B2}})
    with pytest.raises(
        ModelFormatError,
        match=r"layer 'd1' \(Dense\): the layer uses a bias \(use_bias\) but the "
        "file stores none",
    ):
        load_model(path)


def test_keras_external_links_and_external_storage_are_refused(tmp_path):
    secret = tmp_path / "other.h5"
    with h5py.File(secret, "w") as f:
        f["k"] = hf.W1.T.astype(np.float32)
    path = hf.keras_file(tmp_path)
    with h5py.File(path, "a") as f:
        del f["model_weights/d1/d1/kernel:0"]
        f["model_weights/d1/d1/kernel:0"] = h5py.ExternalLink(str(secret), "/k")
    with pytest.raises(
        ModelFormatError,
        match=r"m.h5: not a readable HDF5/Keras file: /model_weights/d1/d1/kernel:0 is a link to another file",
    ):
        load_model(path)
    raw = tmp_path / "weights.raw"
    raw.write_bytes(hf.W1.T.astype(np.float32).tobytes())
    path = hf.keras_file(tmp_path)
    with h5py.File(path, "a") as f:
        del f["model_weights/d1/d1/kernel:0"]
        f.create_dataset("model_weights/d1/d1/kernel:0", shape=(4, 3), dtype="f4", external=[(str(raw), 0, 48)])
    with pytest.raises(
        ModelFormatError, match=r"kernel:0: the data is stored in other files \(HDF5 external or virtual storage\)"
    ):
        load_model(path)


def test_hdf5_looping_forever_on_a_damaged_file_is_stopped(tmp_path, monkeypatch):
    """A model_config attribute made longer in place: HDF5 misreads what follows and never returns."""
    from faircert.models.io.keras import hdf5_tree

    data = hf.keras_file(tmp_path).read_bytes()
    (tmp_path / "loop.h5").write_bytes(data.replace(b'"units": 1,', b'"units": 2147483648,', 1))
    monkeypatch.setattr(hdf5_tree, "HDF5_SECONDS", 2)
    with pytest.raises(
        ModelFormatError,
        match=r"loop.h5: HDF5 did not read this file within 2.0 s \(the time limit "
        r"left, or faircert.limits' cap\); the file is malformed",
    ):
        load_model(tmp_path / "loop.h5")


def test_corrupted_hdf5_is_one_line_exit_3(tmp_path, capsys):
    data = bytearray(hf.keras_file(tmp_path).read_bytes())
    for start in range(600, len(data), 97):
        data[start : start + 8] = b"\xff" * 8
    (tmp_path / "c.h5").write_bytes(bytes(data))
    try:
        load_model(tmp_path / "c.h5")
    except FaircertError:
        pass
    assert main(["verify", str(tmp_path / "c.h5"), "--protected", "x0"]) in (0, 1, 2, 3)
    assert "Traceback" not in capsys.readouterr().err


# ----- counterexample CSV ----------------------------------------------------------------------
def test_counterexample_csv_neutralises_formulas(tmp_path):
    from faircert.report.csv import spreadsheet_safe
    from faircert.report.verify import write_counterexamples
    from faircert.results import Counterexample, Result

    assert [spreadsheet_safe(s) for s in ("=cmd|' /C calc'!A0", "+1", "-x", "@SUM(A1)", "\tx", "\rx", "age")] == [
        "'=cmd|' /C calc'!A0",
        "'+1",
        "'-x",
        "'@SUM(A1)",
        "'\tx",
        "'\rx",
        "age",
    ]
    result = Result.__new__(Result)
    result.column_names = lambda: ["=cmd|'/C calc'!A0", "age"]  # type: ignore[method-assign]
    result.counterexamples = [
        Counterexample(x=np.array([1.0, -3.0]), x_prime=np.array([0.0, -3.0]), output=1, output_prime=0)
    ]
    write_counterexamples(result, tmp_path / "c.csv")
    lines = (tmp_path / "c.csv").read_text().splitlines()
    assert lines[0].startswith("'=cmd|'/C calc'!A0,age,'=cmd")
    assert lines[1] == "1,-3,0,-3,1,0"  # numbers stay numbers, negative ones too


# ----- properties ------------------------------------------------------------------------------
def test_epsilon_on_a_single_valued_feature(shared_benchmarks, tmp_path, capsys):
    net = shared_benchmarks / "models" / "adult" / "AC-1.nnet"
    model = load_model(net)
    features = [
        {"name": f"x{i}", "kind": "integer", "min": int(lo), "max": int(hi)}
        for i, (lo, hi) in enumerate(zip(model.input_lower, model.input_upper))
    ]
    features[0].update(min=100, max=100)
    path = hf.text_file(tmp_path, "d.json", json.dumps({"features": features}))
    code = main(
        ["verify", str(net), "--domain", str(path), "--protected", "x8", "--epsilon", "x0=5", "--time-limit", "1"]
    )
    assert code in (0, 1, 2)
    assert "Traceback" not in capsys.readouterr().err


# ----- PyTorch ---------------------------------------------------------------------------------
def test_torch_files_without_trust_are_never_given_to_torch(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
    torch.save(model.state_dict(), tmp_path / "sd.pt")
    torch.save(model, tmp_path / "full.pt")
    (tmp_path / "cut.pt").write_bytes((tmp_path / "full.pt").read_bytes()[:300])

    def refuse(*args, **kwargs):
        raise AssertionError("torch.load on an untrusted file")

    monkeypatch.setattr(torch, "load", refuse)
    with pytest.raises(ModelFormatError, match="sd.pt: a state dict holds weights but not the architecture"):
        load_model(tmp_path / "sd.pt")
    with pytest.raises(ModelFormatError, match="full.pt: the file is a pickled Python object.*--trust-pickle"):
        load_model(tmp_path / "full.pt")
    with pytest.raises(ModelFormatError, match="cut.pt: not a readable PyTorch file"):
        load_model(tmp_path / "cut.pt")


def test_file_size_is_checked_before_reading(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_bytes(b"#" * (16 * 2**20 + 1))
    with pytest.raises(
        LimitError,
        match=r"d.yaml: the file size in bytes is 16,777,217, more than faircert reads "
        r"\(16,777,216; see faircert.limits\)",
    ):
        Domain.load(path)


def test_a_library_child_gets_no_more_than_the_time_left_of_the_command(tmp_path):
    """A library that loops on a damaged file is stopped at the user's time limit, not a fixed 30 s."""
    import time

    from faircert.errors import ModelFormatError
    from faircert.limits import CHILD_SECONDS, child_seconds, time_budget
    from faircert.models.io.isolated import run_isolated

    script = tmp_path / "loops.py"
    script.write_text("import time\ntime.sleep(60)\n")
    t0 = time.monotonic()
    with time_budget(1.5), pytest.raises(ModelFormatError, match="did not read this file within 1.5 s"):
        run_isolated(script, [], b"", "LightGBM", "model.txt")
    assert time.monotonic() - t0 < wall(1.5)
    assert child_seconds() == CHILD_SECONDS  # outside a command: the fixed cap


def test_onnx_metadata_that_is_not_utf8_is_ignored(tmp_path):
    """protobuf hands such a string field back as bytes; the model still loads, without it."""
    path = hf.onnx_file(tmp_path)
    data = path.read_bytes()
    assert b"faircert.input_lower" in data
    path.write_bytes(data.replace(b"faircert.input_lower", b"faircert.input_l\xffwer", 1))
    net = load_model(path)
    assert net.input_lower is None and net.n_inputs == hf.network().n_inputs
