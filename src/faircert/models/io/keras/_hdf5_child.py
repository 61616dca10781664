"""Child process: copy an HDF5 file's groups, attributes and numeric datasets out of HDF5.

Run as a script by `hdf5_tree.read_hdf5` with `python -P` (never imported). The HDF5 library is
native code; a damaged file can crash it, and here that only ends this process. argv: PATH, or
`-` to read the file's bytes from stdin, then the limits (max nodes, max values, max depth).
stdout: an .npz with a JSON manifest (`manifest`) and one array per dataset (`d0`, `d1`, ...).
Links to other files, external or virtual storage and soft links are refused, not followed. An
error is one line on stderr prefixed `faircert-child:` and exit status 3.
"""

import io
import json
import os
import resource
import sys

import numpy as np


class Refused(Exception):
    """The file is readable but not acceptable."""


def _attrs(obj) -> dict:
    out = {}
    for key in obj.attrs:
        value = obj.attrs[key]
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, np.ndarray) and value.dtype.kind in "SOU" and value.ndim <= 1:
            value = [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in value.tolist()]
        elif isinstance(value, (np.generic, np.ndarray)) and np.asarray(value).dtype.kind in "iufb":
            value = np.asarray(value).tolist()
        elif not isinstance(value, str):
            continue  # other attribute types are never read by faircert
        out[key] = value
    return out


def _walk(h5py, group, path: str, depth: int, state: dict) -> dict:
    if depth > state["max_depth"]:
        raise Refused(f"groups nested more than {state['max_depth']} levels deep")
    node = {"attrs": _attrs(group), "children": {}}
    for name in group:
        state["nodes"] += 1
        if state["nodes"] > state["max_nodes"]:
            raise Refused(f"more than {state['max_nodes']} groups and datasets")
        where = f"{path}/{name}"
        link = group.get(name, getlink=True)
        if isinstance(link, h5py.ExternalLink):
            raise Refused(
                f"{where} is a link to another file ({link.filename[:80]}); faircert reads only the file it is given"
            )
        if isinstance(link, h5py.SoftLink):
            raise Refused(f"{where} is a soft link, which faircert does not follow")
        obj = group[name]
        if isinstance(obj, h5py.Group):
            node["children"][name] = _walk(h5py, obj, where, depth + 1, state)
            continue
        if not isinstance(obj, h5py.Dataset):
            continue  # named datatypes
        if obj.external or obj.is_virtual:
            raise Refused(
                f"{where}: the data is stored in other files (HDF5 external or virtual storage); faircert "
                "reads only the file it is given"
            )
        entry = {"attrs": _attrs(obj), "shape": list(obj.shape), "dtype": obj.dtype.str}
        if obj.dtype.kind in "iufb":
            state["values"] += int(obj.size)
            if state["values"] > state["max_values"]:
                raise Refused(f"more than {state['max_values']} stored values")
            entry["array"] = f"d{len(state['arrays'])}"
            state["arrays"].append(np.asarray(obj[()]))
        node["children"][name] = entry
    return node


def main() -> int:
    limit = int(os.environ.get("FAIRCERT_CHILD_MEMORY", "0"))
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    if limit > 0:  # never above a limit the parent already runs under
        limit = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import h5py

    source, max_nodes, max_values, max_depth = sys.argv[1], *map(int, sys.argv[2:5])
    arrays: list[np.ndarray] = []  # filled by _walk, through state["arrays"]
    state = {
        "nodes": 0,
        "values": 0,
        "arrays": arrays,
        "max_nodes": max_nodes,
        "max_values": max_values,
        "max_depth": max_depth,
    }
    try:
        handle = io.BytesIO(sys.stdin.buffer.read()) if source == "-" else source
        with h5py.File(handle, "r") as f:
            tree = _walk(h5py, f, "", 0, state)
    except Refused as exc:
        print(f"faircert-child: {exc}", file=sys.stderr)
        return 3
    except Exception as exc:  # noqa: BLE001 - any HDF5 error means "not a readable file"
        print(f"faircert-child: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}", file=sys.stderr)
        return 3
    buffer = io.BytesIO()
    named = {f"d{k}": a for k, a in enumerate(arrays)}
    # mypy also matches **named against savez's allow_pickle: bool
    np.savez(buffer, manifest=np.array(json.dumps(tree)), **named)  # type: ignore[arg-type]
    sys.stdout.buffer.write(buffer.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
