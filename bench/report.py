"""Benchmark results as a markdown table and a JSON file."""
from __future__ import annotations

import json
import time
from pathlib import Path

_MAIN_TABLES = ("kernels", "ops", "pyfuncs", "comm_ops", "mem_allocs", "mem_records", "steps")


def _f(v, fmt: str) -> str:
    return "–" if v is None else format(v, fmt)


def _note(r: dict) -> str:
    if r.get("status") != "ok":
        return (r.get("error") or r.get("status") or "").replace("|", "/")[:160]
    parts = []
    counts = r.get("counts") or {}
    if counts:
        parts.append(" ".join(f"{k}={counts[k]}" for k in _MAIN_TABLES if counts.get(k)))
    sc = r.get("scale_check")
    if sc:
        mm = sc["mismatch"]
        parts.append(f"counts = {sc['copies']}x source" if not mm else
                     "NOT copies x source: " + ", ".join(f"{k} {v['got']}≠{v['expected']}" for k, v in mm.items()))
    if r.get("warnings"):
        parts.append(f"{len(r['warnings'])} warning(s)")
    if r.get("runs") and len(r.get("samples", [])) > r["runs"]:
        parts.append(f"{len(r['samples']) - r['runs']} failed run(s)")
    return "; ".join(p for p in parts if p).replace("|", "/")


def markdown(rows: list) -> str:
    head = ("| phase | input | fmt | disk MB | data MB | runs | median wall s | MB/s | median peak RSS MB "
            "| RSS before MB | RSS/data | notes |")
    lines = [head, "|" + "---|" * 12]
    for r in rows:
        data_mb = r["data_bytes"] / 1e6
        wall, rss = r.get("wall_s"), r.get("peak_rss_mb")
        rate = data_mb / wall if wall else None
        ratio = rss / data_mb if (rss is not None and data_mb) else None
        lines.append(f"| {r['phase']} | {r['input']} | {r['fmt']} | {r['disk_bytes'] / 1e6:.1f} | {data_mb:.1f} "
                     f"| {r.get('runs', 0)} | {_f(wall, '.3f')} | {_f(rate, '.1f')} | {_f(rss, '.0f')} "
                     f"| {_f(r.get('rss_before_mb'), '.0f')} | {_f(ratio, '.2f')} | {_note(r)} |")
    return "\n".join(lines)


def write_json(rows: list, meta: dict, out: Path) -> Path:
    res_dir = out / "results"
    res_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    doc = {"created": time.strftime("%Y-%m-%dT%H:%M:%S"), **meta,
           "rows": [{k: (str(v) if isinstance(v, Path) else v) for k, v in r.items()} for r in rows]}
    path = res_dir / f"bench-{stamp}.json"
    text = json.dumps(doc, indent=1, default=str)
    path.write_text(text)
    (res_dir / "latest.json").write_text(text)
    return path


def versus_reference(rows: list) -> str:
    """Per pair: our end-to-end and cached times against the reference's, measured in the same run."""
    by = {}
    for r in rows:
        if r["phase"] in ("cli", "cli_cached", "reference") and r.get("status") == "ok":
            by.setdefault(r["input"], {})[r["phase"]] = r
    lines = ["| pair | data MB | tb-compare s (RSS MB) | cached s | reference s (RSS MB) | speed-up | RSS ratio |",
             "|---|---|---|---|---|---|---|"]
    for pair, d in by.items():
        c, cc, ref = d.get("cli"), d.get("cli_cached"), d.get("reference")
        if not (c or ref):
            continue
        speed = ref["wall_s"] / c["wall_s"] if (c and ref) else None
        rss = ref["peak_rss_mb"] / c["peak_rss_mb"] if (c and ref and c["peak_rss_mb"]) else None
        data = (c or ref)["data_bytes"] / 1e6
        lines.append(f"| {pair} | {data:.0f} | {_f(c and c['wall_s'], '.2f')} ({_f(c and c['peak_rss_mb'], '.0f')}) "
                     f"| {_f(cc and cc['wall_s'], '.2f')} | {_f(ref and ref['wall_s'], '.1f')} "
                     f"({_f(ref and ref['peak_rss_mb'], '.0f')}) | {_f(speed, '.1f')}x | {_f(rss, '.1f')}x |")
    return "\n".join(lines) if len(lines) > 2 else ""
