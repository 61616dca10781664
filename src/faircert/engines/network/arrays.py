"""Where the bounding kernels run: numpy (the default), or PyTorch on the CPU or a CUDA device.

The kernels (the bounds in `symbolic`; the rest of a refinement's step in `settle`, `cuts` and
`tail`: halving, masses, verdicts, split features, cuts, probes and credits; the open boxes kept in
`resident`) are written once against numpy's names. `namespace(x)` gives them the module to call
for an array: numpy itself for a numpy array (so the numpy path is numpy's own code, unchanged), or
`TorchOps`, which offers the same names, with the same meaning, over torch tensors. The credits'
exp and log are torch's on its path (within an ulp of numpy's), far inside the slack
`tail.LOG_SLACK` leaves. Only the names the kernels use are here; each keeps numpy's semantics (`out=` writes in place,
`where=` leaves the other entries of `out` as they were).

Every array on the torch path is float64 (or bool/int64 masks and indices), as on numpy's: the
bounds are numpy's up to the order in which a matrix product adds its terms (1e-12 relative), and
the tolerance that keeps decisions clear of rounding (`problem.REL_TOL`, 1e-9 relative) covers
both. A smooth unit's lines (`curves`, computed on the host from the device's pre-activation
bounds) can move within their bisection's resolution where such a rounding flips a step; they are
sound either way. Counterexamples are still re-checked on the model in float64 on the CPU. torch
is optional (the `torch` extra): asking for it without it installed, or for "cuda" without a CUDA
device, is a `BackendError`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import FaircertError
from ...options import DEVICES


class BackendError(FaircertError):
    """The device asked for cannot be used here (torch missing, or no CUDA device)."""


def namespace(x: Any) -> Any:
    """numpy for a numpy array (or anything not a torch tensor), `TorchOps` for a torch tensor."""
    if isinstance(x, np.ndarray) or type(x).__module__.split(".")[0] != "torch":
        return np
    return TorchOps


class Backend:
    """Numpy (device None) or torch on `device`; moves arrays there and back."""

    def __init__(self, device: str | None = None) -> None:
        self.device = device
        if device is None:
            return
        if device not in DEVICES:
            raise BackendError(f"device must be one of {', '.join(DEVICES)}, not {device!r}")
        try:
            import torch
        except ImportError:
            raise BackendError(f"device {device!r} needs torch: pip install 'faircert[torch]'") from None
        if device == "cuda":
            if not torch.cuda.is_available():
                raise BackendError("device 'cuda': torch sees no CUDA device here")
            torch.cuda.reset_peak_memory_stats()  # `memory_used` counts this run's peak, not an earlier one's
        self.torch = torch

    @property
    def numpy(self) -> bool:
        return self.device is None

    def put(self, x: np.ndarray) -> Any:
        """x on the device (floats as float64; on the CPU it may share x's memory: the kernels never
        write into their inputs)."""
        if self.device is None or namespace(x) is not np:  # numpy's, or already the device's
            return x
        x = np.asarray(x)
        if x.dtype.kind == "f":
            x = x.astype(np.float64, copy=False)
        return self.torch.as_tensor(x, device=self.device)

    def capacity(self) -> int:
        """Bytes of memory on a CUDA device (0 elsewhere)."""
        if self.device != "cuda":
            return 0
        return int(self.torch.cuda.get_device_properties(0).total_memory)

    def memory_used(self) -> int:
        """Peak bytes allocated on a CUDA device since this backend was made (what the device's
        arrays and a step's temporaries took: at least `torch.cuda.memory_allocated()`); 0
        elsewhere: on the CPU torch's arrays are the process's, and the memory limit counts the
        run's state (the open boxes and findings, numpy on the host) as on numpy."""
        if self.device != "cuda":
            return 0
        return int(self.torch.cuda.max_memory_allocated())

    def out_of_memory(self, exc: BaseException) -> bool:
        """Whether `exc` is the device running out of memory (torch's error on a CUDA device)."""
        oom = None if self.device is None else getattr(self.torch.cuda, "OutOfMemoryError", None)
        return oom is not None and isinstance(exc, oom)

    def __getstate__(self) -> dict[str, Any]:
        return {"device": self.device}  # the module is imported again where it is unpickled

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["device"])  # type: ignore[misc]


def to_numpy(x: Any) -> np.ndarray:
    """An array (numpy or torch, any device) as a numpy array."""
    if isinstance(x, np.ndarray):
        return x
    return x.detach().cpu().numpy()


