"""The MindSpore pair: one small ResNet-ish training job in MindSpore 2.x graph mode (jit level O0, kernel by
kernel) on Ascend device 0, profiled with ``mindspore.profiler.profile`` (activities CPU and NPU, Level1, no
AI Core metrics, text export) and written as MindSpore writes it, ``mindspore/{baseline,target}/
rank0_<timestamp>_ascend_ms/``:

* ``profiler_info_0.json`` (its ``profiler_parameters``) and ``profiler_metadata.json``;
* ``ASCEND_PROFILER_OUTPUT/trace_view.json``: MindSpore's own processes ("MindSpore" pid 1 with the
  framework's ``Kernel::KernelLaunch::<scope>`` ranges and a ``ProfilerStep#N`` range per step, no
  category and no Python-function events; "CANN" with one ``Node@launch`` per task; "Ascend Hardware"
  with the tasks, named by their full scope path; "Overlap Analysis"), the ``mindspore_to_npu`` flows
  (category ``async_npu``) from each launch to its task and CANN's ``HostToDevice`` flows;
* ``kernel_details.csv`` (``Step ID`` first, MindSpore's spelling; Level1 columns without PMU ones),
  ``op_statistic.csv`` (with ``Device_id``), ``api_statistic.csv`` and ``step_trace_time.csv``.

Single device: no communication files.  No ``PROF_*`` folder (``data_simplification`` keeps only the raw
data there, which this project cannot read anyway) and no ``FRAMEWORK``/``logs`` folders.

Planted (samples/README.md, "The MindSpore pair"): every MatMul task of the target (the forward ``fc`` MatMul
and its gradient) is MATMUL_EXTRA_US longer; the tasks after it start that much later; nothing else differs.
Deterministic: no clock, no random.
"""
from __future__ import annotations

import json
from pathlib import Path

from .ascend_text import PID_AH, PID_CANN, PID_OVL, csv_text
from .formatting import tss, tsu

STEPS = 4
DEVICE = 0
STREAM = 2
MS_PID, MAIN_TID = 1, 58213                # MindSpore's framework process id is always 1
T0 = 1_764_064_800_000_000_000             # ns, first ProfilerStep start (absolute, as the profiler writes)
MATMUL_EXTRA_US = 80                       # planted: every target MatMul task longer by this
STEP_GAP_US = 250                          # host between two steps (GetNext, the next RunGraph)
PREP_US = 120                              # ProfilerStep start -> the step's first launch
LAUNCH_US = 9                              # one Kernel::KernelLaunch range on the host
LAUNCH_EVERY_US = 14                       # host launches run ahead of the device, one every 14 µs
DEVICE_LAG_US = 35                         # launch start -> its task starts (at the earliest)
GAP_US = 3                                 # idle between two back-to-back tasks on the stream
FOLDERS = {"baseline": "rank0_20261125100000123_ascend_ms", "target": "rank0_20261125110000456_ascend_ms"}

