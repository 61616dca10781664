"""An HDF5 file's groups, attributes and numeric datasets as plain Python objects.

The HDF5 library reads the untrusted file in a child process (`../_child.py`), which refuses
links to other files, external and virtual storage and soft links, and bounds the number of
objects, stored values and nesting. The Keras importer then walks these nodes; it never holds an
HDF5 handle, so a damaged file can crash only the child.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ....errors import ModelFormatError
from ....limits import HDF5_SECONDS, MAX_GRAPH_NODES, MAX_NESTING, MAX_TENSOR_VALUES, quoted
from ..isolated import CHILD, run_isolated


@dataclass
class H5Node:
    """A group (`children` set) or a dataset (`array` set when numeric) with its attributes."""

    attrs: dict[str, Any] = field(default_factory=dict)
    children: dict[str, H5Node] | None = None
    array: np.ndarray | None = None
    dtype: str = ""

    @property
    def is_group(self) -> bool:
        return self.children is not None

    def has(self, name: str) -> bool:
        return self.children is not None and name in self.children

    def child(self, name: str, where: str) -> H5Node:
        if not self.has(name):
            raise ModelFormatError(f"{where}: {quoted(name)} is listed but missing in the file")
        return self.children[name]  # type: ignore[index]

    def keys(self) -> list[str]:
        return list(self.children or {})


def read_hdf5(source: Path | bytes, label: str) -> H5Node:
    """The file's tree; `source` is a path or the bytes of an HDF5 file (a `.keras` archive member)."""
    arg, stdin = ("-", source) if isinstance(source, bytes) else (str(source), b"")
    limits = [str(MAX_GRAPH_NODES), str(MAX_TENSOR_VALUES), str(MAX_NESTING)]
    stdout = run_isolated(
        CHILD, ["hdf5", arg, *limits], stdin, "HDF5", label, "not a readable HDF5/Keras file", HDF5_SECONDS
    )
    try:
        with np.load(io.BytesIO(stdout), allow_pickle=False) as npz:
            manifest = json.loads(str(npz["manifest"]))
            arrays = {k: npz[k] for k in npz.files if k != "manifest"}
    except (ValueError, OSError, EOFError, KeyError):
        raise ModelFormatError(
            f"{label}: not a readable HDF5/Keras file (the reader returned nothing usable)"
        ) from None
    return _node(manifest, arrays)


def _node(entry: dict, arrays: dict[str, np.ndarray]) -> H5Node:
    if "children" in entry:
        return H5Node(entry["attrs"], {k: _node(v, arrays) for k, v in entry["children"].items()})
    return H5Node(entry["attrs"], None, arrays.get(entry.get("array", "")), entry.get("dtype", ""))
