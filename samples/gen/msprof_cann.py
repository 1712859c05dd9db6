"""Writer of the msprof CANN export samples: a TensorFlow-like training job (ResNet-ish: Conv2D,
BNTrainingUpdate, Relu, MatMulV2, softmax loss, backward convolutions, one HCCL all-reduce,
ApplyMomentum) on device 0, profiled with ``msprof --task-time=l1 --aic-metrics=PipeUtilization``
and exported with ``msprof --export=on``: ``msprof_tf_<side>/PROF_<...>/mindstudio_profiler_output/``
with the msprof_*.json timeline and op_summary, op_statistic, step_trace, task_time,
api_statistic and fusion_op CSVs, column
order and units as msprof's data-file reference gives them (µs, 3 decimals).

Planted differences (samples/README.md, "msprof CANN export"): the target's Data Aug Bound is
``AUG_EXTRA_US`` longer every iteration after the first (the input pipeline stalls before FP Start),
and every MatMulV2 task is ``MATMUL_EXTRA_US`` longer.  The target's op_summary is written in two
``_slice_N`` files (a long run's export), the baseline's in one.  Deterministic: no clock, no random.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

ITERATIONS = 8
DEVICE = 0
T0_NS = 1_764_028_800_000_000_000            # the capture's first FP Start, ns
AUG_US = 480                                 # baseline Data Aug Bound of every iteration after the first
AUG_EXTRA_US = 2000                          # planted: target Data Aug Bound longer by this
MATMUL_EXTRA_US = 90                         # planted: every target MatMulV2 task longer by this
WAIT_US = 2                                  # Task Wait Time in front of each task on the stream
STREAM, COMM_STREAM = 5, 9
# one folder for the pair (like graph_mode/), so the demo pair stays the tab's first suggestion
FOLDERS = {"msprof_tf_baseline": "msprof_tf/baseline", "msprof_tf_target": "msprof_tf/target"}
RUNS = {"msprof_tf_baseline": ("PROF_000001_20261125080000123_BASEAAAAAAAAAAAA", "20261125080102"),
        "msprof_tf_target": ("PROF_000001_20261125090000456_TARGETAAAAAAAAAA", "20261125090115")}

# (op name, op type, task type, µs, input shapes, backward?) in stream order; "comm" runs after BP End
FORWARD = [
    ("resnet/conv1/Conv2D", "Conv2D", "AI_CORE", 118, "32,3,224,224;64,3,7,7"),
    ("resnet/bn1/BNTrainingUpdate", "BNTrainingUpdate", "AI_VECTOR_CORE", 41, "32,64,112,112;64"),
    ("resnet/relu1/Relu", "Relu", "AI_VECTOR_CORE", 16, "32,64,112,112"),
    ("resnet/layer1/conv/Conv2D", "Conv2D", "AI_CORE", 96, "32,64,56,56;64,64,3,3"),
    ("resnet/dropout/DropOutGenMask", "DropOutGenMask", "AI_CPU", 55, "4;"),
    ("resnet/fc/MatMulV2", "MatMulV2", "MIX_AIC", 210, "32,2048;2048,1000"),
    ("loss/SoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits", "AI_VECTOR_CORE", 28, "32,1000;32,1000"),
]
BACKWARD = [
    ("gradients/fc/MatMulV2_grad/MatMulV2", "MatMulV2", "MIX_AIC", 190, "32,1000;2048,1000"),
    ("gradients/layer1/conv/Conv2DBackpropFilter", "Conv2DBackpropFilter", "AI_CORE", 172, "32,64,56,56;32,64,56,56"),
    ("gradients/layer1/conv/Conv2DBackpropInput", "Conv2DBackpropInput", "AI_CORE", 158, "4;64,64,3,3"),
    ("gradients/bn1/BNTrainingUpdateGrad", "BNTrainingUpdateGrad", "AI_VECTOR_CORE", 47, "32,64,112,112;64"),
    ("gradients/conv1/Conv2DBackpropFilter", "Conv2DBackpropFilter", "AI_CORE", 181, "32,3,224,224;32,64,112,112"),
]
ALLREDUCE = ("hcom_allReduce__561_0_1", "hcom_allReduce_", "communication", 305, "")
UPDATE = [("momentum/ApplyMomentum", "ApplyMomentum", "AI_VECTOR_CORE", 24, "25557032;25557032")]
REFRESH_TAIL_US = 6                          # Iteration End after the last update task

OP_SUMMARY_HEAD = ["Device_id", "Model ID", "Task ID", "Stream ID", "Op Name", "OP Type", "OP State", "Task Type",
                   "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)", "Block Num", "HF32 Eligible",
                   "Mix Block Num", "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
                   "Output Data Types", "Output Formats", "Context ID", "aicore_time(us)", "aic_total_cycles",
                   "aic_mac_time(us)", "aic_mac_ratio", "aic_scalar_time(us)", "aic_scalar_ratio",
                   "aic_mte1_time(us)", "aic_mte1_ratio", "aic_mte2_time(us)", "aic_mte2_ratio",
                   "aic_fixpipe_time(us)", "aic_fixpipe_ratio", "aic_icache_miss_rate", "aiv_time(us)",
                   "aiv_total_cycles", "aiv_vec_time(us)", "aiv_vec_ratio", "aiv_scalar_time(us)",
                   "aiv_scalar_ratio", "aiv_mte2_time(us)", "aiv_mte2_ratio", "aiv_mte3_time(us)", "aiv_mte3_ratio",
                   "aiv_icache_miss_rate", "cube_utilization(%)"]
OP_STATISTIC_HEAD = ["Device_id", "OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)",
                     "Avg Time(us)", "Max Time(us)", "Ratio(%)"]
STEP_TRACE_HEAD = ["Device_id", "Iteration ID", "FP Start(us)", "BP End(us)", "Iteration End(us)",
                   "Iteration Time(us)", "FP to BP Time(us)", "Iteration Refresh(us)", "Data Aug Bound(us)",
                   "Model ID", "Reduce Start(us)", "Reduce Duration(us)"]
TASK_TIME_HEAD = ["Device_id", "kernel_name", "kernel_type", "stream_id", "task_id", "task_time(us)",
                  "task_start(us)", "task_stop(us)"]
API_HEAD = ["Device_id", "Level", "API Name", "Time(us)", "Count", "Avg(us)", "Min(us)", "Max(us)", "Variance"]
FUSION_HEAD = ["Device_id", "Model Name", "Model ID", "Fusion Op", "Original Ops", "Memory Input(KB)",
               "Memory Output(KB)", "Memory Weight(KB)", "Memory Workspace(KB)", "Memory Total(KB)"]


def us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def tasks_of(side: str) -> list:
    """(iteration, op, ns start, ns dur, task id, stream) of every task, and the iteration rows."""
    target = side == "msprof_tf_target"
    tasks, iters = [], []
    t = T0_NS
    prev_end = None
    task_id = 1
    for it in range(1, ITERATIONS + 1):
        if prev_end is not None:
            t = prev_end + (AUG_US + (AUG_EXTRA_US if target else 0)) * 1000
        fp = t
        bp = None
        for phase, ops in (("fwd", FORWARD), ("bwd", BACKWARD), ("comm", [ALLREDUCE]), ("upd", UPDATE)):
            for op in ops:
                d = op[3] + (MATMUL_EXTRA_US if target and op[1] == "MatMulV2" else 0)
                start = t + (WAIT_US * 1000 if not (phase == "fwd" and op is FORWARD[0]) else 0)
                tasks.append((it, op, start, d * 1000, task_id if op[2] != "communication" else None,
                              COMM_STREAM if op[2] == "communication" else STREAM))
                task_id += 1
                t = start + d * 1000
            if phase == "bwd":
                bp = t
        end = t + REFRESH_TAIL_US * 1000
        iters.append((it, fp, bp, end, None if prev_end is None else fp - prev_end))
        prev_end = end
    return tasks, iters


def _csv(rows, head) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(head)
    w.writerows(rows)
    return buf.getvalue()


def _pmu(op, dur_ns):
    """PipeUtilization cells: AI_CORE/MIX_AIC rows get cube (aic) figures, vector rows aiv ones."""
    d = dur_ns / 1000
    na = ["N/A"] * 25
    if op[2] in ("AI_CORE", "MIX_AIC"):
        core = round(d * 0.92, 3)
        mac = round(core * 0.71, 3)
        cells = [f"{core:.3f}", str(int(core * 1800 * 24)), f"{mac:.3f}", f"{mac / core:.3f}",
                 f"{core * 0.05:.3f}", "0.050", f"{core * 0.12:.3f}", "0.120", f"{core * 0.31:.3f}", "0.310",
                 f"{core * 0.08:.3f}", "0.080", "0.002"] + ["N/A"] * 11 + ["63.420"]
        return cells
    if op[2] == "AI_VECTOR_CORE":
        core = round(d * 0.9, 3)
        vec = round(core * 0.64, 3)
        return ["N/A"] * 13 + [f"{core:.3f}", str(int(core * 1800 * 48)), f"{vec:.3f}", f"{vec / core:.3f}",
                               f"{core * 0.06:.3f}", "0.060", f"{core * 0.22:.3f}", "0.220", f"{core * 0.09:.3f}",
                               "0.090", "0.001", "N/A"]
    return na


HOST_PID, HW_PID, CANN_PID = 3001000, 3001001, 3001002
MAIN_TID, DATA_TID = 3001000, 3001004
# CANN APIs of one iteration: (level, api, thread, µs after the iteration start, µs)
APIS = [("Node", "GetNext", DATA_TID, 20, 350), ("AscendCL", "aclmdlExecute", MAIN_TID, 40, 1500),
        ("Runtime", "rtKernelLaunch", MAIN_TID, 60, 6), ("Runtime", "rtStreamSynchronize", MAIN_TID, 1560, 90)]


def timeline(tasks, iters) -> list:
    """msprof_*.json: process/thread names, the CANN track (one X event per API call, µs as text
    with 3 decimals, args Thread Id / Mode / level / id as msprof writes them) and the Ascend
    Hardware track (one X event per device task, args Task Type / Stream Id / Task Id)."""
    ev = [{"name": "process_name", "pid": p, "tid": 0, "ph": "M", "args": {"name": n}}
          for p, n in ((HW_PID, "Ascend Hardware"), (CANN_PID, "CANN"))]
    ev += [{"name": "thread_name", "pid": CANN_PID, "tid": t, "ph": "M", "args": {"name": f"Thread {t}"}}
           for t in (MAIN_TID, DATA_TID)]
    ev += [{"name": "thread_name", "pid": HW_PID, "tid": s, "ph": "M", "args": {"name": f"Stream {s}"}}
           for s in (STREAM, COMM_STREAM)]
    prev_end = None
    for it, fp, bp, end, aug in iters:
        s = prev_end if prev_end is not None else fp - 400_000
        for level, api, tid, off, dur in APIS:
            ev.append({"name": f"{level}@{api}", "pid": CANN_PID, "tid": tid, "ts": us(s + off * 1000),
                       "dur": float(dur), "ph": "X",
                       "args": {"Thread Id": tid, "Mode": "ACL_MODEL" if level == "AscendCL" else level.upper(),
                                "level": level.lower(), "id": api, "item_id": "0"}})
        prev_end = end
    for it, op, start, dur, tid, stream in tasks:
        ev.append({"name": op[0], "pid": HW_PID, "tid": stream, "ts": us(start), "dur": dur / 1000, "ph": "X",
                   "args": {"Model Id": 1, "Task Type": op[2], "Stream Id": stream,
                            "Task Id": tid if tid is not None else "N/A", "Subtask Id": 4294967295}})
    return ev


def write(side: str, root: Path) -> Path:
    prof, stamp = RUNS[side]
    out = root / FOLDERS[side] / prof / "mindstudio_profiler_output"
    out.mkdir(parents=True, exist_ok=True)
    tasks, iters = tasks_of(side)
    rows = []
    for it, op, start, dur, tid, stream in tasks:
        comm = op[2] == "communication"
        prev_end = rows[-1][0] if rows else start
        wait = max(0, start - prev_end)
        rows.append((start + dur, [
            DEVICE, 1, "N/A" if comm else tid, "N/A" if comm else stream, op[0], op[1],
            "N/A" if comm else "static", op[2], us(start), us(dur), us(wait),
            0 if comm else (24 if op[2] != "AI_CPU" else 1), "N/A" if comm else "NO",
            48 if op[2] == "MIX_AIC" else 0, op[4] or "N/A", "N/A" if comm else "FLOAT16",
            "N/A" if comm else "NCHW", "N/A" if comm else "32,1000", "N/A" if comm else "FLOAT16",
            "N/A" if comm else "NCHW", "N/A"] + _pmu(op, dur)))
    body = [r for _, r in rows]
    if side == "msprof_tf_target":              # a long run's export: op_summary cut in two slices
        half = len(body) // 2
        (out / f"op_summary_slice_0_{stamp}.csv").write_text(_csv(body[:half], OP_SUMMARY_HEAD), newline="")
        (out / f"op_summary_slice_1_{stamp}.csv").write_text(_csv(body[half:], OP_SUMMARY_HEAD), newline="")
    else:
        (out / f"op_summary_{stamp}.csv").write_text(_csv(body, OP_SUMMARY_HEAD), newline="")
    # op_statistic: per OP Type, Total Time descending
    stats: dict = {}
    for it, op, start, dur, tid, stream in tasks:
        stats.setdefault((op[1], op[2]), []).append(dur)
    total = sum(sum(v) for v in stats.values())
    st_rows = sorted(((sum(v), k, v) for k, v in stats.items()), key=lambda x: (-x[0], x[1]))
    (out / f"op_statistic_{stamp}.csv").write_text(_csv(
        [[DEVICE, k[0], k[1], len(v), us(s), us(min(v)), us(s // len(v)), us(max(v)), f"{100 * s / total:.3f}"]
         for s, k, v in st_rows], OP_STATISTIC_HEAD), newline="")
    red = {it: (start, dur) for it, op, start, dur, tid, stream in tasks if op[2] == "communication"}
    (out / f"step_trace_{stamp}.csv").write_text(_csv(
        [[DEVICE, it, us(fp), us(bp), us(end), us(end - (fp if aug is None else fp - aug)), us(bp - fp),
          us(end - bp), "N/A" if aug is None else us(aug), 1, us(red[it][0]), us(red[it][1])]
         for it, fp, bp, end, aug in iters], STEP_TRACE_HEAD), newline="")
    (out / f"task_time_{stamp}.csv").write_text(_csv(
        [[DEVICE, op[0] if op[2] != "communication" else "N/A",
          {"AI_CPU": "KERNEL_AICPU"}.get(op[2], "KERNEL_AICORE"), stream, tid if tid is not None else "N/A",
          us(dur), us(start), us(start + dur)] for it, op, start, dur, tid, stream in tasks
         if op[2] != "communication"], TASK_TIME_HEAD), newline="")
    n = ITERATIONS
    (out / f"msprof_{stamp}.json").write_text(json.dumps(timeline(tasks, iters), separators=(",", ":")),
                                              newline="")
    (out / f"api_statistic_{stamp}.csv").write_text(_csv(
        [["host", lv, name, us(t * 1000 * n), n, us(t * 1000), us(t * 1000), us(t * 1000), "0.000"]
         for lv, name, tid, off, t in sorted(APIS, key=lambda a: -a[4])], API_HEAD), newline="")
    (out / f"fusion_op_{stamp}.csv").write_text(_csv(
        [[DEVICE, "resnet_graph", 1, "resnet/conv1/Conv2D", "resnet/conv1/Conv2D;resnet/conv1/BiasAdd",
          "18816.000", "50176.000", "18.375", "0.000", "69010.375"]], FUSION_HEAD), newline="")
    return out


def write_all(root: Path) -> None:
    for side in RUNS:
        write(side, root)
