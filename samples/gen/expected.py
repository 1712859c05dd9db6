"""Building the three runs, and expected.json: their figures, the diffs between pairs and the
planted regressions."""
from __future__ import annotations

import statistics

from .common import KINDS, MEMCPY_US, MIB, NPU_ONLY, NSTEPS, OPT_EXTRA_US, RUNS, STALL_US
from .timeline import Run
from .figures import STEP_FIGURES, figures, memory_timeline, step_phases


# (host clock origin ns, device timestamp fraction ns); origin % 1000 + 1 == fraction on both, so a step's
# iteration gap (first device task - ProfilerStep start) has the same sub-µs part on every side
HOST0 = {"GPU": (4_203_617_902_137_415, 416), "NPU": (1_737_353_612_408_261_731, 732)}
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
        run.step_figs = step_phases(run)
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
    for key in [str(i) for i in range(1, NSTEPS + 1)] + ["total"]:
        out[key] = {m + "_us": b[key][m + "_us"] - a[key][m + "_us"] for m in METRICS}
    out["memory"] = {k: b["memory"][k] - a["memory"][k] for k in ("peak_allocated_bytes", "peak_reserved_bytes")}
    return out


# expected.json "steps": figure -> the metric name of the steps comparison (engines/steps.py)
STEP_METRICS = {"duration": "step_time", "iteration_gap": "phases.iteration_gap", "fwd_bwd": "phases.fwd_bwd",
                "tail": "phases.tail", "tail_compute": "phases.tail_compute",
                "tail_communication": "phases.tail_communication", "tail_idle": None,
                "dataloader": "breakdown.dataloader", "memcpy": "breakdown.memcpy"}
LEAF_PHASES = ("iteration_gap", "fwd_bwd", "tail_compute", "tail_communication")


def _ms(ns) -> float:
    return round(ns / 1e6, 6)


def _stats(values_ns):
    v = [x / 1e6 for x in values_ns]
    return {"mean_ms": round(statistics.fmean(v), 6), "min_ms": round(min(v), 6), "max_ms": round(max(v), 6),
            "stdev_ms": round(statistics.stdev(v), 6), "n": len(v)}


def steps_section(runs):
    out = {
        "about": "Per run, per step (ProfilerStep#N host window): the step-level figures, in ms (exact to the ns). "
                 "iteration_gap = ProfilerStep#N start -> the step's first device task; fwd_bwd = first device "
                 "task -> end of the last compute task of the forward/backward pass (everything launched before "
                 "Optimizer.step); tail = that end -> ProfilerStep#N end (the three add up to duration); "
                 "tail_compute = compute task time in the tail (the optimizer); tail_communication = collective "
                 "time in the tail not covered by compute (the all-reduce); tail_idle = the rest of the tail; "
                 "dataloader = the DataLoader __next__ host op; memcpy = the HtoD copy. stats: mean, min, max, "
                 "sample stdev (n-1), n over the steps. 'metric' gives each figure's name in the steps "
                 "comparison (tb-compare --json \"steps\").",
        "metric": STEP_METRICS,
        "runs": {},
        "diffs": {},
    }
    for name, run in runs.items():
        rows = run.step_figs
        t0 = rows[0]["start_ns"]
        out["runs"][name] = {
            "steps": [dict({"step": r["step"], "start_ms": _ms(r["start_ns"] - t0)},
                           **{k + "_ms": _ms(r[k]) for k in STEP_FIGURES}) for r in rows],
            "stats": {k: _stats([r[k] for r in rows]) for k in STEP_FIGURES}}
    for pair, (a, b) in (("target_npu - baseline_gpu", ("baseline_gpu", "target_npu")),
                         ("target_npu_v2 - target_npu", ("target_npu", "target_npu_v2"))):
        ra, rb = runs[a].step_figs, runs[b].step_figs
        d = {}
        for k in STEP_FIGURES:
            per = [_ms(y[k] - x[k]) for x, y in zip(ra, rb)]
            d[k] = {"per_step_ms": per, "mean_ms": round(_stats([y[k] for y in rb])["mean_ms"]
                                                           - _stats([x[k] for x in ra])["mean_ms"], 6)}
        ranked = sorted(LEAF_PHASES, key=lambda k: -abs(d[k]["mean_ms"]))
        d["leaf_phase_ranking"] = ["phases." + k for k in ranked if abs(d[k]["mean_ms"]) >= 0.001]
        out["diffs"][pair] = d
    out["planted"] = STEP_PLANTED
    return out