_NET = "Default/network-WithLossCell/_backbone-ResNet"
_GRAD = "Gradients/Default/network-WithLossCell/_backbone-ResNet"
# (scope path, op type, accelerator core, µs, input shapes, input dtypes, output shapes) in stream order
TASKS = [
    (f"{_NET}/conv1-Conv2d/Conv2D-op1", "Conv2D", "AI_CORE", 120, "32,3,224,224;64,3,7,7", "FLOAT16;FLOAT16",
     "32,64,112,112"),
    (f"{_NET}/bn1-BatchNorm2d/BNTrainingReduce-op2", "BNTrainingReduce", "AI_VECTOR_CORE", 30, "32,64,112,112",
     "FLOAT16", "64;64"),
    (f"{_NET}/bn1-BatchNorm2d/BNTrainingUpdate-op3", "BNTrainingUpdate", "AI_VECTOR_CORE", 42,
     "32,64,112,112;64;64;64;64;64;64", "FLOAT16;FLOAT;FLOAT;FLOAT;FLOAT;FLOAT;FLOAT", "32,64,112,112"),
    (f"{_NET}/relu-ReLU/ReLU-op4", "ReLU", "AI_VECTOR_CORE", 15, "32,64,112,112", "FLOAT16", "32,64,112,112"),
    (f"{_NET}/layer1-SequentialCell/0-ResidualBlock/conv1-Conv2d/Conv2D-op5", "Conv2D", "AI_CORE", 95,
     "32,64,56,56;64,64,3,3", "FLOAT16;FLOAT16", "32,64,56,56"),
    (f"{_NET}/avgpool-AvgPool2d/ReduceMean-op6", "ReduceMean", "AI_VECTOR_CORE", 12, "32,64,56,56", "FLOAT16",
     "32,64"),
    (f"{_NET}/fc-Dense/MatMul-op7", "MatMul", "AI_CORE", 60, "32,64;10,64", "FLOAT16;FLOAT16", "32,10"),
    (f"{_NET}/fc-Dense/BiasAdd-op8", "BiasAdd", "AI_VECTOR_CORE", 5, "32,10;10", "FLOAT16;FLOAT16", "32,10"),
    ("Default/network-WithLossCell/_loss_fn-SoftmaxCrossEntropyWithLogits/SoftmaxCrossEntropyWithLogits-op9",
     "SoftmaxCrossEntropyWithLogits", "AI_VECTOR_CORE", 18, "32,10;32,10", "FLOAT;FLOAT", "32;32,10"),
    (f"{_GRAD}/fc-Dense/gradMatMul/MatMul-op10", "MatMul", "AI_CORE", 55, "32,10;32,64", "FLOAT16;FLOAT16",
     "10,64"),
    (f"{_GRAD}/fc-Dense/gradBiasAdd/BiasAddGrad-op11", "BiasAddGrad", "AI_VECTOR_CORE", 6, "32,10", "FLOAT16",
     "10"),
    (f"{_GRAD}/layer1-SequentialCell/0-ResidualBlock/conv1-Conv2d/gradConv2D/Conv2DBackpropFilter-op12",
     "Conv2DBackpropFilter", "AI_CORE", 150, "32,64,56,56;32,64,56,56", "FLOAT16;FLOAT16", "64,64,3,3"),
    (f"{_GRAD}/layer1-SequentialCell/0-ResidualBlock/conv1-Conv2d/gradConv2D/Conv2DBackpropInput-op13",
     "Conv2DBackpropInput", "AI_CORE", 140, "32,64,56,56;64,64,3,3", "FLOAT16;FLOAT16", "32,64,56,56"),
    (f"{_GRAD}/bn1-BatchNorm2d/gradBatchNorm2d/BNTrainingUpdateGrad-op14", "BNTrainingUpdateGrad",
     "AI_VECTOR_CORE", 38, "32,64,112,112;32,64,112,112;64;64", "FLOAT16;FLOAT16;FLOAT;FLOAT", "64;64"),
    (f"{_GRAD}/conv1-Conv2d/gradConv2D/Conv2DBackpropFilter-op15", "Conv2DBackpropFilter", "AI_CORE", 175,
     "32,64,112,112;32,3,224,224", "FLOAT16;FLOAT16", "64,3,7,7"),
    ("Default/optimizer-Momentum/ApplyMomentum-op16", "ApplyMomentum", "AI_VECTOR_CORE", 22,
     "64,3,7,7;1;64,3,7,7;1;64,3,7,7", "FLOAT;FLOAT;FLOAT;FLOAT;FLOAT", "64,3,7,7"),
]
PLANTED_TYPE = "MatMul"


def _us(x: int) -> str:
    """A µs figure as MindSpore's CSVs write it: an integer count of ns -> µs with 3 decimals."""
    return tss(x)


