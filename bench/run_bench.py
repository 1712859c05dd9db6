"""Loader benchmark: wall time and peak RSS per load, on the corpus and on generated large inputs.

    python -m bench.run_bench                       # io + load phases, corpus + all sizes
    python -m bench.run_bench --sizes 200mb --no-corpus --repeat 1
    python -m bench.run_bench --with-reference      # also msprof-analyze compare on each pair

Every measurement runs in a fresh interpreter (bench/measure_child.py or the external
command), so its peak RSS is its own.  Phases:

* ``io``        read every byte of the input (gunzip .gz): the floor any loader pays;
* ``load``      ``tb_compare_plugin.loaders.load(fmt, path)``; GPU files as ``trace-json``,
                ``*_ascend_pt`` folders as ``ascend-text`` (``ascend-db`` for SQLite exports);
* ``cli``       ``tb-compare BASELINE TARGET --xlsx .. --json ..`` per pair (once the command exists);
* ``reference`` ``msprof-analyze compare -bp BASELINE -d TARGET -o ..`` per pair (opt-in, slow:
                ~105 s for a 200 MB GPU pair; GPU traces are gunzipped into the cache first).

A missing loader / command is reported per row and the run goes on.  Results: a
markdown table on stdout and JSON in ``<out>/results/``.
"""
from __future__ import annotations

import argparse
import gzip
import importlib.util
import os
import shutil
import signal
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):                     # run as a script: python bench/run_bench.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "bench"

from . import gen_traces, proc  # noqa: E402

ROOT = gen_traces.ROOT
CORPUS = gen_traces.CORPUS
SMALL_BYTES = 50_000_000
# corpus pairs the reference's golden data covers (shared/spec/golden/README.md): baseline, target
CORPUS_PAIRS = {
    "i_npu_l1r0_vs_l1r1": ("npu/alexnet_ddp_2rank_level1/rank0_ascend_pt", "npu/alexnet_ddp_2rank_level1/rank1_ascend_pt"),
    "ii_npu_l0r0_vs_l1r0": ("npu/alexnet_ddp_2rank_level0/rank0_ascend_pt", "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt"),
    "iii_gpu_resnet50_vs_npu_l1r0": ("gpu/kineto_resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
                                     "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt"),
    "iv_gpu_hta_control_vs_test": ("gpu/hta_trace_diff/control/control.pt.trace.json.gz",
                                   "gpu/hta_trace_diff/test/test.pt.trace.json.gz"),
    "v_npu_db_l1r0_vs_l1r1": ("npu/alexnet_ddp_2rank_db_level1/rank0_ascend_pt", "npu/alexnet_ddp_2rank_db_level1/rank1_ascend_pt"),
}


def _log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def fmt_of(path: Path) -> str:
    if path.is_file():
        return "ascend-db" if path.suffix == ".db" else "trace-json"
    ms = path.name.endswith("_ascend_ms")
    db = any(path.rglob("ascend_*_profiler*.db"))
    return ("mindspore-" if ms else "ascend-") + ("db" if db else "text")


def data_bytes(path: Path) -> int:
    """Bytes of trace data: file sizes, uncompressed for .gz."""
    total = 0
    for p in (sorted(q for q in path.rglob("*") if q.is_file()) if path.is_dir() else [path]):
        if p.name.endswith(".gz"):
            with gzip.open(p, "rb") as f:
                while (block := f.read(16 << 20)):
                    total += len(block)
        else:
            total += p.stat().st_size
    return total


def disk_bytes(path: Path) -> int:
    return sum(q.stat().st_size for q in path.rglob("*") if q.is_file()) if path.is_dir() else path.stat().st_size


def corpus_inputs() -> list:
    items = []
    for f in sorted((CORPUS / "gpu").rglob("*.pt.trace.json*")):
        items.append({"label": str(f.relative_to(CORPUS)), "path": f, "group": "corpus"})
    for run in sorted(p for p in (CORPUS / "npu").iterdir() if p.is_dir()):
        workers = sorted(p for p in run.iterdir() if p.is_dir() and p.name.endswith(("_ascend_pt", "_ascend_ms")))
        if not workers and (run / "ASCEND_PROFILER_OUTPUT").is_dir():
            workers = [run]
        items += [{"label": str(w.relative_to(CORPUS)), "path": w, "group": "corpus"} for w in workers]
    return items


