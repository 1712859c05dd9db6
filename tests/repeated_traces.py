"""A test input made from a real trace: its events repeated, gzip-compressed, so that a parse takes
long enough for what a test watches (two sides' jobs overlapping, a signal arriving mid-parse)."""
from __future__ import annotations

import json
import zlib
from pathlib import Path


def repeated_traces(source: Path, folder: Path, reps: dict) -> list[Path]:
    """For each ``name: n`` of ``reps``, ``folder/<name>.pt.trace.json.gz`` holding ``source``'s
    events n + 1 times; the paths in ``reps``' order."""
    evs = json.loads(Path(source).read_text())["traceEvents"]
    body = json.dumps(evs)[1:-1].encode()
    paths = []
    for name, n in reps.items():
        z = zlib.compressobj(1, zlib.DEFLATED, 31)
        path = Path(folder) / f"{name}.pt.trace.json.gz"
        with open(path, "wb") as f:
            f.write(z.compress(b'{"traceEvents": [' + body))
            for _ in range(n):
                f.write(z.compress(b"," + body))
            f.write(z.compress(b"]}") + z.flush())
        paths.append(path)
    return paths
