"""Cluster analysis at scale: N ranks (default 1,024) cold, from the caches, and on a Dask
LocalCluster; wall time, peak RSS, and whether every way gives the same JSON.

    python -m bench.cluster_bench [--ranks 1024] [--phases cold,cached,summaries,dask]
                                  [--dask-workers 2] [--workers N] [--also-clean] [--out DIR]

The run is generated once by ``bench.gen_cluster`` (slow rank 700 with 20 ms extra compute,
slow link 9->10 at a fifth of its bandwidth; ranks folded into range for small N) into
``$TB_COMPARE_BENCH_DIR`` (default /tmp/tb_compare_bench).  Every phase is a fresh interpreter
(``python -m bench.cluster_bench --child ...``) calling ``service.cluster.cluster_json``, measured
from outside by ``bench.proc.run`` (wall incl. start-up, peak RSS of the process and of its tree:
the summarising processes are its fork server's children):

| phase | what |
|---|---|
| ``cold`` | empty cache: discovery, every rank summarised on local cores, analysis, caches written |
| ``cached`` | the same call again: the run's record (fingerprint of every file, then one read) |
| ``summaries`` | the run's record deleted: every rank's summary from its record, then the analysis |
| ``dask`` | no cache, per-rank work on a ``distributed.LocalCluster`` (``--dask-workers`` processes, started by this script, not timed) |

The child prints its own timings (``fingerprint_s``, ``discover_s``, ``summarise_s``,
``analyse_s``: the service's ``stats``), a sha256 of the canonical JSON, and what the analysis
found.  Results: a markdown table on stdout and ``<out>/results/cluster-bench-<stamp>.json``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _vm_hwm_mb() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024 / 1e6
    except (OSError, ValueError):
        pass
    return 0.0


# ------------------------------------------------------------------------------------------ child

def child(phase: str, run: str, cache_dir: str, scheduler: str | None, workers: int | None) -> int:
    t0 = time.perf_counter()
    from tb_compare_plugin.cache import ProfileCache
    from tb_compare_plugin.service import cluster as svc
    import_s = time.perf_counter() - t0
    cache = None if phase == "dask" else ProfileCache(cache_dir)
    stats: dict = {}
    t0 = time.perf_counter()
    out = svc.cluster_json(run, cache=cache, scheduler=scheduler, workers=workers, stats=stats)
    wall = time.perf_counter() - t0
    canon = json.dumps(out, sort_keys=True).encode("utf-8")
    slow_links = sorted({(x["src_rank"], x["dst_rank"], x["transport"]) for x in out.get("links", []) if x.get("slow")})
    print(json.dumps({
        "phase": phase, "wall_s": round(wall, 3), "import_s": round(import_s, 3), "stats": stats,
        "sha256": hashlib.sha256(canon).hexdigest(), "json_bytes": len(canon),
        "ranks": len({r["rank"] for r in out.get("ranks", [])}), "errors": len(out.get("errors", [])),
        "slow_ranks": [[s["rank"], s["metric"], s.get("phase")] for s in out.get("slow_ranks", [])],
        "slow_links": slow_links, "peak_rss_mb": round(_vm_hwm_mb(), 1)}))
    return 0


# ------------------------------------------------------------------------------------------ parent

def _dask_cluster(n: int):
    import distributed
    return distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                    dashboard_address=None, silence_logs=40)


def _workers_hwm(address: str) -> list:
    import distributed
    with distributed.Client(address, set_as_default=False) as c:
        return [round(v, 1) for v in c.run(_vm_hwm_mb).values()]


def measure(phase: str, run: Path, cache_dir: Path, scheduler=None, workers=None, timeout=900) -> dict:
    from bench.proc import run as run_proc
    cmd = [sys.executable, "-m", "bench.cluster_bench", "--child", phase, "--run", str(run),
           "--cache", str(cache_dir)]
    if scheduler:
        cmd += ["--scheduler", scheduler]
    if workers:
        cmd += ["--workers", str(workers)]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("TB_COMPARE_DASK_SCHEDULER", None)
    r = run_proc(cmd, timeout_s=timeout, max_rss_mb=16000, cwd=str(ROOT), env=env)
    row = dict(r.child)
    row.update({"phase": phase, "process_wall_s": round(r.wall_s, 2), "rc": r.rc,
                "process_peak_rss_mb": round(r.peak_rss_mb, 1), "tree_peak_rss_mb": round(r.peak_tree_rss_mb, 1),
                "killed": r.killed})
    if r.rc != 0 or not r.child:
        row["error"] = (r.stderr.strip().splitlines() or ["no output"])[-1][:300]
    return row


def _drop_run_records(cache_dir: Path) -> int:
    from tb_compare_plugin.cache import code_hash
    n = 0
    folder = cache_dir / "v1" / "json"
    for p in folder.glob("*.rec.json"):
        with open(p, "rb") as f:
            head = json.loads(f.readline())
        if head.get("code") == code_hash("cluster"):
            p.unlink()
            n += 1
    return n


def table(rows: list) -> str:
    head = ("| phase | ranks | wall s (call) | process s | fingerprint s | discover s | summarise s | analyse s "
            "| peak RSS MB (process / tree) | same JSON as cold | slow ranks found | slow links found |")
    out = [head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    cold = next((r.get("sha256") for r in rows if r["phase"] == "cold"), None)
    for r in rows:
        st = r.get("stats", {})
        sr = ", ".join(f"{a} ({b}, {c})" for a, b, c in r.get("slow_ranks", [])[:2]) or "none"
        sl = ", ".join(f"{a}->{b} {c}" for a, b, c in r.get("slow_links", [])[:2]) or "none"
        mem = f"{r.get('process_peak_rss_mb', '')} / {r.get('tree_peak_rss_mb', '')}"
        if r.get("workers_peak_rss_mb"):
            mem += f" (+ Dask workers {', '.join(map(str, r['workers_peak_rss_mb']))})"
        same = ("—" if r["phase"] == "cold" or not cold else "n/a (another run)" if "clean" in r["phase"]
                else "yes" if r.get("sha256") == cold else "**no**")
        if r.get("error"):
            out.append(f"| {r['phase']} | | error: {r['error']} |||||||||| ")
            continue
        out.append(f"| {r['phase']} | {r.get('ranks')} | {r.get('wall_s')} | {r.get('process_wall_s')} | "
                   f"{st.get('fingerprint_s', '')} | {st.get('discover_s', '')} | {st.get('summarise_s', '')} | "
                   f"{st.get('analyse_s', '')} | {mem} | {same} | {sr} | {sl} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.cluster_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--phases", default="cold,cached,summaries,dask")
    ap.add_argument("--dask-workers", type=int, default=2)
    ap.add_argument("--workers", type=int, default=None, help="local processes (default: every core)")
    ap.add_argument("--also-clean", action="store_true", help="also run cold on a clean cluster of the same size")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--run", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--cache", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--scheduler", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        return child(a.child, a.run, a.cache, a.scheduler, a.workers)

    sys.path.insert(0, str(ROOT))
    from bench import gen_cluster
    from bench.proc import machine_info
    out = a.out or gen_cluster.default_out()
    n = a.ranks
    plan = gen_cluster.Plan(ranks=n, slow_rank=min(700, n - 1), slow_rank_extra_ms=20.0,
                            slow_link=(9, 10) if n > 10 else (0, 1), bandwidth_cut=0.8)
    t0 = time.perf_counter()
    run = out / plan.default_name()
    gen_cluster.generate(plan, run)
    print(f"cluster: {run} ({n} ranks; planted slow rank {plan.slow_rank}, slow link "
          f"{plan.slow_link[0]}->{plan.slow_link[1]}; ready in {time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    cache_dir = out / "cluster_bench_cache"
    rows = []
    for phase in [p.strip() for p in a.phases.split(",") if p.strip()]:
        if phase == "cold":
            shutil.rmtree(cache_dir, ignore_errors=True)
            rows.append(measure("cold", run, cache_dir, workers=a.workers))
        elif phase == "cached":
            rows.append(measure("cached", run, cache_dir, workers=a.workers))
        elif phase == "summaries":
            dropped = _drop_run_records(cache_dir)
            rows.append(dict(measure("summaries", run, cache_dir, workers=a.workers), dropped_run_records=dropped))
        elif phase == "dask":
            try:
                lc = _dask_cluster(a.dask_workers)
            except ImportError:
                rows.append({"phase": "dask", "error": "distributed is not installed (pip install -e '.[dask]')"})
                continue
            with lc:
                row = measure("dask", run, cache_dir, scheduler=lc.scheduler_address)
                try:
                    row["workers_peak_rss_mb"] = _workers_hwm(lc.scheduler_address)
                except Exception as e:  # noqa: BLE001 - a figure, not the measurement
                    row["workers_peak_rss_mb"] = []
                    print(f"dask workers' memory: {e}", file=sys.stderr)
            rows.append(row)
        else:
            ap.error(f"unknown phase {phase!r}")
        print(f"{phase}: {json.dumps({k: rows[-1].get(k) for k in ('wall_s', 'process_wall_s', 'tree_peak_rss_mb', 'error')})}",
              file=sys.stderr)
    if a.also_clean:
        clean = gen_cluster.Plan(ranks=n)
        crun = out / clean.default_name()
        gen_cluster.generate(clean, crun)
        ccache = out / "cluster_bench_cache_clean"
        shutil.rmtree(ccache, ignore_errors=True)
        rows.append(dict(measure("cold", crun, ccache, workers=a.workers), phase="cold (clean run)"))
        shutil.rmtree(ccache, ignore_errors=True)
    print(table(rows))
    res = out / "results"
    res.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    doc = {"ranks": n, "run": str(run), "plan": gen_cluster.manifest_of(plan), "machine": machine_info(),
           "load_avg": os.getloadavg(), "rows": rows}
    (res / f"cluster-bench-{stamp}.json").write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")
    return 0 if all(not r.get("error") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
