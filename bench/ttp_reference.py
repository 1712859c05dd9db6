"""Reference goldens from torch-tb-profiler 0.4.3 (the PyTorch Profiler TensorBoard plugin).

This module owns the script that runs the REAL plugin parser (PyPI ``torch-tb-profiler==0.4.3``)
on every Kineto trace of the corpus and on the GPU sample, and writes one small, deterministic
JSON per trace to ``tests/golden/ttp/``: per step its window and the eight breakdown parts of the
plugin's overview, the per-device GPU Summary figures (GPU Utilization, Est. SM Efficiency,
Est. Achieved Occupancy, Kernel Time using Tensor Cores), and the kernel view's per-kernel rows.

It never runs inside tb-compare and is not a dependency of it: torch-tb-profiler registers its
own TensorBoard plugin, so it lives in a separate venv (see tests/golden/ttp/README.md)::

    python3 -m venv /work/ttp_venv && /work/ttp_venv/bin/pip install torch-tb-profiler==0.4.3
    /work/ttp_venv/bin/python -m bench.ttp_reference --out tests/golden/ttp [--corpus ../shared/corpus]

How the plugin defines each figure, and where it is wrong, is in docs/reference_ttp.md.
Nothing here re-implements a figure: numbers are read from the plugin's own objects; the only
thing added is a record of the step windows it used (captured by wrapping two of its methods
without changing what they do).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import logging
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNEL_ROWS_KEPT = 50           # kernel-view rows written per trace (top by total duration)
PARTS = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other")
SHOWN_NAMES = ("Kernel", "Memcpy", "Memset", "Communication", "Runtime", "DataLoader", "CPU Exec", "Other")


def _r(x, nd=3):
    """Round a figure for the JSON (1 ns for times); None stays None."""
    if x is None:
        return None
    return round(float(x), nd)


class _Capture:
    """Wraps EventParser.update_device_steps / _find_device_steps and GPUMetricsParser.parse_events
    to record the step windows the plugin computed (host windows, device extents, final windows,
    the span used for the GPU metrics). Behaviour of the wrapped methods is unchanged."""

    def __init__(self):
        from torch_tb_profiler.profiler import event_parser, gpu_metrics_parser
        self.ep = event_parser.EventParser
        self.gp = gpu_metrics_parser.GPUMetricsParser
        self.rec: dict = {}
        self._orig = (self.ep.update_device_steps, self.ep._find_device_steps, self.gp.__dict__["parse_events"])

    def __enter__(self):
        rec = self.rec
        orig_update, orig_find, orig_gpu = self._orig

        def update_device_steps(parser, runtime_node_list):
            rec["host_steps"] = list(parser.steps)
            rec["host_names"] = list(parser.steps_names)
            out = orig_update(parser, runtime_node_list)
            rec["final_steps"] = list(parser.steps)
            rec["final_names"] = list(parser.steps_names)
            return out

        def find_device_steps(parser, runtime_node_list):
            prev_end, steps_device, matched = orig_find(parser, runtime_node_list)
            rec["prev_step_end_time"] = prev_end
            rec["steps_device"] = list(steps_device)
            rec["steps_matched_device_nodes"] = list(matched)
            return prev_end, steps_device, matched

        def parse_events(cls, events, global_start, global_end, steps_start, steps_end):
            rec["gpu_span"] = (steps_start, steps_end)
            return orig_gpu.__func__(cls, events, global_start, global_end, steps_start, steps_end)

        self.ep.update_device_steps = update_device_steps
        self.ep._find_device_steps = find_device_steps
        self.gp.parse_events = classmethod(parse_events)
        return self

    def __exit__(self, *exc):
        self.ep.update_device_steps, self.ep._find_device_steps, gpu = self._orig
        self.gp.parse_events = gpu
        return False


PATCHES = {
    "P1_cuda_runtime": "cat cuda_runtime and cuda_driver are Runtime (0.4.3 knows only 'Runtime')",
    "P2_no_gpu_annotations": "gpu_user_annotation events are ignored (no GPU-side copy of ProfilerStep#N as a step, "
                             "no GPU-timeline nccl:* span as Communication)",
    "P3_user_annotations": "host user_annotation scopes are kept like the old cat Operator scopes "
                           "(DataLoader __next__ -> DataLoader, other scopes -> CPU Exec)",
    "P4_collectives": "every nccl:*/gloo:* host op is a collective, and kernels named nccl* (NCCL/RCCL) are "
                      "Communication",
}


class _Patched:
    """Fixes the four classification bugs B1-B4 of docs/reference_ttp.md inside 0.4.3 for the
    duration of a parse, so the plugin's own algorithm (windows, priority rule, metric formulas)
    runs on correctly classified events. Everything else is untouched."""

    class _Prefixes:
        def __init__(self, prefix):
            self.prefix = prefix

        def __contains__(self, name):
            return isinstance(name, str) and name.startswith(self.prefix)

    def __enter__(self):
        from torch_tb_profiler.profiler import event_parser, node, trace
        self.mods = (trace, event_parser, node)
        self.saved = {
            "map": dict(trace.EventTypeMap),
            "create": trace.create_trace_event,
            "parse_step": event_parser.StepParser._parse_step,
            "sets": [(m, m.NcclOpNameSet, m.GlooOpNameSet) for m in self.mods],
        }
        trace.EventTypeMap["cuda_runtime"] = trace.EventTypes.RUNTIME          # P1
        trace.EventTypeMap["cuda_driver"] = trace.EventTypes.RUNTIME
        orig_create = self.saved["create"]

        def create_trace_event(event, is_pytorch_lightning):
            cat = (event.get("cat") or "").lower()
            if cat == "gpu_user_annotation":                                   # P2
                return None
            if cat == "user_annotation":                                       # P3
                name = event.get("name") or ""
                if not name.startswith("ProfilerStep#"):
                    return trace.OperatorEvent(trace.EventTypes.USER_ANNOTATION, event)
            return orig_create(event, is_pytorch_lightning)

        trace.create_trace_event = create_trace_event
        for m in self.mods:                                                    # P4, host side
            m.NcclOpNameSet = self._Prefixes("nccl:")
            m.GlooOpNameSet = self._Prefixes("gloo:")
        orig_step = self.saved["parse_step"]

        class _WithKernel:
            def __init__(self, base, ext):
                self.base, self.ext = base, ext

            def __contains__(self, k):
                return k == self.ext or k in self.base

        def _parse_step(parser, event, comm_nodes):                            # P4, kernels
            if event.type == trace.EventTypes.KERNEL and (event.name or "").lower().startswith("nccl"):
                comm_nodes = _WithKernel(comm_nodes, event.external_id)
            return orig_step(parser, event, comm_nodes)

        event_parser.StepParser._parse_step = _parse_step
        return self

    def __exit__(self, *exc):
        trace, event_parser, node = self.mods
        trace.EventTypeMap.clear()
        trace.EventTypeMap.update(self.saved["map"])
        trace.create_trace_event = self.saved["create"]
        event_parser.StepParser._parse_step = self.saved["parse_step"]
        for m, nccl, gloo in self.saved["sets"]:
            m.NcclOpNameSet, m.GlooOpNameSet = nccl, gloo
        return False


class _WarningCounter(logging.Handler):
    """Counts the plugin's log warnings by template (digits replaced by N)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.counts: Counter = Counter()

    def emit(self, record):
        msg = re.sub(r"\d+(\.\d+)?", "N", record.getMessage().strip())
        self.counts[msg[:200]] += 1


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _device_extent(se):
    import sys as _s
    if se is None or se[0] == _s.maxsize:
        return None
    return [_r(se[0]), _r(se[1])]