def generated_inputs(sizes: list, out: Path) -> tuple:
    items, pairs = [], []
    for spec in sizes:
        try:
            man = gen_traces.ensure(spec, out)
        except Exception as e:  # noqa: BLE001 - report and go on
            _log(f"cannot generate {spec}: {e}")
            continue
        folder = Path(man["folder"])
        side_paths = {}
        for side, info in man["sides"].items():
            p = folder / info["path"]
            side_paths[side] = p
            items.append({"label": f"{man['name']}/{side}", "path": p, "group": "generated",
                          "source": info["source"], "copies": info["copies"]})
        pairs.append({"label": man["name"], "baseline": side_paths["baseline"], "target": side_paths["target"]})
    return items, pairs


def _median(vals: list):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def measure_input(item: dict, phase: str, repeat: int | None, args) -> dict:
    path = item["path"]
    fmt = fmt_of(path)
    row = {"phase": phase, "input": item["label"], "fmt": fmt if phase == "load" else "bytes",
           "disk_bytes": disk_bytes(path), "data_bytes": item.setdefault("data_bytes", data_bytes(path)),
           "samples": []}
    n = repeat or (5 if row["data_bytes"] < SMALL_BYTES else 3)
    cmd = [sys.executable, "-m", "bench.measure_child"] + (["io", str(path)] if phase == "io" else ["load", fmt, str(path)])
    for i in range(n):
        r = proc.run(cmd, args.timeout, args.max_rss_gb * 1000, cwd=str(ROOT))
        c = r.child
        peak = r.peak_rss_mb
        if r.rss_source != "time" and c.get("peak_rss_mb"):
            peak = c["peak_rss_mb"]          # wait4 is floored by our own RSS; the child's VmHWM is not
        s = {"proc_wall_s": r.wall_s, "peak_rss_mb": peak, "rss_source": r.rss_source,
             "child_vmhwm_mb": c.get("peak_rss_mb"), "rc": r.rc, "status": c.get("status"),
             "wall_s": c.get("wall_s"), "import_s": c.get("import_s"), "rss_before_mb": c.get("rss_before_mb")}
        if r.killed:
            s["status"], s["error"] = "killed", r.killed
        elif not c:
            s["status"] = "error"
            s["error"] = f"child exited {r.rc} without a result: " + (r.stderr.strip().splitlines() or ["?"])[-1][:300]
        elif c.get("error"):
            s["error"] = c["error"]
        row["samples"].append(s)
        if c.get("counts") is not None:
            row["counts"], row["warnings"] = c["counts"], c.get("warnings", [])
        if s["status"] != "ok":
            break                     # a failing or missing loader fails the same way every time
    ok = [s for s in row["samples"] if s["status"] == "ok"]
    row["status"] = "ok" if ok else row["samples"][-1]["status"]
    row["error"] = None if ok else row["samples"][-1].get("error")
    row["wall_s"] = _median([s["wall_s"] for s in ok])
    row["peak_rss_mb"] = _median([s["peak_rss_mb"] for s in ok])
    row["rss_before_mb"] = _median([s["rss_before_mb"] for s in ok])
    row["runs"] = len(ok)
    return row


_CLI_HELP: dict = {}


def _cli_base() -> list | None:
    """The tb-compare command of this tree (preferred) or on PATH, and the options its --help lists."""
    if "base" not in _CLI_HELP:
        base = None
        if importlib.util.find_spec("tb_compare_plugin.cli") is not None:
            base = [sys.executable, "-m", "tb_compare_plugin.cli"]
        elif shutil.which("tb-compare"):
            base = [shutil.which("tb-compare")]
        _CLI_HELP["base"] = base
        _CLI_HELP["help"] = ""
        if base:
            r = proc.run(base + ["--help"], 60, 4000, cwd=str(ROOT))
            _CLI_HELP["help"] = r.stdout + r.stderr
    return _CLI_HELP["base"]


