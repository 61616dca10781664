"""Loads fuzzed files in a process of its own, with bounded memory: a native crash or an
out-of-memory kill ends this process and fails the test instead of killing pytest.

    python fuzz_worker.py FORMAT MEMORY_BYTES FILE...

prints one JSON line per file: {"file", "outcome": "ok" | "error" | "bug", "message"}.
"""

import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import hostile_files  # noqa: E402

from faircert.errors import FaircertError  # noqa: E402


def main() -> int:
    fmt, memory, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    read = hostile_files.FORMATS[fmt][2]
    for name in files:
        start = time.monotonic()
        try:
            read(Path(name))
            outcome, message = "ok", ""
        except FaircertError as exc:
            outcome, message = "error", str(exc)
        except BaseException as exc:  # noqa: BLE001 - what the test is looking for
            outcome, message = "bug", f"{type(exc).__name__}: {exc}"[:2000]
        print(
            json.dumps(
                {"file": name, "outcome": outcome, "message": message, "seconds": round(time.monotonic() - start, 3)}
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