class MindSporeRun:
    """One side of the pair: the host launches, the device tasks and the per-step figures."""

    def __init__(self, target: bool):
        self.target = target
        self.steps, self.launches, self.tasks = [], [], []
        t = T0
        task_id = 3
        for st in range(1, STEPS + 1):
            s0 = t
            h = s0 + PREP_US * 1000                    # host launch cursor
            dev = None                                 # device free from
            for i, (scope, typ, core, dur, ins, dtypes, outs) in enumerate(TASKS):
                d = (dur + (MATMUL_EXTRA_US if target and typ == PLANTED_TYPE else 0)) * 1000
                ls = h
                start = ls + DEVICE_LAG_US * 1000 if dev is None else max(ls + DEVICE_LAG_US * 1000,
                                                                            dev + GAP_US * 1000)
                self.launches.append({"scope": scope, "start": ls, "dur": LAUNCH_US * 1000, "task": len(self.tasks)})
                self.tasks.append({"scope": scope, "type": typ, "core": core, "start": start, "dur": d, "step": st,
                                   "task_id": task_id, "ins": ins, "dtypes": dtypes, "outs": outs,
                                   "conn": 40_000 + len(self.tasks)})
                task_id += 1
                dev = start + d
                h += LAUNCH_EVERY_US * 1000
            end = dev + 20_000                         # the step's host range closes after its last task
            self.steps.append((st, s0, end))
            t = end + STEP_GAP_US * 1000
        self.end = t

    # ---- trace_view.json
    def trace(self) -> list:
        m = lambda n, p, t, a: {"name": n, "pid": p, "tid": t, "args": a, "ph": "M"}  # noqa: E731
        ev = [m("process_name", MS_PID, 0, {"name": "MindSpore"}), m("process_labels", MS_PID, 0, {"labels": "CPU"}),
              m("process_sort_index", MS_PID, 0, {"sort_index": 1}),
              m("thread_name", MS_PID, MAIN_TID, {"name": f"Thread {MAIN_TID}"}),
              m("thread_sort_index", MS_PID, MAIN_TID, {"sort_index": MAIN_TID}),
              m("process_name", PID_CANN, 0, {"name": "CANN"}),
              m("thread_name", PID_CANN, MAIN_TID, {"name": f"Thread {MAIN_TID}"}),
              m("thread_sort_index", PID_CANN, MAIN_TID, {"sort_index": MAIN_TID}),
              m("process_labels", PID_CANN, 0, {"labels": "CPU"}), m("process_sort_index", PID_CANN, 0, {"sort_index": 7}),
              m("process_name", PID_AH, 0, {"name": "Ascend Hardware"}),
              m("thread_name", PID_AH, STREAM, {"name": f"Stream {STREAM}"}),
              m("thread_sort_index", PID_AH, STREAM, {"sort_index": STREAM}),
              m("process_labels", PID_AH, 0, {"labels": "NPU"}), m("process_sort_index", PID_AH, 0, {"sort_index": 13}),
              m("process_name", PID_OVL, 0, {"name": "Overlap Analysis"})]
        ev += [m("thread_name", PID_OVL, i, {"name": n}) for i, n in
               enumerate(("Computing", "Communication", "Communication(Not Overlapped)", "Free"))]
        ev += [m("process_labels", PID_OVL, 0, {"labels": "NPU"}),
               m("process_sort_index", PID_OVL, 0, {"sort_index": 23})]
        host = [(f"ProfilerStep#{st}", s, e - s) for st, s, e in self.steps]
        host += [(f"Kernel::KernelLaunch::{la['scope']}", la["start"], la["dur"]) for la in self.launches]
        for name, s, d in sorted(host, key=lambda x: (x[1], -x[2])):
            ev.append({"ph": "X", "name": name, "pid": MS_PID, "tid": MAIN_TID, "ts": tss(s), "dur": tsu(d),
                       "args": {"Sequence number": -1, "Fwd thread id": 0}})
        for la in self.launches:
            tk = self.tasks[la["task"]]
            ev.append({"ph": "X", "name": "Node@launch", "pid": PID_CANN, "tid": MAIN_TID, "ts": tss(la["start"] + 2_000),
                       "dur": tsu(5_000), "args": {"Thread Id": MAIN_TID, "Mode": "ACL_OP", "level": "node", "id": "0",
                                                   "item_id": tk["scope"], "connection_id": tk["conn"]}})
        for tk in self.tasks:
            ev.append({"name": tk["scope"], "pid": PID_AH, "tid": STREAM, "ts": tss(tk["start"]), "dur": tsu(tk["dur"]),
                       "args": {"Model Id": 4294967295, "Task Type": tk["core"], "Physic Stream Id": STREAM,
                                "Task Id": tk["task_id"], "Batch Id": 0, "Subtask Id": 4294967295,
                                "connection_id": tk["conn"]}, "ph": "X"})
        for tid, name, iv in ((0, "Computing", self.busy()), (3, "Free", self.free())):
            for s, e in iv:
                ev.append({"name": name, "pid": PID_OVL, "tid": tid, "ts": tss(s), "dur": tsu(e - s), "ph": "X"})
        for la in self.launches:
            tk = self.tasks[la["task"]]
            fid = tss(tk["start"])                     # MindSpore ids the flow by the task's ts
            ev.append({"name": "mindspore_to_npu", "cat": "async_npu", "pid": MS_PID, "tid": MAIN_TID,
                       "ts": tss(la["start"]), "id": fid, "bp": "e", "ph": "s"})
            ev.append({"name": "mindspore_to_npu", "cat": "async_npu", "pid": PID_AH, "tid": STREAM,
                       "ts": tss(tk["start"]), "id": fid, "bp": "e", "ph": "f"})
            ev.append({"name": f"HostToDevice{tk['conn']}", "ph": "s", "cat": "HostToDevice", "id": str(tk["conn"]),
                       "pid": PID_CANN, "tid": MAIN_TID, "ts": tss(la["start"] + 2_000)})
            ev.append({"name": f"HostToDevice{tk['conn']}", "ph": "f", "cat": "HostToDevice", "id": str(tk["conn"]),
                       "pid": PID_AH, "tid": STREAM, "ts": tss(tk["start"]), "bp": "e"})
        return ev

    def busy(self) -> list:
        out = []
        for tk in self.tasks:
            s, e = tk["start"], tk["start"] + tk["dur"]
            if out and s <= out[-1][1]:
                out[-1][1] = max(out[-1][1], e)
            else:
                out.append([s, e])
        return out

    def free(self) -> list:
        b = self.busy()
        return [[b[i][1], b[i + 1][0]] for i in range(len(b) - 1)]

    # ---- CSVs
    def kernel_details(self) -> list:
        rows = [["Step ID", "Model ID", "Task ID", "Stream ID", "Name", "Type", "OP State", "Accelerator Core",
                 "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Dim", "Mix Block Dim", "HF32 Eligible",
                 "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes", "Output Data Types",
                 "Output Formats"]]
        prev = None
        for tk in self.tasks:
            wait = 0 if prev is None else tk["start"] - prev
            n_in = tk["dtypes"].count(";") + 1
            rows.append([tk["step"], 4294967295, tk["task_id"], STREAM, tk["scope"], tk["type"], "static", tk["core"],
                         tss(tk["start"]) + "\t", _us(tk["dur"]), _us(wait), 24 if tk["core"] == "AI_CORE" else 48,
                         0, "NO", tk["ins"], tk["dtypes"], ";".join(["NCHW"] * n_in), tk["outs"],
                         tk["dtypes"].split(";")[0], "NCHW"])
            prev = tk["start"] + tk["dur"]
        return rows

    def op_statistic(self) -> list:
        groups: dict = {}
        for tk in self.tasks:
            groups.setdefault((tk["type"], tk["core"]), []).append(tk["dur"])
        total = sum(sum(v) for v in groups.values())
        rows = [["Device_id", "OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)",
                 "Max Time(us)", "Ratio(%)"]]
        for (typ, core), v in sorted(groups.items(), key=lambda kv: (-sum(kv[1]), kv[0])):
            rows.append([DEVICE, typ, core, len(v), _us(sum(v)), _us(min(v)), _us(sum(v) // len(v)), _us(max(v)),
                         f"{sum(v) * 100 / total:.3f}"])
        return rows

    def api_statistic(self) -> list:
        n = len(self.launches)
        rows = [["Device_id", "Level", "API Name", "Time(us)", "Count", "Avg(us)", "Min(us)", "Max(us)", "Variance"]]
        rows.append([DEVICE, "node", "launch", _us(n * 5_000), n, "5.000", "5.000", "5.000", "0.000"])
        return rows

    def step_rows(self) -> list:
        rows = [["Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free", "Stage",
                 "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing"]]
        for f in self.figures():
            rows.append([f["step"], _us(f["computing_ns"]), "0.000", "0.000", "0.000", _us(f["free_ns"]),
                         _us(f["stage_ns"]), "0.000", "0.000", _us(f["preparing_ns"])])
        return rows

    def figures(self) -> list:
        """Per step: device busy time, the idle gaps between its tasks, its host window and preparing time."""
        out = []
        for st, s, e in self.steps:
            tks = [tk for tk in self.tasks if tk["step"] == st]
            comp = sum(tk["dur"] for tk in tks)          # back to back on one stream: no overlap
            first, last = tks[0]["start"], tks[-1]["start"] + tks[-1]["dur"]
            out.append({"step": st, "computing_ns": comp, "free_ns": (last - first) - comp, "stage_ns": e - s,
                        "preparing_ns": first - s, "first_task_ns": first, "last_end_ns": last})
        return out

    def write(self, root: Path) -> None:
        out = root / "ASCEND_PROFILER_OUTPUT"
        out.mkdir(parents=True, exist_ok=True)
        (out / "trace_view.json").write_text(json.dumps(self.trace()), encoding="utf-8", newline="")
        for name, rows in (("kernel_details.csv", self.kernel_details()), ("op_statistic.csv", self.op_statistic()),
                           ("api_statistic.csv", self.api_statistic()), ("step_trace_time.csv", self.step_rows())):
            (out / name).write_text(csv_text(rows, False), encoding="utf-8", newline="")
        params = {"output_path": "./profiler_data", "profiler_level": "Level1", "activities": ["CPU", "NPU"],
                  "aic_metrics": "AiCoreNone", "with_stack": False, "profile_memory": False, "data_process": False,
                  "parallel_strategy": False, "l2_cache": False, "hbm_ddr": False, "pcie": False,
                  "data_simplification": True, "export_type": ["text"], "mstx": False,
                  "schedule": {"wait": 0, "warmup": 1, "active": STEPS, "repeat": 1, "skip_first": 2},
                  "jit_level": "O0", "device_id": DEVICE, "rank_id": 0}
        (root / "profiler_info_0.json").write_text(json.dumps({"profiler_parameters": params}, indent=4),
                                                   encoding="utf-8", newline="")
        (root / "profiler_metadata.json").write_text(json.dumps({}, indent=4), encoding="utf-8", newline="")

    def expected(self) -> dict:
        figs = self.figures()
        per_type: dict = {}
        for tk in self.tasks:
            per_type[tk["type"]] = per_type.get(tk["type"], 0) + tk["dur"]
        return {"steps": STEPS, "tasks": len(self.tasks),
                "kernel_ms": sum(tk["dur"] for tk in self.tasks) / 1e6,
                "per_type_ms": {k: v / 1e6 for k, v in sorted(per_type.items())},
                "per_step": [{"step": f["step"], **{k[:-3] + "_ms": f[k] / 1e6 for k in
                                                    ("computing_ns", "free_ns", "stage_ns", "preparing_ns")}}
                             for f in figs]}


def write_mindspore_pair(out: Path) -> dict:
    """Write mindspore/baseline/ and mindspore/target/ under ``out``; return their expected figures."""
    exp = {}
    for side, target in (("baseline", False), ("target", True)):
        r = MindSporeRun(target)
        r.write(out / "mindspore" / side / FOLDERS[side])
        exp[side] = r.expected()
    n_matmul = sum(1 for t in TASKS if t[1] == PLANTED_TYPE)
    exp["planted"] = {
        "what": "every MatMul task longer", "op_type": PLANTED_TYPE, "per_task_us": MATMUL_EXTRA_US,
        "tasks_per_step": n_matmul,
        # Kernel view: one row per (Type, Input Shapes): the forward and the gradient MatMul
        "kernel_rows": [{"kernel": PLANTED_TYPE, "input_shapes": t[4], "diff_us": MATMUL_EXTRA_US * STEPS}
                        for t in TASKS if t[1] == PLANTED_TYPE],
        # Operator view (the scope view: one operator per task, named by its op type)
        "operator_row": {"operator": PLANTED_TYPE, "diff_us": MATMUL_EXTRA_US * n_matmul * STEPS,
                         "calls": n_matmul * STEPS},
        "per_step_us": MATMUL_EXTRA_US * n_matmul, "capture_us": MATMUL_EXTRA_US * n_matmul * STEPS}
    return exp