def _pair_cmd(kind: str, b: Path, t: Path, outdir: Path):
    if kind in ("cli", "cli_cached"):
        base = _cli_base()
        if base is None:
            return None, "cli unavailable: no tb-compare command (nor tb_compare_plugin.cli) yet"
        cmd = base + [str(b), str(t)]
        for opt, val in (("--xlsx", outdir / "result.xlsx"), ("--json", outdir / "result.json"),
                         ("--no-progress", None), ("--quiet", None)):
            if opt in _CLI_HELP["help"]:
                cmd += [opt] + ([str(val)] if val else [])
        if kind == "cli" and "--no-cache" in _CLI_HELP["help"]:
            cmd.append("--no-cache")      # end to end: parse both sides every time
        return cmd, None
    exe = os.environ.get("MSPROF_ANALYZE") or shutil.which("msprof-analyze")
    if not exe or not Path(exe).exists():
        return None, ("reference unavailable: msprof-analyze not found (pip install msprof-analyze, "
                      "or set MSPROF_ANALYZE=/path/to/msprof-analyze)")
    return [exe, "compare", "-bp", str(b), "-d", str(t), "-o", str(outdir)], None


def _warm_page_cache(*paths: Path) -> None:
    """Read every input file once so each tool is timed on the same warm page cache (this VM's
    disk reads ~50 MB/s cold, which would otherwise dominate)."""
    for p in paths:
        files = [p] if p.is_file() else [f for f in p.rglob("*") if f.is_file()]
        for f in files:
            with open(f, "rb") as fh:
                while fh.read(16 << 20):
                    pass


def _compile_package() -> None:
    """Byte-compile tb-compare's own modules once, as ``pip install .`` does when it installs them.
    An editable install run with ``PYTHONDONTWRITEBYTECODE`` set (this machine's environment) would
    otherwise compile every module of the package it imports from source, in every process of every
    run: ~0.15 s of CPU in the fork server's preload before the parsers start, ~0.28 s in the CLI
    process, ~0.06 s in each parser (docs/performance.md, session 11, start-up)."""
    import compileall
    spec = importlib.util.find_spec("tb_compare_plugin")
    if spec is not None and spec.origin:
        compileall.compile_dir(os.path.dirname(spec.origin), quiet=1)


def _gunzipped(p: Path, out: Path) -> Path:
    """The reference rejects .json.gz: give it a gunzipped copy kept in the cache."""
    if not p.name.endswith(".gz"):
        return p
    dest = out / "gunzipped" / p.relative_to(CORPUS).with_suffix("") if p.is_relative_to(CORPUS) \
        else out / "gunzipped" / p.name[:-3]
    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(p, "rb") as f, open(str(dest) + ".part", "wb") as g:
            shutil.copyfileobj(f, g, 16 << 20)
        Path(str(dest) + ".part").replace(dest)
    return dest