def _torch_function(name: str) -> Any:
    """A `TorchOps` method of one tensor: torch's function `name`."""
    return classmethod(lambda cls, x: getattr(cls._t(), name)(x))


def _tensor_method(name: str) -> Any:
    """A `TorchOps` method of one tensor: the tensor's method `name`."""
    return staticmethod(lambda x: getattr(x, name)())


def _binary_ufunc(name: str) -> Any:
    """A `TorchOps` method: numpy's binary ufunc `name` (with `out=`) over torch's function of that name."""
    return classmethod(lambda cls, a, b, out=None: cls._binary(name, a, b, out))


def _number(x: Any) -> bool:
    """A Python (or numpy) float or int, not a bool: torch takes it as it is beside a float64 tensor."""
    return isinstance(x, (float, int)) and not isinstance(x, bool)


#: numpy's binary ufuncs with a number on either side, the number passed as it is (a float64 tensor's
#: operations round the same with it): moving it to a GPU as a tensor would be a copy from the
#: host, which waits for every kernel queued before it
_WITH_NUMBER = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b,
    "maximum": lambda a, b: a.clamp(min=b) if _number(b) else b.clamp(min=a),
    "minimum": lambda a, b: a.clamp(max=b) if _number(b) else b.clamp(max=a),
}


class TorchOps:
    """numpy's names, as the kernels use them, over torch tensors."""

    @staticmethod
    def _t():
        import torch

        return torch

    @classmethod
    def _dtype(cls, dtype: Any) -> Any:
        torch = cls._t()
        if isinstance(dtype, torch.dtype):
            return dtype
        if dtype is None or dtype is float or np.dtype(dtype) == np.float64:
            return torch.float64
        if dtype is bool or np.dtype(dtype) == np.bool_:
            return torch.bool
        return {np.dtype(np.int16): torch.int16, np.dtype(np.int32): torch.int32}.get(np.dtype(dtype), torch.int64)

    @classmethod
    def _as(cls, x: Any, like: Any) -> Any:
        """x (a tensor, or a scalar) as a tensor on `like`'s device."""
        torch = cls._t()
        if isinstance(x, torch.Tensor):
            return x
        return torch.as_tensor(x, dtype=like.dtype if like.is_floating_point() else torch.float64, device=like.device)

    # ----- creation ------------------------------------------------------------------------
    zeros_like = _torch_function("zeros_like")
    ones_like = _torch_function("ones_like")
    empty_like = _torch_function("empty_like")

    @classmethod
    def empty(cls, shape: Any, dtype: Any = None, like: Any = None) -> Any:
        return cls._t().empty(shape, dtype=cls._dtype(dtype), device=like.device)

    @classmethod
    def zeros(cls, shape: Any, dtype: Any = None, like: Any = None) -> Any:
        return cls._t().zeros(shape, dtype=cls._dtype(dtype), device=like.device)

    @classmethod
    def ones(cls, shape: Any, dtype: Any = None, like: Any = None) -> Any:
        return cls._t().ones(shape, dtype=cls._dtype(dtype), device=like.device)

    @classmethod
    def arange(cls, n: int, like: Any) -> Any:
        return cls._t().arange(n, device=like.device)

    @classmethod
    def full(cls, shape: Any, value: int, like: Any) -> Any:
        """An int64 array of `value` where `like` lives."""
        torch = cls._t()
        return torch.full((shape,) if isinstance(shape, int) else shape, value, dtype=torch.int64, device=like.device)

    @classmethod
    def float_bits(cls, x: Any) -> Any:
        """The bits of float64 x as int64 (numpy's `.view(np.uint64)`, signed)."""
        return x.contiguous().view(cls._t().int64)

    @staticmethod
    def copy(x: Any) -> Any:
        return x.clone()

    @classmethod
    def astype(cls, x: Any, dtype: Any) -> Any:
        return x.to(cls._dtype(dtype))

    # ----- shapes --------------------------------------------------------------------------
    @classmethod
    def concatenate(cls, xs: Any, axis: int = 0) -> Any:
        return cls._t().cat(list(xs), dim=axis)

    @classmethod
    def repeat(cls, x: Any, n: int, axis: int) -> Any:
        return cls._t().repeat_interleave(x, n, dim=axis)

    @staticmethod
    def tile(x: Any, reps: Any) -> Any:
        return x.repeat(*((reps,) if isinstance(reps, int) else reps))

    @staticmethod
    def broadcast_to(x: Any, shape: Any) -> Any:
        return x.expand(*shape)

    @staticmethod
    def permute_dims(x: Any, axes: Any) -> Any:
        return x.permute(*axes)

    @classmethod
    def moveaxis(cls, x: Any, src: int, dst: int) -> Any:
        return cls._t().movedim(x, src, dst)

    # ----- arithmetic ----------------------------------------------------------------------
    abs = _tensor_method("abs")
    floor = _tensor_method("floor")
    ceil = _tensor_method("ceil")
    log2 = _tensor_method("log2")
    log = _tensor_method("log")
    exp = _tensor_method("exp")
    expm1 = _tensor_method("expm1")
    isfinite = _torch_function("isfinite")

    @classmethod
    def _floats_and_number(cls, tensor: Any, other: Any) -> bool:
        """Whether `other` is a number that may stay one beside `tensor` (a float tensor)."""
        return _number(other) and isinstance(tensor, cls._t().Tensor) and tensor.is_floating_point()

    @classmethod
    def _binary(cls, name: str, a: Any, b: Any, out: Any) -> Any:
        like = a if isinstance(a, cls._t().Tensor) else b
        if cls._floats_and_number(like, b if like is a else a):
            r = _WITH_NUMBER[name](a, b)
        else:
            r = getattr(cls._t(), name)(cls._as(a, like), cls._as(b, like))
        if out is None:
            return r
        out.copy_(r)
        return out

    # numpy's binary ufuncs, `out=` included
    maximum = _binary_ufunc("maximum")
    minimum = _binary_ufunc("minimum")
    add = _binary_ufunc("add")
    subtract = _binary_ufunc("subtract")
    multiply = _binary_ufunc("multiply")

    @classmethod
    def divide(cls, a: Any, b: Any, out: Any = None, where: Any = True) -> Any:
        """a / b; with `out` and `where`, only where `where` holds (the rest of `out` kept)."""
        q = cls._binary("divide", a, b, None)
        if where is True:
            return q if out is None else out.copy_(q)
        out.copy_(cls._t().where(where, q, out))
        return out

    @classmethod
    def where(cls, cond: Any, a: Any, b: Any) -> Any:
        torch = cls._t()
        like = a if isinstance(a, torch.Tensor) else b if isinstance(b, torch.Tensor) else cond
        if not isinstance(like, torch.Tensor) or not like.is_floating_point():
            like = torch.empty(0, dtype=torch.float64, device=cond.device)
        elif cls._floats_and_number(like, b if like is a else a):  # the number stays one (`_WITH_NUMBER`)
            return torch.where(cond, a, b)
        return torch.where(cond, cls._as(a, like), cls._as(b, like))

    @classmethod
    def clip(cls, x: Any, lo: Any, hi: Any) -> Any:
        """numpy's clip: the lower bound, then the upper one (each a number or an array)."""
        if lo is not None:
            x = x.clamp_min(lo if cls._floats_and_number(x, lo) else cls._as(lo, x))
        if hi is not None:
            x = x.clamp_max(hi if cls._floats_and_number(x, hi) else cls._as(hi, x))
        return x

    @classmethod
    def matmul(cls, a: Any, b: Any) -> Any:
        return cls._t().matmul(a, b)

    @classmethod
    def einsum(cls, spec: str, *xs: Any) -> Any:
        return cls._t().einsum(spec, *xs)

    @classmethod
    def copyto(cls, dst: Any, src: Any, where: Any) -> None:
        dst.copy_(cls._t().where(where, src if cls._floats_and_number(dst, src) else cls._as(src, dst), dst))

    # ----- reductions ----------------------------------------------------------------------
    @staticmethod
    def all(x: Any, axis: Any = None) -> Any:
        return x.all() if axis is None else x.all(dim=axis)

    @staticmethod
    def any(x: Any, axis: Any = None) -> Any:
        return x.any() if axis is None else x.any(dim=axis)

    @staticmethod
    def unique(x: Any) -> Any:
        return x.unique()

    @staticmethod
    def prod(x: Any, axis: int = -1) -> Any:
        """numpy's product along `axis`, in numpy's order (left to right): torch's own multiplies
        in another order on wide rows, which rounds products of reals differently."""
        parts = x.unbind(dim=axis)
        out = parts[0].clone()
        for p in parts[1:]:
            out *= p
        return out

    @classmethod
    def topk(cls, x: Any, k: int) -> Any:
        """The indices of the k largest entries of a vector (in no particular order)."""
        return cls._t().topk(x, k, sorted=False).indices

    @classmethod
    def amax(cls, x: Any, axis: int, keepdims: bool = False) -> Any:
        return cls._t().amax(x, dim=axis, keepdim=keepdims)

    @classmethod
    def amin(cls, x: Any, axis: int, keepdims: bool = False) -> Any:
        return cls._t().amin(x, dim=axis, keepdim=keepdims)

    @classmethod
    def argmax(cls, x: Any, axis: int) -> Any:
        return cls._t().argmax(x, dim=axis)

    @classmethod
    def sort(cls, x: Any, axis: int) -> Any:
        return cls._t().sort(x, dim=axis).values

    @classmethod
    def take_along_axis(cls, x: Any, idx: Any, axis: int) -> Any:
        return cls._t().take_along_dim(x, idx, dim=axis)

    @classmethod
    def nonzero(cls, x: Any) -> tuple[Any, ...]:
        return cls._t().nonzero(x, as_tuple=True)

    @classmethod
    def flatnonzero(cls, x: Any) -> Any:
        return cls._t().nonzero(x.reshape(-1), as_tuple=True)[0]

    @classmethod
    def bincount(cls, x: Any, weights: Any = None, minlength: int = 0) -> Any:
        if weights is not None:
            weights = weights.to(cls._t().float64)
        return cls._t().bincount(x, weights=weights, minlength=minlength)

    @classmethod
    def segment_min(cls, x: Any, starts: Any, axis: int) -> Any:
        """numpy's `minimum.reduceat(x, starts, axis)` for increasing, non-empty segments."""
        return cls._segments(x, starts, axis, cls._t().amin)

    @classmethod
    def segment_max(cls, x: Any, starts: Any, axis: int) -> Any:
        return cls._segments(x, starts, axis, cls._t().amax)

    @classmethod
    def _segments(cls, x: Any, starts: Any, axis: int, op: Any) -> Any:
        ends = list(starts[1:]) + [x.shape[axis]]
        parts = [op(x.narrow(axis, int(s), int(e) - int(s)), dim=axis) for s, e in zip(starts, ends)]
        return cls._t().stack(parts, dim=axis)