def reference(path: Path, source: str, cache_dir: str, patched: bool = False) -> dict:
    """Run torch-tb-profiler's parser on one trace and return the golden dict; with ``patched``,
    under the fixes of PATCHES (the goldens in tests/golden/ttp/patched/)."""
    import contextlib
    from importlib.metadata import version

    from torch_tb_profiler import consts
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.event_parser import ProfileRole
    from torch_tb_profiler.profiler.run_generator import RunGenerator

    m = consts.WORKER_PATTERN.match(path.name)
    worker, span = (m.group(1), (m.group(2) or "").lstrip(".")) if m else (path.stem, "")

    logger = logging.getLogger(consts.PLUGIN_NAME)
    counter = _WarningCounter()
    logger.addHandler(counter)
    try:
        with _Capture() as cap, (_Patched() if patched else contextlib.nullcontext()):
            # parse() = read + RunProfileData(...) + .process() + .analyze() (data.py from_json)
            data = RunProfileData.parse(worker, span, str(path), cache_dir)
            run = RunGenerator(worker, span, data).generate_run_profile()
    finally:
        logger.removeHandler(counter)
    rec = cap.rec

    # ---- overview: per-step breakdown, exactly the numbers of the overview's step rows
    columns = [c["name"] for c in run.overview["steps"]["columns"] if "name" in c][1:]
    rows = run.overview["steps"]["rows"]
    roles = [ProfileRole.Kernel, ProfileRole.Memcpy, ProfileRole.Memset, ProfileRole.Communication,
             ProfileRole.Runtime, ProfileRole.DataLoader, ProfileRole.CpuOp, ProfileRole.Other]
    final = rec.get("final_steps") or []
    host = rec.get("host_steps") or []
    steps = []
    for i, costs in enumerate(data.steps_costs):
        row = [x for x in rows[i][1:] if not isinstance(x, str)]
        shown = dict(zip(columns, row))
        parts = {p: _r(costs.costs[role]) for p, role in zip(PARTS, roles)}
        for p, name in zip(PARTS, SHOWN_NAMES):       # the row shows the same numbers
            if name in shown:
                assert abs(shown[name] - costs.costs[roles[PARTS.index(p)]]) < 1e-9, (name, shown[name])
        name = data.steps_names[i]
        st = {
            "name": name,
            "step": int(name),
            "host_window_us": [_r(host[i][0]), _r(host[i][1])] if i < len(host) else None,
            "device_extent_us": _device_extent(rec["steps_device"][i]) if "steps_device" in rec else None,
            "matched_device_nodes": rec["steps_matched_device_nodes"][i]
            if "steps_matched_device_nodes" in rec else None,
            "window_us": [_r(final[i][0]), _r(final[i][1])] if i < len(final) else None,
            "duration_us": _r(costs.costs[ProfileRole.Total]),
            "breakdown_us": parts,
            "parts_sum_us": _r(sum(costs.costs[r] for r in roles)),
        }
        steps.append(st)
    removed = (rec.get("host_names") or [])[len(rec.get("final_names") or []):]
    avg = {c["name"]: c["value"] for c in run.overview["performance"][0]["children"]}
    average = {"step_time_us": run.overview["performance"][0]["value"],
               "parts_us_rounded": {p: avg[n] for p, n in zip(PARTS, SHOWN_NAMES) if n in avg}}

    # ---- GPU Summary, per device (the plugin reports no cross-device figure)
    gm = data.gpu_metrics_parser
    shown_summary: dict = {}
    cur = None
    for item in run.gpu_summary or []:
        t = item["title"]
        if t.startswith("GPU ") and t.endswith(":"):
            cur = int(t[4:-1])
            shown_summary[cur] = {}
        elif cur is not None and t != "<hr/>":
            shown_summary[cur][t] = item["value"]
    devices = []
    for gid in sorted(gm.gpu_ids):
        tc = data.tc_ratio[gid] if data.tc_ratio is not None else None
        devices.append({
            "device": gid,
            "gpu_utilization": _r(gm.gpu_utilization[gid], 6),
            "sm_efficiency": _r(gm.avg_approximated_sm_efficiency_per_device[gid], 6),
            "achieved_occupancy_pct": _r(gm.avg_occupancy_per_device[gid], 4),
            "tensor_core_ratio": _r(tc, 6),
            "shown": shown_summary.get(gid, {}),
        })
    span_ = rec.get("gpu_span")

    # ---- kernel view (all kernel events of the trace, grouped by name)
    kernel_view = None
    if data.has_kernel and data.kernel_stat is not None:
        ks = data.kernel_stat
        has_bps, has_occ = gm.has_blocks_per_sm, gm.has_occupancy
        allrows = []
        for name, row in ks.iterrows():
            allrows.append({
                "name": str(name),
                "calls": int(row["count"]),
                "total_duration_us": _r(row["sum"]),
                "tensor_cores_used": bool(row["tc_used"]),
                "mean_blocks_per_sm": _r(row["blocks_per_sm"], 4) if has_bps else None,
                "mean_est_achieved_occupancy_pct": _r(row["occupancy"], 4) if has_occ else None,
            })
        allrows.sort(key=lambda r: (-r["total_duration_us"], r["name"]))
        kept = allrows[:KERNEL_ROWS_KEPT]
        kernel_view = {
            "distinct_kernels": len(allrows),
            "rows_kept": len(kept),
            "kernel_calls_all": int(ks["count"].sum()),
            "total_duration_us_all": _r(ks["sum"].sum()),
            "total_duration_us_dropped_rows": _r(sum(r["total_duration_us"] for r in allrows[KERNEL_ROWS_KEPT:])),
            "tensor_cores_used_ratio": _r(data.tc_used_ratio, 6),
            "columns_shown": [c["name"] for c in run.kernel_table["data"]["columns"]],
            "rows": kept,
        }

    return {
        "generator": "bench/ttp_reference.py",
        "plugin": {"name": "torch-tb-profiler", "version": version("torch-tb-profiler"),
                   "pandas": version("pandas"), "numpy": version("numpy")},
        "patches": PATCHES if patched else {},
        "source": source,
        "source_sha256": _sha256(path),
        "units": "microseconds; times rounded to 0.001 us, ratios to 1e-6; achieved occupancy in percent",
        "flags": {"has_runtime": bool(data.has_runtime), "has_kernel": bool(data.has_kernel),
                  "has_communication": bool(data.has_communication),
                  "has_memcpy_or_memset": bool(data.has_memcpy_or_memset),
                  "used_devices": [int(d) for d in data.used_devices],
                  "step_windows_extended_to_device": rec.get("prev_step_end_time") is not None},
        "overview": {
            "columns_shown": columns,
            "steps": steps,
            "removed_tail_steps": removed,
            "average": average,
        },
        "gpu": {"steps_span_us": [_r(span_[0]), _r(span_[1])] if span_ else None, "devices": devices},
        "kernel_view": kernel_view,
        "plugin_warnings": [{"message": k, "count": v} for k, v in sorted(counter.counts.items())],
    }


