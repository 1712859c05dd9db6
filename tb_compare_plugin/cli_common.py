"""What both commands (`tb-compare BASELINE TARGET`, :mod:`.cli`; `tb-compare cluster`,
:mod:`.cli_cluster`) share: exit codes, the one-line error, the progress bar on stderr (only on a
terminal), the atomic file write and the `--json` output (a file or stdout)."""
from __future__ import annotations

import os
import sys
import time

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class CliError(Exception):
    """A failure to report as one line."""


class Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.label = ""
        self._last = 0.0

    def start(self, label: str) -> None:
        self.label = label
        self(0.0)

    def __call__(self, frac: float) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if frac < 1.0 and now - self._last < 0.1:
            return
        self._last = now
        n = int(max(0.0, min(1.0, frac)) * 30)
        sys.stderr.write(f"\r{self.label[:40]:<40} [{'#' * n}{'.' * (30 - n)}] {frac * 100:5.1f}%")
        sys.stderr.flush()

    def done(self) -> None:
        if self.enabled:
            sys.stderr.write("\r" + " " * 80 + "\r")
            sys.stderr.flush()


def atomic_write(path: str, data: bytes) -> None:
    path = os.path.abspath(path)
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        raise CliError(f"cannot write {path}: folder {folder} does not exist")
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise CliError(f"cannot write {path}: {e.strerror or e}")


def write_output(target: str, data: bytes) -> None:
    """``data`` (a `--json` answer) to stdout, with a newline, when ``target`` is ``-``; else
    atomically to the file ``target``."""
    if target == "-":
        out = getattr(sys.stdout, "buffer", None)
        if out is None:                  # a text-only stdout (embedding, tests)
            sys.stdout.write(data.decode("utf-8") + "\n")
        else:
            sys.stdout.flush()
            out.write(data + b"\n")
            out.flush()
    else:
        atomic_write(target, data)
