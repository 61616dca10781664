"""PyTorch `nn.Sequential` networks -> ReluNetwork (torch is an optional extra, imported lazily).

Modules are read structurally (Linear, ReLU, LeakyReLU, PReLU, ReLU6, Hardtanh, Tanh, Sigmoid,
GELU, SiLU, ELU, Identity, Flatten, Dropout, BatchNorm1d, a final Sigmoid or Softmax; nested
Sequentials) and the result is checked against the module's own outputs.
Files: a TorchScript archive or a pickled module runs code from the file when loaded, so both need
`trust_pickle`; a bare state dict has no architecture and is refused with the way forward.
"""

from __future__ import annotations

import pickle
import pickletools
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ModelFormatError
from ...limits import MAX_FILE_BYTES, check_at_most
from ..activations import parse
from ..network import ReluNetwork
from .affine_chain import Op, affine, build_network, check_import, clip, diagonal, leaky, smooth, unsupported

IDENTITY_MODULES = {"Identity", "Dropout", "AlphaDropout", "Flatten"}
HOW = (
    "load it in Python and pass the nn.Sequential to faircert.verify(...), or export it to ONNX "
    "(torch.onnx.export) and give faircert the .onnx file"
)


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise ModelFormatError("PyTorch models need torch: pip install 'faircert[torch]'") from None
    return torch


