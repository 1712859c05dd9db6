#!/usr/bin/env python3
"""Print the tables of docs/parse_counts.md: what the current loaders read from each corpus
worker of the golden pairs, next to the parse counts the reference reported
(``../shared/spec/golden/*/internals.json``), and the SQLite export's counts next to the text
export of the same job.  Figures are computed the way tests/test_loader_*.py check them.

    python scripts/parse_counts.py            # markdown on stdout
"""
from __future__ import annotations

import collections
import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("TB_COMPARE_SHARED", ROOT.parent / "shared"))
CORPUS, GOLDEN = SHARED / "corpus", SHARED / "spec" / "golden"
sys.path.insert(0, str(ROOT))

from tb_compare_plugin.loaders import ascend_db, ascend_text, kineto_json  # noqa: E402

NPU_TEXT = {"l1r0": "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt",
            "l1r1": "npu/alexnet_ddp_2rank_level1/rank1_ascend_pt",
            "l0r0": "npu/alexnet_ddp_2rank_level0/rank0_ascend_pt"}
GPU = {"iv control": ("gpu/hta_trace_diff/control/control.pt.trace.json.gz", "iv_gpu_hta_control_vs_test",
                      "baseline_side"),
       "iv test": ("gpu/hta_trace_diff/test/test.pt.trace.json.gz", "iv_gpu_hta_control_vs_test", "target_side"),
       "iii resnet50": ("gpu/kineto_resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
                        "iii_gpu_resnet50_vs_npu_l1r0", "baseline_side")}
NPU_REF = {"l1r0": ("i_npu_l1r0_vs_l1r1", "baseline_side"), "l1r1": ("i_npu_l1r0_vs_l1r1", "target_side"),
           "l0r0": ("ii_npu_l0r0_vs_l1r0", "baseline_side")}


def ref_counts(run: str, side: str) -> dict:
    return json.loads((GOLDEN / run / "internals.json").read_text())[side]["parsed_counts"]


def names(p, col, table) -> np.ndarray:
    return p.symbols.as_array()[getattr(p, table)[col].to_numpy()]


def fmt(x) -> str:
    if isinstance(x, float):
        return f"{x:,.4f}".rstrip("0").rstrip(".")
    return f"{x:,}" if isinstance(x, (int, np.integer)) else str(x)


def npu_counts(p) -> dict:
    """The reference's parse counts, as tests/test_loader_ascend_text.py computes them."""
    ops, k, co = p.ops, p.kernels, p.comm_ops
    cpu = ops[names(p, "cat", "ops") == "cpu_op"]
    linked = int((k["launch_op"] >= 0).sum()) + int((co["launch_op"] >= 0).sum())
    points = set(k.loc[k["launch_op"] >= 0, "flow_start_ns"]) | set(ops["start_ns"].to_numpy()[co["launch_op"]])
    detail = k[k["detail"] & (k["type"] != 0)]
    comm = {}
    for t in sorted(set(names(p, "op_type", "comm_ops"))):
        of = np.flatnonzero(names(p, "op_type", "comm_ops") == t)
        tasks = p.comm_tasks[np.isin(p.comm_tasks["comm_op"], of)]
        comm[t] = {"ops": len(of), "op_total_us": co["dur_ns"].to_numpy()[of].sum() / 1000,
                   "tasks": dict(collections.Counter(p.names(tasks["name"])))}
    return {"torch_op_events": len(cpu), "python_function_events": len(p.pyfuncs),
            "nn_module_events": int(p.pyfuncs["is_module"].sum()), "fwdbwd_flow_pairs": len(p.fwdbwd),
            "bwd_tid": p.meta.bwd_tid, "kernel_dict_launch_points": len(points),
            "kernels_linked_to_launch_points": linked, "memory_records": len(p.mem_allocs),
            "memory_records_total_size_kb": float(p.mem_allocs["bytes"].sum() / 1024),
            "kernel_details_type_shape_groups": len(detail.groupby(["type", "input_shapes"])),
            "communication": comm}


