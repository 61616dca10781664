"""PyTorch importer: nn.Sequential objects, safe file loading, bad input."""

import numpy as np
import pytest

from faircert.errors import ModelFormatError
from faircert.models.io import load_model
from faircert.models.io.torch import load_torch_file, load_torch_module

torch = pytest.importorskip("torch")
nn = torch.nn
X = np.random.default_rng(5).normal(size=(60, 5)) * 3


def outputs(module):
    module.eval()
    with torch.no_grad():
        return module(torch.as_tensor(X, dtype=torch.float32)).double().numpy()


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def test_nested_sequential_with_batchnorm_dropout_softmax():
    torch.manual_seed(0)
    bn = nn.BatchNorm1d(8)
    bn.running_mean.normal_(), bn.running_var.uniform_(0.5, 2), bn.weight.data.uniform_(0.5, 2)
    model = nn.Sequential(
        nn.Flatten(),
        nn.Linear(5, 8),
        bn,
        nn.ReLU(),
        nn.Sequential(nn.Dropout(0.3), nn.Linear(8, 4), nn.ReLU(inplace=True), nn.Identity()),
        nn.Linear(4, 2),
        nn.Softmax(dim=1),
    )
    model.train()
    net = load_model(model)
    assert model.training  # the caller's mode is left as it was
    assert net.output_semantics == "softmax2" and net.layer_sizes == [5, 8, 4, 1]
    assert np.allclose(sigmoid(net.logit(X)), outputs(model)[:, 1], atol=1e-5)


@pytest.mark.parametrize("final", [None, "sigmoid", "two"])
def test_output_forms(final):
    torch.manual_seed(1)
    layers = [nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 2 if final == "two" else 1)]
    if final == "sigmoid":
        layers.append(nn.Sigmoid())
    model = nn.Sequential(*layers)
    net = load_torch_module(model)
    out = outputs(model)
    if final == "two":  # raw two-class scores: argmax
        assert net.output_semantics == "argmax2"
        assert np.allclose(net.logit(X), out[:, 1] - out[:, 0], atol=1e-5)
    else:
        assert net.output_semantics == ("sigmoid" if final else "logit")
        assert np.array_equal(net.predict(X), (out[:, 0] > (0.5 if final else 0)).astype(int))


def test_float64_module_and_bias_free_linear():
    model = nn.Sequential(nn.Linear(5, 3, bias=False), nn.ReLU(), nn.Linear(3, 1)).double()
    net = load_torch_module(model)
    with torch.no_grad():
        ref = model(torch.as_tensor(X)).numpy()[:, 0]
    assert np.allclose(net.logit(X), ref, rtol=1e-12, atol=1e-12)


def test_unsupported_modules_are_named():
    with pytest.raises(ModelFormatError, match=r"module 1 \(Softplus\): module type Softplus is not supported"):
        load_model(nn.Sequential(nn.Linear(5, 3), nn.Softplus(), nn.Linear(3, 1)))
    with pytest.raises(ModelFormatError, match=r"module 2.0 \(Softsign\)"):
        load_model(nn.Sequential(nn.Linear(5, 3), nn.ReLU(), nn.Sequential(nn.Softsign()), nn.Linear(3, 1)))
    with pytest.raises(ModelFormatError, match=r"module 2 \(Softmax\): softmax over 3 classes"):
        load_model(nn.Sequential(nn.Linear(5, 3), nn.ReLU(), nn.Softmax(dim=1)))

    class Net(nn.Module):
        def forward(self, x):
            return x

    with pytest.raises(ModelFormatError, match=r"module type Net \(only nn.Sequential models\)"):
        load_torch_module(Net())


def test_width_mismatch():
    with pytest.raises(ModelFormatError, match=r"module 2 \(Linear\) takes 4 inputs but receives 3"):
        load_model(nn.Sequential(nn.Linear(5, 3), nn.ReLU(), nn.Linear(4, 1)))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_files_need_trust_for_code_and_refuse_state_dicts(tmp_path):
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 1), nn.Sigmoid())
    expected = (outputs(model)[:, 0] > 0.5).astype(int)
    torch.save(model.state_dict(), tmp_path / "sd.pt")
    torch.save(model, tmp_path / "full.pt")
    torch.jit.script(model).save(str(tmp_path / "script.pt"))
    (tmp_path / "junk.pth").write_bytes(b"not a torch file" * 20)

    with pytest.raises(ModelFormatError, match="state dict holds weights but not the architecture.*ONNX"):
        load_model(tmp_path / "sd.pt", trust_pickle=True)
    for name in ("full.pt", "script.pt"):
        with pytest.raises(ModelFormatError, match="--trust-pickle"):
            load_model(tmp_path / name)
        net = load_model(tmp_path / name, trust_pickle=True)
        assert np.array_equal(net.predict(X), expected)
    with pytest.raises(ModelFormatError, match="junk.pth: not a readable PyTorch file"):
        load_torch_file(tmp_path / "junk.pth", trust_pickle=True)
    (tmp_path / "cut.pt").write_bytes((tmp_path / "full.pt").read_bytes()[:400])
    with pytest.raises(ModelFormatError, match="cut.pt: not a readable PyTorch file"):
        load_model(tmp_path / "cut.pt")
