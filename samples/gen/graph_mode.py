"""The graph-mode pair: one small TorchAir inference job (``torch.compile`` with the NPU backend) written
as two Ascend PyTorch Profiler text exports, ``graph_mode/base`` and ``graph_mode/target`` (a folder of
their own, so the logdir's GPU-vs-NPU suggestion stays the top one).

Each step runs the compiled module GRAPH_RUNS times.  One graph run on the main thread, as TorchAir
records it (event names from Ascend/torchair: ``record_function("npu_fx_compiler inference")`` in
python/torchair/npu_fx_compiler.py, ``RECORD_FUNCTION("TorchNpuGraphBase::Run")`` in
torchair/core/torchair.cpp, ``AssembleInputs``/``AssembleOutputs`` in the graph executors,
``ExecuteGraph`` in torchair/concrete_graph/session.cpp):

    torch/_dynamo/eval_frame.py(655): _fn                python_function: entering the compiled module
      (Dynamo guard checks: no event)                    framework part
      npu_fx_compiler inference                          cpu_op
        aten::scalar_tensor / aten::contiguous ...       TorchAir Python part: input conversion
        TorchNpuGraphBase::Run                           cpu_op
          AssembleInputs                                 TorchAir C++ part (Run start -> ExecuteGraph start)
          ExecuteGraph                                   GE part (ExecuteGraph start -> end of npu_fx_compiler inference)
          AssembleOutputs

The graph's device tasks run on one stream, launched from ``ExecuteGraph``.  Planted: the target's
TorchAir input conversion is PLANT_PY_US longer per graph run (two more conversions: a non-contiguous
input made contiguous), every other part and every device task is the same on both sides.  The graphs are small, so the
host overhead is most of each step (the device waits for the host): the overview's hint case.
"""
from __future__ import annotations

import json
from pathlib import Path

from .ascend_text import NPU_STREAM, PID_AH, csv_text
from .formatting import tss, tsu

STEPS, GRAPH_RUNS = 4, 3
MAIN_TID = 3301502
PID = 3301502
T0 = 1_732_600_000_000_000_000          # ns, capture start (Ascend writes absolute µs)
PLANT_PY_US = 250                        # target's extra TorchAir Python time per graph run

# (name, duration µs) of the graph's device tasks (the same graph on both sides)
GRAPH_TASKS = (("MatMulV3", 40), ("Add", 6), ("FlashAttentionScore", 60), ("MatMulV3", 40),
               ("RmsNorm", 9), ("MatMulV3", 70), ("Swish", 7), ("MatMulV3", 35))
# host parts of one graph run (µs)
FRAMEWORK_US = 140                       # _fn start -> npu_fx_compiler inference start
CPP_US = 45                              # TorchNpuGraphBase::Run start -> ExecuteGraph start
EXEC_US = 95                             # ExecuteGraph
OUT_US = 12                              # AssembleOutputs
TAIL_US = 6                              # Run end -> npu_fx_compiler inference end
RET_US = 15                              # npu_fx_compiler inference end -> _fn end


def conversions(target: bool):
    """TorchAir's Python input conversion of one graph run: (op, µs) in order."""
    base = [("aten::scalar_tensor", 18), ("aten::scalar_tensor", 17), ("aten::detach", 20)]
    if target:                           # a non-contiguous input is made contiguous first: +PLANT_PY_US
        base += [("aten::contiguous", 130), ("aten::clone", 120)]
    return base


def py_us(target: bool) -> int:
    return sum(d for _, d in conversions(target)) + 10   # 10 µs of Python around the conversions