def gpu_counts(p) -> dict:
    """As tests/test_loader_kineto.py: device events are cat kernel / gpu_memcpy (2021: Kernel,
    Memcpy); launch points are the distinct launching ops of those."""
    cats = np.char.lower(np.array(p.names(p.kernels.task_type), dtype=str))
    picked = np.isin(cats, ["kernel", "gpu_memcpy"])
    lo = p.kernels.launch_op.to_numpy()[picked]
    return {"torch_op_events": len(p.ops), "kernel_dict_launch_points": len(np.unique(lo[lo >= 0])),
            "kernels_linked_to_launch_points": int((lo >= 0).sum()), "memory_records": len(p.mem_allocs),
            "memory_records_total_size_kb": float(p.mem_allocs.bytes.sum() / 1024),
            "comm_ops": len(p.comm_ops), "comm_total_us": float(p.comm_ops.dur_ns.sum() / 1000)}


def main() -> None:
    print("## Ascend text export\n")
    npu = {w: npu_counts(ascend_text.load(str(CORPUS / rel))) for w, rel in NPU_TEXT.items()}
    refs = {w: ref_counts(*NPU_REF[w]) for w in NPU_TEXT}
    print("| item | " + " | ".join(f"{w} ours / reference" for w in NPU_TEXT) + " |")
    print("| --- |" + " --- |" * len(NPU_TEXT))
    for key in ("torch_op_events", "python_function_events", "nn_module_events", "fwdbwd_flow_pairs", "bwd_tid",
                "kernel_dict_launch_points", "kernels_linked_to_launch_points", "memory_records",
                "memory_records_total_size_kb", "kernel_details_type_shape_groups"):
        print(f"| {key} | " + " | ".join(f"{fmt(npu[w][key])} / {fmt(refs[w][key])}" for w in NPU_TEXT) + " |")
    print("\n| worker | collective | ops ours / reference | total µs ours / reference | HCCL tasks |")
    print("| --- | --- | --- | --- | --- |")
    for w in NPU_TEXT:
        for t, c in npu[w]["communication"].items():
            r = refs[w]["communication"].get(t, {})
            tasks = ("none (level0 trace has no HCCL planes)" if not c["tasks"] and not r.get("tasks") else
                     ", ".join(f"{n} {v}" for n, v in c["tasks"].items()) + (" (same)" if c["tasks"] == r.get("tasks")
                                                                             else f" (reference: {r.get('tasks')})"))
            print(f"| {w} | {t} | {c['ops']} / {r.get('ops')} | {fmt(c['op_total_us'])} / {fmt(r.get('op_total_us'))} "
                  f"| {tasks} |")
    print("\n## Ascend SQLite export against the text export of the same job\n")
    print("| worker | cpu_op (db / text) | python_function | modules | kernels | detail kernels (db / CSV rows) "
          "| comm ops | memory records |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for lvl in (0, 1):
        for r in (0, 1):
            db = ascend_db.load(str(CORPUS / f"npu/alexnet_ddp_2rank_db_level{lvl}/rank{r}_ascend_pt"))
            tx = ascend_text.load(str(CORPUS / f"npu/alexnet_ddp_2rank_level{lvl}/rank{r}_ascend_pt"))
            row = []
            for p in (db, tx):
                c = collections.Counter(names(p, "cat", "ops"))
                row.append((c["cpu_op"], len(p.pyfuncs), int(p.pyfuncs["is_module"].sum()), len(p.kernels),
                            int(p.kernels["detail"].sum()), len(p.comm_ops), len(p.mem_allocs)))
            print(f"| level{lvl} rank{r} | " + " | ".join(f"{a:,} / {b:,}" for a, b in zip(*row)) + " |")

    print("\n## Kineto GPU traces\n")
    print("| trace | host ops | launch points | device events linked | memory records / KB | NCCL ops / µs |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label, (rel, run, side) in GPU.items():
        g, r = gpu_counts(kineto_json.load(str(CORPUS / rel))), ref_counts(run, side)
        rc = next(iter(r["communication"].values()), {"ops": 0, "op_total_us": 0})
        print(f"| {label} ours | {g['torch_op_events']:,} | {g['kernel_dict_launch_points']:,} | "
              f"{g['kernels_linked_to_launch_points']:,} | {g['memory_records']:,} / "
              f"{fmt(g['memory_records_total_size_kb'])} | {g['comm_ops']} / {fmt(g['comm_total_us'])} |")
        print(f"| {label} reference | {r['torch_op_events']:,} | {r['kernel_dict_launch_points']:,} | "
              f"{r['kernels_linked_to_launch_points']:,} | {r['memory_records']:,} / "
              f"{fmt(r['memory_records_total_size_kb'])} | {rc['ops']} / {fmt(rc['op_total_us'])} |")


if __name__ == "__main__":
    main()