def measure_pair(pair: dict, kind: str, repeat: int | None, args, out: Path) -> dict:
    b, t = Path(pair["baseline"]), Path(pair["target"])
    if kind == "reference":
        b, t = _gunzipped(b, out), _gunzipped(t, out)
    data = data_bytes(b) + data_bytes(t)
    row = {"phase": kind, "input": pair["label"], "fmt": "pair", "disk_bytes": disk_bytes(b) + disk_bytes(t),
           "data_bytes": data, "samples": []}
    n = repeat or (3 if data < SMALL_BYTES else 1)
    _warm_page_cache(b, t)
    _compile_package()
    env = dict(os.environ, TB_COMPARE_CACHE_DIR=str(out / "tbc_cache"))
    for w in range(getattr(args, "warmup", 0) if kind == "cli" else 0):
        # unmeasured: the tool's own files (libraries, the JIT cache) back in the page cache after the
        # reference's minutes of work evicted them, as for a user's second run (hyperfine --warmup)
        wdir = out / "runs" / "warmup" / f"{pair['label']}-{w}"
        shutil.rmtree(wdir, ignore_errors=True)
        wdir.mkdir(parents=True)
        cmd, why = _pair_cmd(kind, b, t, wdir)
        if cmd:
            proc.run(cmd, args.timeout, args.max_rss_gb * 1000, cwd=str(wdir), env=env)
        shutil.rmtree(wdir, ignore_errors=True)
    if kind == "cli_cached":            # fill the parsed-profile cache once, then measure reopening
        cmd, why = _pair_cmd(kind, b, t, out / "runs" / "warmup")
        (out / "runs" / "warmup").mkdir(parents=True, exist_ok=True)
        if cmd:
            proc.run(cmd, args.timeout, args.max_rss_gb * 1000, cwd=str(out / "runs" / "warmup"), env=env)
    for i in range(n):
        outdir = out / "runs" / kind / pair["label"] / str(i)
        shutil.rmtree(outdir, ignore_errors=True)
        outdir.mkdir(parents=True)
        cmd, why = _pair_cmd(kind, b, t, outdir)
        if cmd is None:
            row["samples"].append({"status": "unavailable", "error": why})
            break
        r = proc.run(cmd, args.timeout, args.max_rss_gb * 1000, cwd=str(outdir), env=env)
        # the reference exits 0 even when it fails: its xlsx is the proof; ours must write what was asked
        wanted = [cmd[i + 1] for i, a in enumerate(cmd[:-1]) if a in ("--xlsx", "--json")]
        produced = (all(Path(w).exists() for w in wanted) if kind != "reference" else any(outdir.rglob("*.xlsx")))
        s = {"wall_s": r.wall_s, "proc_wall_s": r.wall_s, "peak_rss_mb": r.peak_tree_rss_mb,
             "largest_process_rss_mb": r.peak_rss_mb,
             "rss_source": r.rss_source, "rc": r.rc,
             "status": "ok" if (r.rc == 0 and produced and not r.killed) else ("killed" if r.killed else "error")}
        if s["status"] != "ok":
            tail = (r.stderr.strip() or r.stdout.strip()).splitlines()[-3:]
            s["error"] = r.killed or f"rc={r.rc}, xlsx={'yes' if produced else 'no'}: " + " | ".join(tail)[:400]
        row["samples"].append(s)
        if s["status"] != "ok":
            break
    ok = [s for s in row["samples"] if s["status"] == "ok"]
    row.update(warmup_runs=getattr(args, "warmup", 0) if kind == "cli" else 0)
    row.update(status="ok" if ok else row["samples"][-1]["status"],
               error=None if ok else row["samples"][-1].get("error"),
               wall_s=_median([s["wall_s"] for s in ok]), peak_rss_mb=_median([s["peak_rss_mb"] for s in ok]),
               rss_before_mb=None, runs=len(ok))
    return row


def scale_notes(rows: list, items: list) -> None:
    """For generated inputs: are the loaded row counts exactly copies x the source's?"""
    src_counts = {r["input"]: r.get("counts") for r in rows if r["phase"] == "load" and r.get("counts")}
    for r in rows:
        item = next((i for i in items if i["label"] == r["input"] and i.get("copies")), None)
        if r["phase"] != "load" or not item or not r.get("counts"):
            continue
        base = src_counts.get(item["source"])
        if not base:
            continue
        off = {k: (v, base.get(k, 0) * item["copies"]) for k, v in r["counts"].items()
               if v != base.get(k, 0) * item["copies"]}
        r["scale_check"] = {"copies": item["copies"], "mismatch": {k: {"got": g, "expected": e} for k, (g, e) in off.items()}}


