"""Generate (once) a large msprof CANN export for the parse benchmark, from the samples' target run
(``samples/msprof_tf/target``): its iterations repeated, shifted in time and renumbered, until the
export holds about ``--mb`` MB (op_summary cut into ``_slice_N`` files of ~100 MB as msprof does for
a long run; the msprof_*.json timeline repeated the same way; step_trace and the statistics files
copied).  Deterministic.

    python -m bench.gen_msprof [--mb 500] [--out DIR]     (default DIR: $TB_COMPARE_BENCH_DIR or
                                                           /tmp/tb_compare_bench, into msprof_500mb/)
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
from pathlib import Path

from .gen_traces import default_out

ROOT = Path(__file__).resolve().parent.parent
SRC = next((ROOT / "samples" / "msprof_tf" / "target").glob("PROF_*")) / "mindstudio_profiler_output"
SLICE_BYTES = 100_000_000


def _ns(s: str) -> int:
    whole, _, frac = s.strip().partition(".")
    return int(whole) * 1000 + int((frac + "000")[:3])


def _us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def generate(mb: int, out: Path) -> Path:
    dst = out / f"msprof_{mb}mb" / "PROF_000001_20261125100000000_BENCHBENCHBENCHB" / "mindstudio_profiler_output"
    if (dst.parent / "manifest.json").is_file():
        return dst
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    stamp = "20261125100000"
    ops = []
    for p in sorted(SRC.glob("op_summary_*.csv")):
        with open(p, newline="") as f:
            r = csv.reader(f)
            head = next(r)
            ops += list(r)
    st = list(csv.reader(open(next(SRC.glob("step_trace_*.csv")), newline="")))
    tl = json.loads(next(SRC.glob("msprof_*.json")).read_text())
    meta = [e for e in tl if e["ph"] == "M"]
    xs = [e for e in tl if e["ph"] == "X"]
    i_start, i_dur = head.index("Task Start Time(us)"), head.index("Task Duration(us)")
    first = min(_ns(r[i_start]) for r in ops)
    last = max(_ns(r[i_start]) + _ns(r[i_dur]) for r in ops)
    span = last - first + 500_000
    n_it = len(st) - 1
    budget = mb * 1_000_000
    sl, written, rep = 0, 0, 0
    op_budget = int(budget * 0.6)
    while written < op_budget:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(head)
        while buf.tell() < SLICE_BYTES and written + buf.tell() < op_budget:
            off = rep * span
            for r in ops:
                r2 = list(r)
                r2[i_start] = _us(_ns(r[i_start]) + off)
                w.writerow(r2)
            rep += 1
        data = buf.getvalue()
        (dst / f"op_summary_slice_{sl}_{stamp}.csv").write_text(data, newline="")
        written += len(data)
        sl += 1
    with open(dst / f"step_trace_{stamp}.csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(st[0])
        h = st[0]
        cols = [h.index(c) for c in ("FP Start(us)", "BP End(us)", "Iteration End(us)", "Reduce Start(us)")]
        for k in range(rep):
            for j, r in enumerate(st[1:]):
                r2 = list(r)
                r2[1] = str(k * n_it + j + 1)
                for c in cols:
                    r2[c] = _us(_ns(r[c]) + k * span)
                if k and j == 0:       # the gap to the previous copy's Iteration End
                    r2[h.index("Data Aug Bound(us)")] = _us(span - (last - first) + 0)
                w.writerow(r2)
    with open(dst / f"msprof_{stamp}.json", "w") as f:
        f.write("[")
        f.write(",".join(json.dumps(e, separators=(",", ":")) for e in meta))
        tl_bytes, k = 0, 0
        while tl_bytes < budget - written and k < rep:
            off = k * span
            chunk = []
            for e in xs:
                e2 = dict(e)
                e2["ts"] = _us(_ns(e["ts"]) + off) if isinstance(e["ts"], str) else e["ts"] + off / 1000
                chunk.append(json.dumps(e2, separators=(",", ":")))
            s = "," + ",".join(chunk)
            f.write(s)
            tl_bytes += len(s)
            k += 1
        f.write("]")
    for p in SRC.glob("*.csv"):
        if not p.name.startswith(("op_summary", "step_trace")):
            shutil.copyfile(p, dst / p.name.replace(p.name.rsplit("_", 1)[1][:14], stamp))
    total = sum(p.stat().st_size for p in dst.iterdir())
    (dst.parent / "manifest.json").write_text(json.dumps({"mb": mb, "bytes": total, "copies": rep, "slices": sl}))
    return dst


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=500)
    ap.add_argument("--out", type=Path, default=default_out())
    a = ap.parse_args(argv)
    d = generate(a.mb, a.out)
    print(d, json.loads((d.parent / "manifest.json").read_text()))


if __name__ == "__main__":
    main()