def load_torch_module(module: Any, check_inputs: np.ndarray | None = None, source: str = "") -> ReluNetwork:
    """Translate an nn.Sequential (or a scripted one) and check it against the module's outputs."""
    torch = _torch()
    source = source or f"PyTorch {_class_name(module)}"
    try:
        ops = _module_ops(module, "model", source)
    except AttributeError as exc:
        raise ModelFormatError(f"{source}: cannot read the module's parameters ({exc})") from None
    network = build_network(ops, None, source, metadata={"format": "torch"})
    param = next(iter(module.parameters()), None)
    dtype = param.dtype if param is not None else torch.float32

    def run(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        was_training = module.training
        try:
            module.eval()  # dropout off, batch-norm running statistics on: the model as deployed
            with torch.no_grad():
                return X, module(torch.as_tensor(X, dtype=dtype)).detach().double().numpy()
        except Exception as exc:
            raise ModelFormatError(f"{source}: the module fails on {network.n_inputs}-wide inputs ({exc})") from None
        finally:
            module.train(was_training)

    check_import(network, check_inputs, "PyTorch", run)
    return network


def load_torch_file(path: str | Path, trust_pickle: bool = False) -> ReluNetwork:
    """A `.pt`/`.pth` file: TorchScript or a pickled module (with trust_pickle); state dicts are refused."""
    torch = _torch()
    path = Path(path)
    if _is_torchscript(path):
        if not trust_pickle:
            raise ModelFormatError(
                f"{path}: TorchScript archives run code from the file when loaded; pass "
                "--trust-pickle (trust_pickle=True) if you trust it, or export the model to ONNX"
            )
        try:
            module = torch.jit.load(str(path), map_location="cpu")
        except Exception as exc:
            raise ModelFormatError(f"{path}: not a loadable TorchScript archive ({exc})") from None
        return load_torch_module(module, source=str(path))
    if not trust_pickle:  # nothing readable without trust: say what the file is without loading it
        raise _untrusted_refusal(path)
    try:
        obj = torch.load(str(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        if "unsupported global" not in str(exc).lower():  # torch's wording for "pickled Python objects inside"
            raise ModelFormatError(
                f"{path}: not a readable PyTorch file (neither a torch.save file nor a TorchScript archive)"
            ) from None
        if not trust_pickle:
            raise ModelFormatError(
                f"{path}: the file is a pickled Python object (a whole module), and unpickling "
                "can run arbitrary code; pass --trust-pickle (trust_pickle=True) if you trust "
                "the file, or export the model to ONNX"
            ) from None
        try:
            obj = torch.load(str(path), map_location="cpu", weights_only=False)
        except Exception as exc:
            raise ModelFormatError(f"{path}: cannot unpickle the module ({_first_line(exc)})") from None
    except Exception as exc:
        raise ModelFormatError(f"{path}: not a readable PyTorch file ({_first_line(exc)})") from None
    if isinstance(obj, torch.nn.Module):
        return load_torch_module(obj, source=str(path))
    if isinstance(obj, dict):
        raise ModelFormatError(f"{path}: a state dict holds weights but not the architecture; {HOW}")
    raise ModelFormatError(f"{path}: holds a {type(obj).__name__}, not a torch module; {HOW}")


def _module_ops(module: Any, where: str, source: str) -> list[Op]:
    name = _class_name(module)
    at = f"{source}: module {where} ({name})"
    if name == "Sequential":
        ops: list[Op] = []
        for child_name, child in module.named_children():
            ops += _module_ops(child, child_name if where == "model" else f"{where}.{child_name}", source)
        return ops
    if name == "Linear":
        bias = module.bias.detach().double().numpy() if module.bias is not None else None
        return [affine(module.weight.detach().double().numpy(), bias, at)]
    if name == "ReLU":
        return [Op("relu", at)]
    if name == "Sigmoid":
        return [Op("sigmoid", at)]
    if name == "LeakyReLU":
        return [leaky(module.negative_slope, at)]
    if name == "PReLU":  # one slope, or one per feature
        return [leaky(module.weight.detach().double().numpy(), at)]
    if name in ("ReLU6", "Hardtanh"):  # ReLU6 is a Hardtanh(0, 6)
        return [clip(float(module.min_val), float(module.max_val), at)]
    if name in ("Tanh", "SiLU", "ELU"):
        return [smooth(parse(name, float(getattr(module, "alpha", 1.0))), at)]
    if name == "GELU":
        if getattr(module, "approximate", "none") != "none":
            raise unsupported(f"GELU(approximate={module.approximate!r}) (the exact GELU is)", at)
        return [smooth(parse("gelu"), at)]
    if name == "Softmax":
        if getattr(module, "dim", None) not in (None, 1, -1):
            raise unsupported(f"a softmax over dim={module.dim}", at)
        return [Op("softmax", at)]
    if name in IDENTITY_MODULES:
        if name == "Flatten" and getattr(module, "start_dim", 1) != 1:
            raise unsupported(f"Flatten(start_dim={module.start_dim})", at)
        return []
    if name == "BatchNorm1d":
        mean, var, eps = module.running_mean, module.running_var, getattr(module, "eps", None)
        if mean is None or eps is None:
            raise unsupported("BatchNorm1d without running statistics or eps (e.g. traced)", at)
        scale = 1.0 / np.sqrt(var.detach().double().numpy() + eps)
        shift = -mean.detach().double().numpy() * scale
        if module.weight is not None:
            w, b = module.weight.detach().double().numpy(), module.bias.detach().double().numpy()
            scale, shift = scale * w, shift * w + b
        return [diagonal(scale, shift, at)]
    raise unsupported(f"module type {name}" + (" (only nn.Sequential models)" if where == "model" else ""), at)


def _class_name(module: Any) -> str:
    """The Python class name; scripted modules keep it as `original_name`."""
    return getattr(module, "original_name", None) or type(module).__name__


def _is_torchscript(path: Path) -> bool:
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as z:
        return any("/code/" in n or n.endswith("constants.pkl") for n in z.namelist())


def _first_line(exc: Exception) -> str:
    line = (str(exc).strip().splitlines() or [""])[0][:200]
    return f"{type(exc).__name__}: {line}" if line else type(exc).__name__


#: Globals a weights-only `torch.save` pickle names (tensors in dicts); any other global is code.
WEIGHT_GLOBALS = {
    "collections OrderedDict",
    "torch._utils _rebuild_tensor_v2",
    "torch._utils _rebuild_tensor",
    "torch._utils _rebuild_parameter",
}
STRING_OPS = {"SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8", "SHORT_BINSTRING", "BINSTRING", "STRING"}


def _untrusted_refusal(path: Path) -> ModelFormatError:
    """Why a file cannot be read without --trust-pickle, told from its pickle's opcodes, which are
    listed, never run (neither torch nor pickle sees the untrusted bytes)."""
    names = _pickled_globals(path)
    if names is None:
        return ModelFormatError(
            f"{path}: not a readable PyTorch file (not the zip archive torch.save writes; an "
            "older pickle-format file can only be read with --trust-pickle)"
        )
    if all(n in WEIGHT_GLOBALS or (n.startswith("torch ") and n.endswith("Storage")) for n in names):
        return ModelFormatError(f"{path}: a state dict holds weights but not the architecture; {HOW}")
    return ModelFormatError(
        f"{path}: the file is a pickled Python object (a whole module), and unpickling can run "
        "arbitrary code; pass --trust-pickle (trust_pickle=True) if you trust the file, or export "
        "the model to ONNX"
    )


def _pickled_globals(path: Path) -> set[str] | None:
    """'module name' of every global the archive's data.pkl refers to; None if it is no such archive."""
    try:
        with zipfile.ZipFile(path) as z:
            member = next((i for i in z.infolist() if i.filename.endswith("data.pkl")), None)
            if member is None:
                return None
            check_at_most("the unpacked size of data.pkl", member.file_size, MAX_FILE_BYTES, str(path))
            data = z.read(member)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        return None
    names, strings = set(), []
    try:
        for op, arg, _ in pickletools.genops(data):
            if op.name in STRING_OPS:
                strings.append(str(arg))
            elif op.name == "GLOBAL":
                names.add(str(arg))
            elif op.name == "STACK_GLOBAL":  # module and name were pushed just before (or memoised: unknown)
                names.add(" ".join(strings[-2:]) if len(strings) >= 2 else "?")
    except Exception:  # noqa: BLE001 - pickletools raises many types on a damaged pickle
        return None
    return names