def segment_min(xp: Any, x: Any, starts: np.ndarray, axis: int) -> Any:
    """Minima of x over the segments that start at `starts` along `axis`."""
    return np.minimum.reduceat(x, starts, axis=axis) if xp is np else xp.segment_min(x, starts, axis)


def segment_max(xp: Any, x: Any, starts: np.ndarray, axis: int) -> Any:
    return np.maximum.reduceat(x, starts, axis=axis) if xp is np else xp.segment_max(x, starts, axis)


def astype(xp: Any, x: Any, dtype: Any) -> Any:
    """x as `dtype` (numpy's float64, int64, int32, int16 or bool)."""
    return x.astype(dtype) if xp is np else xp.astype(x, dtype)


def permute(xp: Any, x: Any, axes: tuple[int, ...]) -> Any:
    return x.transpose(axes) if xp is np else xp.permute_dims(x, axes)


def zeros(xp: Any, n: int, like: Any, dtype: Any = np.float64) -> Any:
    """n zeros of `dtype` where `like` lives."""
    return np.zeros(n, dtype=dtype) if xp is np else xp.zeros(n, dtype, like)


def top(xp: Any, x: Any, k: int) -> Any:
    """The indices of the k largest entries of the vector x (k <= its length; in no order)."""
    return np.argpartition(x, len(x) - k)[len(x) - k :] if xp is np else xp.topk(x, k)


def arange(xp: Any, n: int, like: Any) -> Any:
    return np.arange(n) if xp is np else xp.arange(n, like)


def empty(xp: Any, shape: Any, like: Any, dtype: Any = np.float64) -> Any:
    """An uninitialised array of `shape` where `like` lives."""
    return np.empty(shape, dtype=dtype) if xp is np else xp.empty(shape, dtype, like)


def like(x: np.ndarray, ref: Any) -> Any:
    """A numpy array x moved where `ref` lives (float64)."""
    if isinstance(ref, np.ndarray):
        return x
    import torch

    return torch.as_tensor(np.asarray(x, dtype=np.float64), device=ref.device)