def expected(runs):
    f = {k: r.figs for k, r in runs.items()}
    return {
        "about": f"Ground truth of samples/ (see README.md). Times in integer µs (*_us, exact) and ms (*_ms); "
                 f"steps '1' .. '{NSTEPS}' are device windows [first task of the step, first task of the next "
                 f"step), the last one ends at its last task; 'total' is the whole capture. 'steps' holds the "
                 f"step-level figures (ProfilerStep#N host windows) and the planted step-level differences.",
        "runs": {k: {"device": runs[k].dev, "path": p, "figures": f[k]} for k, p in
                 (("baseline_gpu", "baseline_gpu/worker0.pt.trace.json"),
                  ("target_npu", "target_npu/rank0_ascend_pt"), ("target_npu_v2", "target_npu_v2/rank0_ascend_pt"))},
        "diffs": {"target_npu - baseline_gpu": diff(f["baseline_gpu"], f["target_npu"]),
                  "target_npu_v2 - target_npu": diff(f["target_npu"], f["target_npu_v2"])},
        "planted": PLANTED,
        "steps": steps_section(runs),
    }


PLANTED = [
    {"id": 1, "pair": "target_npu vs baseline_gpu", "what": "Block_1 MLP up-projection (fc1) forward matmul 2x slower",
     "where": "TinyLM_0/Block_1/MLP_1/Linear_6 aten::linear > aten::addmm (MatMulV2)", "overview_row": "Matmul",
     "per_step_us": 400, "capture_us": 400 * NSTEPS},
    {"id": 2, "pair": "target_npu vs baseline_gpu",
     "what": "NPU-only casts: 4 Cast (10 us) + 2 TransData (25 us) per step",
     "where": "npu::npu_dtype_cast (Embedding_0, CrossEntropyLoss_0, NllLossBackward0, EmbeddingBackward0), "
              "aten::npu_format_cast (Attention_0, Attention_1)", "overview_row": "Vector (Trans)",
     "per_step_us": 90, "capture_us": 90 * NSTEPS},
    {"id": 3, "pair": "target_npu vs baseline_gpu", "what": "all-reduce 1000 us (NCCL) -> 1500 us (HCCL), "
     "of which 400 us Notify_Wait on Plane 0; fully uncovered", "where": "hcom_allReduce__738_<k>_1 on "
     "'Group 0 Communication'", "overview_row": "Uncovered Communication Time / Wait",
     "per_step_us": 500, "capture_us": 500 * NSTEPS, "wait_per_step_us": 400, "wait_capture_us": 400 * NSTEPS},
    {"id": 4, "pair": "target_npu vs baseline_gpu", "what": "Block_1 GELU keeps an extra 256 MiB buffer from "
     "forward to GeluBackward0", "where": "TinyLM_0/Block_1/MLP_1/GELU_1 aten::gelu", "overview_row": "Mem Usage",
     "peak_bytes": 256 * MIB},
    {"id": 5, "pair": "target_npu_v2 vs target_npu", "what": "fc1 of Block_1 back to 400 us",
     "overview_row": "Matmul", "per_step_us": -400, "capture_us": -400 * NSTEPS},
    {"id": 6, "pair": "target_npu_v2 vs target_npu", "what": "every LayerNorm kernel 1.5x (fwd 30->45, bwd "
     "40->60 and 20->30 us; 5 LayerNorms)", "overview_row": "Vector (No Trans)", "per_step_us": 225,
     "capture_us": 225 * NSTEPS},
    {"id": 7, "pair": "target_npu_v2 vs target_npu", "what": "all-reduce 1500 -> 1200 us, Notify_Wait 400 -> 100 us",
     "overview_row": "Uncovered Communication Time / Wait", "per_step_us": -300, "capture_us": -300 * NSTEPS,
     "wait_per_step_us": -300, "wait_capture_us": -300 * NSTEPS},
    {"id": 8, "pair": "target_npu vs baseline_gpu", "kept_in": "target_npu_v2",
     "what": f"data-loader stall: the DataLoader __next__ at the start of every step is {STALL_US} us longer; the "
             "device idles before the step's first forward task", "where": "enumerate(DataLoader)#"
     "_SingleProcessDataLoaderIter.__next__", "overview_row": "Free Time", "per_step_us": STALL_US,
     "capture_us": STALL_US * (NSTEPS - 1), "note": "in the device windows the stall of step k+1 is step-k Free "
     "(steps 1-5; none before step 1); the step-level figure is phases.iteration_gap (steps.planted)"},
    {"id": 9, "pair": "target_npu vs baseline_gpu", "kept_in": "target_npu_v2",
     "what": f"slower optimizer: the 4 AdamW foreach kernels take {sum(OPT_EXTRA_US.values())} us longer a step "
             f"({', '.join(f'{k} +{v}' for k, v in OPT_EXTRA_US.items())})", "where": "Optimizer.step#AdamW.step "
     "(aten::_foreach_*)", "overview_row": "Vector (No Trans)", "per_step_us": sum(OPT_EXTRA_US.values()),
     "capture_us": sum(OPT_EXTRA_US.values()) * NSTEPS},
]

