"""Building the three runs, and expected.json: their figures, the diffs between pairs and the
planted regressions."""
from __future__ import annotations

from .common import KINDS, MIB, NPU_ONLY, RUNS
from .timeline import Run
from .figures import figures, memory_timeline


HOST0 = {"GPU": (4_203_617_902_137_415, 416), "NPU": (1_737_353_612_408_261_530, 732)}
METRICS = ("computing", "matmul_cube", "vector", "vector_trans", "vector_notrans", "uncovered_communication",
           "wait", "transmit", "communication", "free", "sdma", "e2e")


def build():
    runs = {}
    for name, var in RUNS.items():
        h0, frac = HOST0[var["dev"]]
        run = Run(name, var, h0, frac)
        run.generate()
        memory_timeline(run)
        run.figs = figures(run)
        runs[name] = run
    g, t, v2 = (runs[k].memfig for k in RUNS)
    assert t["peak_allocated_bytes"] - g["peak_allocated_bytes"] == 256 * MIB, "planted memory is not exact"
    assert t["peak_reserved_bytes"] - g["peak_reserved_bytes"] == 256 * MIB
    assert v2 == t
    for run in runs.values():
        for tk in run.tasks:
            if run.dev == "NPU" and tk["kind"] not in NPU_ONLY | {"nccl", "memcpy"}:
                low = f"{KINDS[tk['kind']][1]}_{KINDS[tk['kind']][2]}_{KINDS[tk['kind']][3]}".lower()
                assert not any(w in low for w in ("cast", "transdata", "transpose")), low
    return runs


def diff(a, b):
    out = {}
    for key in ("1", "2", "total"):
        out[key] = {m + "_us": b[key][m + "_us"] - a[key][m + "_us"] for m in METRICS}
    out["memory"] = {k: b["memory"][k] - a["memory"][k] for k in ("peak_allocated_bytes", "peak_reserved_bytes")}
    return out


def expected(runs):
    f = {k: r.figs for k, r in runs.items()}
    return {
        "about": "Ground truth of samples/ (see README.md). Times in integer µs (*_us, exact) and ms (*_ms); "
                 "steps '1', '2' are device windows [first task of the step, first task of the next step), "
                 "'total' is the whole capture.",
        "runs": {k: {"device": runs[k].dev, "path": p, "figures": f[k]} for k, p in
                 (("baseline_gpu", "baseline_gpu/worker0.pt.trace.json"),
                  ("target_npu", "target_npu/rank0_ascend_pt"), ("target_npu_v2", "target_npu_v2/rank0_ascend_pt"))},
        "diffs": {"target_npu - baseline_gpu": diff(f["baseline_gpu"], f["target_npu"]),
                  "target_npu_v2 - target_npu": diff(f["target_npu"], f["target_npu_v2"])},
        "planted": PLANTED,
    }


PLANTED = [
    {"id": 1, "pair": "target_npu vs baseline_gpu", "what": "Block_1 MLP up-projection (fc1) forward matmul 2x slower",
     "where": "TinyLM_0/Block_1/MLP_1/Linear_6 aten::linear > aten::addmm (MatMulV2)", "overview_row": "Matmul",
     "per_step_us": 400, "capture_us": 800},
    {"id": 2, "pair": "target_npu vs baseline_gpu",
     "what": "NPU-only casts: 4 Cast (10 us) + 2 TransData (25 us) per step",
     "where": "npu::npu_dtype_cast (Embedding_0, CrossEntropyLoss_0, NllLossBackward0, EmbeddingBackward0), "
              "aten::npu_format_cast (Attention_0, Attention_1)", "overview_row": "Vector (Trans)",
     "per_step_us": 90, "capture_us": 180},
    {"id": 3, "pair": "target_npu vs baseline_gpu", "what": "all-reduce 1000 us (NCCL) -> 1500 us (HCCL), "
     "of which 400 us Notify_Wait on Plane 0; fully uncovered", "where": "hcom_allReduce__738_<k>_1 on "
     "'Group 0 Communication'", "overview_row": "Uncovered Communication Time / Wait",
     "per_step_us": 500, "capture_us": 1000, "wait_per_step_us": 400, "wait_capture_us": 800},
    {"id": 4, "pair": "target_npu vs baseline_gpu", "what": "Block_1 GELU keeps an extra 256 MiB buffer from "
     "forward to GeluBackward0", "where": "TinyLM_0/Block_1/MLP_1/GELU_1 aten::gelu", "overview_row": "Mem Usage",
     "peak_bytes": 256 * MIB},
    {"id": 5, "pair": "target_npu_v2 vs target_npu", "what": "fc1 of Block_1 back to 400 us",
     "overview_row": "Matmul", "per_step_us": -400, "capture_us": -800},
    {"id": 6, "pair": "target_npu_v2 vs target_npu", "what": "every LayerNorm kernel 1.5x (fwd 30->45, bwd "
     "40->60 and 20->30 us; 5 LayerNorms)", "overview_row": "Vector (No Trans)", "per_step_us": 225,
     "capture_us": 450},
    {"id": 7, "pair": "target_npu_v2 vs target_npu", "what": "all-reduce 1500 -> 1200 us, Notify_Wait 400 -> 100 us",
     "overview_row": "Uncovered Communication Time / Wait", "per_step_us": -300, "capture_us": -600,
     "wait_per_step_us": -300, "wait_capture_us": -600},
]