def main(argv=None) -> int:
    from . import report
    ap = argparse.ArgumentParser(prog="python -m bench.run_bench", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--phases", default="io,load",
                    help="comma list of io, load, cli (end to end, no cache), cli_cached (reopening a "
                         "cached pair), reference (default io,load)")
    ap.add_argument("--with-cli", action="store_true", help="add the cli phase")
    ap.add_argument("--with-reference", action="store_true", help="add the reference phase (slow)")
    ap.add_argument("--sizes", default=gen_traces.DEFAULT_SIZES,
                    help=f"generated inputs, '' for none (default {gen_traces.DEFAULT_SIZES})")
    ap.add_argument("--no-corpus", action="store_true", help="skip the corpus workers")
    ap.add_argument("--only", default="", help="keep inputs/pairs whose label contains this text")
    ap.add_argument("--repeat", type=int, default=None,
                    help="runs per measurement (default 5 under 50 MB, else 3; pairs 3 / 1)")
    ap.add_argument("--out", type=Path, default=None, help="cache + results folder "
                    "(default $TB_COMPARE_BENCH_DIR or /tmp/tb_compare_bench)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run before it is killed")
    ap.add_argument("--max-rss-gb", type=float, default=16, help="kill a run above this RSS (default 16)")
    ap.add_argument("--interleave", action="store_true",
                    help="measure pair by pair (every pair phase of one pair, then the next pair), so "
                         "tb-compare and the reference run minutes apart on a machine whose speed drifts")
    ap.add_argument("--warmup", type=int, default=1,
                    help="unmeasured cli runs per pair before the measured ones (default 1): the tool's "
                         "own files back in the page cache, as for a second run")
    ap.add_argument("--reference-repeat", type=int, default=None,
                    help="runs of the reference per pair (default: --repeat)")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # unwinds proc.run, which kills its child
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    phases += [p for p, on in (("cli", args.with_cli), ("reference", args.with_reference)) if on and p not in phases]
    bad = set(phases) - {"io", "load", "cli", "cli_cached", "reference"}
    if bad:
        ap.error(f"unknown phase(s) {sorted(bad)}")
    out = args.out or gen_traces.default_out()
    out.mkdir(parents=True, exist_ok=True)

    items, pairs = [], []
    if not args.no_corpus:
        if CORPUS.is_dir():
            items += corpus_inputs()
            pairs += [{"label": k, "baseline": CORPUS / b, "target": CORPUS / t} for k, (b, t) in CORPUS_PAIRS.items()]
        else:
            _log(f"corpus not found at {CORPUS}: corpus rows skipped")
    sizes = [s for s in args.sizes.split(",") if s.strip()]
    if sizes:
        g_items, g_pairs = generated_inputs(sizes, out)
        items += g_items
        pairs += g_pairs
    if args.only:
        items = [i for i in items if args.only in i["label"]]
        pairs = [p for p in pairs if args.only in p["label"]]
    if "load" in phases and CORPUS.is_dir():      # the scale check needs each generated input's source
        have = {i["label"] for i in items}
        for src in sorted({i["source"] for i in items if i.get("source")} - have):
            items.append({"label": src, "path": CORPUS / src, "group": "source"})

    rows = []
    t_start = time.perf_counter()
    for phase in [p for p in phases if p in ("io", "load")]:
        for item in items:
            row = measure_input(item, phase, args.repeat, args)
            _log(f"{phase:<5} {item['label']}: {row['status']} wall={row['wall_s']} rss={row['peak_rss_mb']}"
                 + (f" ({row['error']})" if row.get("error") else ""))
            rows.append(row)
    pair_phases = [p for p in phases if p not in ("io", "load")]
    order = ([(pair, ph) for pair in pairs for ph in pair_phases] if args.interleave else
             [(pair, ph) for ph in pair_phases for pair in pairs])
    for pair, phase in order:
        n = args.reference_repeat if phase == "reference" and args.reference_repeat else args.repeat
        row = measure_pair(pair, phase, n, args, out)
        _log(f"{phase:<5} {pair['label']}: {row['status']} wall={row['wall_s']}"
             + (f" ({row['error']})" if row.get("error") else ""))
        rows.append(row)
    scale_notes(rows, items)
    meta = {"machine": proc.machine_info(), "args": vars(args) | {"phases": phases},
            "seconds": round(time.perf_counter() - t_start, 1)}
    table = report.markdown(rows)
    path = report.write_json(rows, meta, out)
    m = meta["machine"]
    print(f"\nMachine: {m.get('cpu')}, {m.get('nproc')} cores, {m.get('mem_gb')} GB, Python {m.get('python')}; "
          f"load average at end {tuple(round(x, 2) for x in m.get('loadavg', ()))}\n")
    print(table)
    vs = report.versus_reference(rows)
    if vs:
        print("\nAgainst the reference, same run (medians):\n")
        print(vs)
    print(f"\nJSON: {path}  ({meta['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