STEP_PLANTED = [
    {"id": 8, "pair": "target_npu vs baseline_gpu", "metric": "phases.iteration_gap", "per_step_ms": STALL_US / 1000,
     "also": {"breakdown.dataloader": STALL_US / 1000, "step_time": None}, "within_noise": False,
     "what": "data-loader stall (the DataLoader __next__ host op longer; the device idles before the first "
             "forward task)", "rank": 1},
    {"id": 9, "pair": "target_npu vs baseline_gpu", "metric": "phases.tail_compute",
     "per_step_ms": sum(OPT_EXTRA_US.values()) / 1000, "within_noise": False,
     "what": "slower optimizer (AdamW foreach kernels in the tail)", "rank": 2},
    {"id": 10, "pair": "every pair", "metric": "breakdown.memcpy", "per_step_ms": None, "within_noise": True,
     "what": "noise only: the labels HtoD copy of every step is jittered independently on each side around "
             "the same mean (µs per step: " + "; ".join(f"{k} {list(v)}" for k, v in MEMCPY_US.items()) + ")",
     "also": {"sdma_us in the device windows": "differs per step by the same noise"}},
    {"id": None, "pair": "target_npu vs baseline_gpu", "metric": "phases.tail_communication", "per_step_ms": 0.5,
     "within_noise": False, "what": "planted #3 (all-reduce 1000 -> 1500 us), not a step-level plant", "rank": 3},
    {"id": None, "pair": "target_npu vs baseline_gpu", "metric": "phases.fwd_bwd", "per_step_ms": 0.49,
     "within_noise": False, "what": "planted #1 + #2 (fc1 +400 us, casts +90 us), not step-level plants",
     "rank": 4},
    {"id": None, "pair": "target_npu_v2 vs target_npu", "metric": "phases.iteration_gap", "per_step_ms": 0.0,
     "within_noise": True, "what": "#8 is kept in target_npu_v2: the same per-step figures, diff 0"},
    {"id": None, "pair": "target_npu_v2 vs target_npu", "metric": "phases.tail_compute", "per_step_ms": 0.0,
     "within_noise": True, "what": "#9 is kept in target_npu_v2: the same per-step figures, diff 0"},
]