def dumps(obj, indent: int = 0, width: int = 110) -> str:
    """JSON with one line per small object/list (steps, kernel rows, windows), indented above that."""
    flat = json.dumps(obj, ensure_ascii=False)
    if not isinstance(obj, (dict, list)) or len(flat) + indent <= width:
        return flat
    pad = " " * (indent + 1)
    if isinstance(obj, dict):
        items = [f"{pad}{json.dumps(k)}: {dumps(v, indent + 1, width)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + dumps(v, indent + 1, width) for v in obj]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def traces(corpus: Path, samples: Path):
    """(path, source label, golden file stem) of every Kineto trace to reference."""
    out = []
    for p in sorted((corpus / "gpu").rglob("*.pt.trace.json*")):
        rel = p.relative_to(corpus)
        stem = "__".join(rel.parts[1:]).replace(".pt.trace.json.gz", "").replace(".pt.trace.json", "")
        out.append((p, f"corpus/{rel.as_posix()}", stem))
    for p in sorted(samples.glob("*/*.pt.trace.json*")):
        rel = p.relative_to(samples.parent)
        stem = "samples__" + "__".join(p.relative_to(samples).parts).replace(".pt.trace.json.gz", "").replace(
            ".pt.trace.json", "")
        out.append((p, rel.as_posix(), stem))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "tests" / "golden" / "ttp"))
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    ap.add_argument("--samples", default=str(ROOT / "samples"))
    ap.add_argument("--only", default="", help="substring filter on the golden file name")
    ap.add_argument("--patched", action="store_true",
                    help="run 0.4.3 with the classification fixes P1-P4 and write to <out>/patched/")
    args = ap.parse_args(argv)
    logging.getLogger("pytorch_profiler").setLevel(logging.WARNING)
    logging.getLogger("pytorch_profiler").propagate = False
    out = Path(args.out) / ("patched" if args.patched else "")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ttp-ref-") as cache:
        for path, source, stem in traces(Path(args.corpus), Path(args.samples)):
            if args.only and args.only not in stem:
                continue
            g = reference(path, source, cache, patched=args.patched)
            dst = out / f"{stem}.json"
            dst.write_text(dumps(g) + "\n")
            print(f"{dst}: {len(g['overview']['steps'])} steps, "
                  f"{len(g['gpu']['devices'])} device(s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