class GraphRun:
    """One side of the pair: host events, device tasks and the figures the engine must find."""

    def __init__(self, target: bool):
        self.target = target
        self.cpu, self.py, self.tasks, self.steps = [], [], [], []
        self.runs = []                   # per graph run: dict of part -> µs
        t = T0 + 2_000_000
        conn = 5001
        task_id = 20
        for st in range(1, STEPS + 1):
            s0 = t
            t += 30_000                  # the step's own Python before the first graph run
            for _g in range(GRAPH_RUNS):
                fn0 = t
                fx0 = fn0 + FRAMEWORK_US * 1000
                c = fx0 + 5_000
                convs = []
                for name, d in conversions(self.target):
                    convs.append((name, c, d * 1000))
                    c += d * 1000 + 1_000
                run0 = fx0 + py_us(self.target) * 1000
                ex0 = run0 + CPP_US * 1000
                ex1 = ex0 + EXEC_US * 1000
                run1 = ex1 + OUT_US * 1000 + 2_000
                fx1 = run1 + TAIL_US * 1000
                fn1 = fx1 + RET_US * 1000
                self.py.append(("torch/_dynamo/eval_frame.py(655): _fn", fn0, fn1))
                self.cpu.append(("npu_fx_compiler inference", fx0, fx1 - fx0, None))
                for name, s, d in convs:
                    self.cpu.append((name, s, d, None))
                self.cpu.append(("TorchNpuGraphBase::Run", run0, run1 - run0, None))
                self.cpu.append(("AssembleInputs", run0 + 5_000, 25_000, None))
                launch = (ex0 + 20_000, conn)
                self.cpu.append(("ExecuteGraph", ex0, ex1 - ex0, launch))
                self.cpu.append(("AssembleOutputs", ex1 + 1_000, OUT_US * 1000, None))
                d0 = ex0 + 60_000
                for k, (name, dur) in enumerate(GRAPH_TASKS):
                    self.tasks.append({"name": name, "start": d0, "dur": dur * 1000, "step": st,
                                       "task_id": task_id, "conn": conn if k == 0 else None})
                    task_id += 1
                    d0 += dur * 1000 + 2_000
                conn += 1
                self.runs.append({"step": st, "framework_us": FRAMEWORK_US, "torchair_python_us": py_us(target),
                                  "torchair_cpp_us": CPP_US, "ge_us": (fx1 - ex0) // 1000})
                t = fn1 + 40_000         # the host goes on; the device runs the graph meanwhile
                last = d0
            t = max(t, last + 10_000)
            self.steps.append((st, s0, t))
            self.cpu.append((f"ProfilerStep#{st}", s0, t - s0, None))
            t += 5_000
        self.end = t

    # ---- trace_view.json
    def trace(self):
        ev = []
        cpu = sorted(self.cpu, key=lambda c: (c[1], -c[2]))
        for name, s, d, _launch in cpu:
            a = {"Sequence number": -1, "Fwd thread id": 0}
            ev.append({"ph": "X", "name": name, "pid": PID, "tid": MAIN_TID, "ts": tss(s), "dur": tsu(d),
                       "cat": "cpu_op", "args": a})
        for i, (name, s, e) in enumerate(self.py):
            ev.append({"ph": "X", "name": name, "pid": PID, "tid": MAIN_TID, "ts": tss(s), "dur": tsu(e - s),
                       "cat": "python_function", "args": {"Python id": i + 1, "Python parent id": 0}})
        m = lambda n, p, t, a: {"name": n, "pid": p, "tid": t, "args": a, "ph": "M"}  # noqa: E731
        ev += [m("process_name", PID, 0, {"name": "Python"}), m("process_labels", PID, 0, {"labels": "CPU"}),
               m("process_sort_index", PID, 0, {"sort_index": 0}),
               m("thread_name", PID, MAIN_TID, {"name": f"Thread {MAIN_TID}"}),
               m("thread_sort_index", PID, MAIN_TID, {"sort_index": MAIN_TID}),
               m("process_name", PID_AH, 0, {"name": "Ascend Hardware"}),
               m("thread_name", PID_AH, NPU_STREAM, {"name": f"Stream {NPU_STREAM}"}),
               m("thread_sort_index", PID_AH, NPU_STREAM, {"sort_index": NPU_STREAM}),
               m("process_labels", PID_AH, 0, {"labels": "NPU"}), m("process_sort_index", PID_AH, 0, {"sort_index": 13})]
        for tk in self.tasks:
            ev.append({"name": tk["name"], "pid": PID_AH, "tid": NPU_STREAM, "ts": tss(tk["start"]),
                       "dur": tsu(tk["dur"]), "args": {"Model Id": 1, "Task Type": "AI_CORE",
                                                        "Physic Stream Id": NPU_STREAM, "Task Id": tk["task_id"],
                                                        "Batch Id": 0, "Subtask Id": 4294967295,
                                                        "connection_id": tk["conn"] or 0}, "ph": "X"})
        for name, s, d, launch in cpu:
            if launch is None:
                continue
            ls, conn = launch
            first = next(tk for tk in self.tasks if tk["conn"] == conn)
            ev.append({"ph": "s", "bp": "e", "name": "torch_to_npu", "id": first["start"], "pid": PID,
                       "tid": MAIN_TID, "ts": tss(s), "cat": "async_npu"})
            ev.append({"ph": "f", "bp": "e", "name": "torch_to_npu", "id": first["start"], "pid": PID_AH,
                       "tid": NPU_STREAM, "ts": tss(first["start"]), "cat": "async_npu"})
        return ev

    def kernel_details(self):
        hdr = ("Step Id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,Start Time(us),Duration(us),"
               "Wait Time(us),Block Dim,Mix Block Dim,HF32 Eligible,Input Shapes,Input Data Types,Input Formats,"
               "Output Shapes,Output Data Types,Output Formats,Context ID").split(",")
        rows, prev = [hdr], None
        for tk in self.tasks:
            wait = 0 if prev is None else (tk["start"] - prev) / 1000
            rows.append([tk["step"], 1, tk["task_id"], NPU_STREAM, tk["name"], tk["name"], "static", "AI_CORE",
                         tss(tk["start"]) + "\t", tsu(tk["dur"]), wait, 24, 0, "NO", "N/A", "N/A", "N/A", "N/A",
                         "N/A", "N/A", "N/A"])
            prev = tk["start"] + tk["dur"]
        return rows

    def write(self, root: Path):
        out = root / "ASCEND_PROFILER_OUTPUT"
        out.mkdir(parents=True, exist_ok=True)
        (out / "trace_view.json").write_text(json.dumps(self.trace()), encoding="utf-8", newline="")
        (out / "kernel_details.csv").write_text(csv_text(self.kernel_details(), True), encoding="utf-8", newline="")
        info = {"config": {"common_config": {
            "activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"],
            "schedule": {"wait": 0, "active": STEPS, "warmup": 1, "repeat": 1, "skip_first": 2},
            "record_shapes": False, "profile_memory": False, "with_stack": True, "with_flops": False,
            "with_modules": False},
            "experimental_config": {"_profiler_level": "Level1", "_aic_metrics": "ACL_AICORE_PIPE_UTILIZATION",
                                    "_l2_cache": False, "_msprof_tx": False, "_data_simplification": True,
                                    "record_op_args": False, "_export_type": "text", "_op_attr": False,
                                    "_gc_detect_threshold": None}},
            "start_info": {"syscnt_enable": True, "freq": 100, "start_cnt": 20811400731655,
                           "start_monotonic": 208114007316550},
            "end_info": {"collectionTimeEnd": self.end + 3_000_000, "MonotonicTimeEnd": 208114153480212},
            "rank_id": 0}
        (root / "profiler_info_0.json").write_text(json.dumps(info, indent=4), encoding="utf-8", newline="")
        env = ["ASCEND_GLOBAL_LOG_LEVEL", "PYTORCH_NPU_ALLOC_CONF", "ASCEND_LAUNCH_BLOCKING"]
        (root / "profiler_metadata.json").write_text(json.dumps({"ENV_VARIABLES": dict.fromkeys(env, "")}, indent=4),
                                                     encoding="utf-8", newline="")

    def expected(self) -> dict:
        """The figures the host-overhead engine must find (ms, whole capture)."""
        tot = {k: sum(r[k + "_us"] for r in self.runs) / 1000 for k in
               ("framework", "torchair_python", "torchair_cpp", "ge")}
        return {"graph_runs": len(self.runs), "steps": STEPS,
                **{k + "_ms": v for k, v in tot.items()},
                "torchair_ms": tot["torchair_python"] + tot["torchair_cpp"]}


def write_graph_pair(out: Path) -> dict:
    """Write graph_mode/base/ and graph_mode/target/ under ``out``; return their expected host-overhead
    figures."""
    exp = {}
    for name, target in (("base", False), ("target", True)):
        g = GraphRun(target)
        g.write(out / "graph_mode" / name / "rank0_ascend_pt")
        exp[name] = g.expected()
    exp["planted"] = {"part": "torchair_python_ms", "per_graph_run_ms": PLANT_PY_US / 1000,
                      "total_ms": PLANT_PY_US / 1000 * STEPS * GRAPH_RUNS}
    return exp
