"""A test-only input format whose loader is noisy on stderr, the way a failing parser process can
be: ``*.noisyprof.json`` (the toy format's content, see tests/toyformat.py) whose parse prints a
fake traceback through ``sys.stderr``, writes straight to file descriptor 2 and raises a Python
warning; with ``"die": true`` in the file the process then ends at once (like a crash).
Registered through ``TB_COMPARE_FORMATS=noisyformat`` by tests/test_child_stderr.py."""
from __future__ import annotations

import json
import os
import sys
import warnings

from toyformat import ToyFormat

from tb_compare_plugin.discovery.spec import WorkerSpec, file_stat

SUFFIX = ".noisyprof.json"
LAST_WORDS = "NoisyError: the last line a dying child wrote"


class NoisyFormat(ToyFormat):
    id = "noisy"
    hint = "a *.noisyprof.json"

    def recognise(self, path, run=None):
        name = os.path.basename(path)
        if not name.endswith(SUFFIX) or not os.path.isfile(path):
            return None
        info = self.peek(path)
        return WorkerSpec(run if run is not None else os.path.basename(os.path.dirname(path)) or ".",
                          name[: -len(SUFFIX)], self.id, self.device, self.framework, path, (file_stat(path),),
                          info.get("rank"), tuple(info.get("steps") or ()), (), info.get("error"))

    def parse(self, root, progress=None, options=None):
        sys.stderr.write("Traceback (most recent call last):\n  File \"noisy.py\", line 1, in parse\n")
        sys.stderr.flush()
        os.write(2, b"raw bytes on file descriptor 2\n")
        warnings.warn("a RuntimeWarning from inside the loader", RuntimeWarning)
        with open(root, encoding="utf-8") as f:
            if json.load(f).get("die"):
                os.write(2, (LAST_WORDS + "\n").encode())
                os._exit(3)
        return super().parse(root, progress, options)


DESCRIPTOR = NoisyFormat()
