"""Phase marks for measuring where an end-to-end run spends its wall time (bench/phases.py).

With ``TB_COMPARE_TIMING=FILE`` set, :func:`mark` appends one line ``<unix time> <pid> <label>``
to FILE (one small O_APPEND write, so the CLI, the fork server and the parser processes can all
write to it); unset, it returns at once.  Nothing here changes what a run computes."""
from __future__ import annotations

import os
import time

_PATH = os.environ.get("TB_COMPARE_TIMING") or None


def mark(label: str) -> None:
    if _PATH is None:
        return
    try:
        fd = os.open(_PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{time.time():.4f} {os.getpid()} {label}\n".encode())
        finally:
            os.close(fd)
    except OSError:
        pass
