"""The NPU runs written as Ascend PyTorch Profiler text exports (Level1): trace_view.json,
the CSVs, communication JSONs and profiler_info/metadata."""
from __future__ import annotations

import csv
import io
import json
import zlib
from pathlib import Path

from .common import GRAD_TOTAL, KINDS, MIB, NSTEPS, us
from .figures import planes, subtract, union
from .formatting import host_nodes, kernel_io, r3, shapes_cell, tss, tsu


PID_AH, PID_HCCL, PID_CANN, PID_OVL = 2483027968, 2483028032, 2483027776, 2483028288
NPU_STREAM, HCCL_GROUP_ID, GROUP_HASH = 2, 738, "10857221409128307423"
STREAM_PTR = "2291832117696"
AIC = {"AI_CORE": "AI_CORE", "AI_VECTOR_CORE": "AI_CORE", "MIX_AIV": "MIX_AIV"}


def npu_kernel_name(task, td_index):
    kind = task["kind"]
    _, api, impl, typ, _ = KINDS[kind]
    if kind == "transdata":
        return f"trans_TransData_{td_index}"
    return f"{api}_{impl}_{typ}"


def npu_dims(dims) -> str:
    return ";\r\n".join(",".join(str(x) for x in d) for d in dims)


def pmu(kind, dur_ns):
    """The 25 level-1 PMU cells (aicore_time(us) .. cube_utilization(%)) of a compute task."""
    d = dur_ns / 1000
    h = zlib.crc32(kind.encode())
    core = KINDS[kind][4]
    if core == "AI_CORE":
        t = r3(d * 0.985)
        ratios = (0.62, 0.18, 0.35, 0.71, 0.09)
        aic = [repr(t), str(int(t * 1800))]
        for rt in ratios:
            aic += [repr(r3(t * rt)), repr(rt)]
        return aic + ["0.002"] + ["0.0", "0"] + ["0.0"] * 8 + ["0.0"] + [repr(r3(60 + h % 300 / 10))]
    t = r3(d * 0.96)
    aiv = [repr(t), str(int(t * 1800))]
    for rt in (0.41, 0.12, 0.55, 0.38):
        aiv += [repr(r3(t * rt)), repr(rt)]
    return ["0.0", "0"] + ["0.0"] * 10 + ["0.0"] + aiv + ["0.021", "0"]


def csv_text(rows, crlf: bool) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n" if crlf else "\n")
    w.writerows(rows)
    return buf.getvalue()


class NpuExport:
    """Writes one rank's *_ascend_pt folder from a generated NPU Run."""

    def __init__(self, run):
        self.run = run
        self.compute = [tk for tk in run.tasks if tk["kind"] not in ("nccl", "memcpy")]
        self.comm = [tk for tk in run.tasks if tk["kind"] == "nccl"]
        td = {}
        task_id = 1201
        for tk in run.tasks:
            if tk["kind"] == "transdata":
                td.setdefault(tk["step"], 0)
                tk["name"] = npu_kernel_name(tk, td[tk["step"]])
                td[tk["step"]] += 1
            elif tk["kind"] == "nccl":
                k = self.comm.index(tk)
                tk["name"] = f"hcom_allReduce__{HCCL_GROUP_ID}_{k}_1"
            elif tk["kind"] == "memcpy":
                tk["name"] = "MEMCPY_ASYNC"
            else:
                tk["name"] = npu_kernel_name(tk, 0)
            if tk["kind"] != "nccl":
                tk["task_id"] = task_id
                task_id += 1
        self.by_conn = {tk.get("conn"): tk for tk in run.tasks}
        self.overlap()

    # ---- Overlap Analysis
    def overlap(self):
        run = self.run
        self.cu = union([(tk["start"], tk["end"]) for tk in self.compute])
        self.commu = union([(tk["start"], tk["end"]) for tk in self.comm])
        self.unc = subtract(self.commu, self.cu)
        first, last = run.tasks[0]["start"], max(tk["end"] for tk in run.tasks)
        busy = union([list(x) for x in self.cu] + [list(x) for x in self.commu])
        self.free = subtract([[first, last]], busy)

    def step_rows(self):
        rows = [["Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free", "Stage",
                 "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing"]]
        for st in range(1, NSTEPS + 1):
            f = self.run.figs[str(st)]
            ps = self.run.steps[st - 1]["node"]
            comp, unc = f["computing_us"] * 1000, f["uncovered_communication_us"] * 1000
            comm = f["communication_us"] * 1000
            rows.append([st, comp / 1000, unc / 1000, (comm - unc) / 1000, comm / 1000, f["free_us"] * 1.0,
                         f["e2e_us"] * 1.0, 0, unc / 1000, (f["window_start_ns"] - ps.start) / 1000])
        return rows

    # ---- trace_view.json
    def trace(self):
        run = self.run
        ev = []
        nodes = [n for n in host_nodes(run) if n.cat in ("cpu_op",)]
        self.cpu_nodes = nodes
        for n in nodes:
            a = {"Sequence number": n.seq, "Fwd thread id": 1 if n.bwd else 0}
            if n.dims is not None:
                a["Input Dims"], a["Input type"] = npu_dims(n.dims), ";\r\n".join(n.types)
            if n.tid == run.main_tid and n.stack:
                a["Call stack"] = ";\r\n".join(n.stack)
            ev.append({"ph": "X", "name": n.name, "pid": run.main_tid, "tid": n.tid, "ts": tss(n.start),
                       "dur": tsu(n.end - n.start), "cat": "cpu_op", "args": a})
        pid = run.main_tid
        for a in run.enqs:
            s, d, corr = a.enq
            ev.append({"ph": "X", "name": "Enqueue", "pid": pid, "tid": a.tid, "ts": tss(s), "dur": tsu(d),
                       "cat": "enqueue", "args": {"correlation_id": corr}})
            ev.append({"ph": "s", "bp": "e", "name": "enqueue_to_dequeue", "id": corr, "pid": pid, "tid": a.tid,
                       "ts": tss(s), "cat": "async_task_queue"})
        for s, d, corr, api in run.deqs:
            ev.append({"ph": "X", "name": f"Dequeue@{api}", "pid": pid, "tid": run.deq_tid, "ts": tss(s),
                       "dur": tsu(d), "cat": "dequeue", "args": {"correlation_id": corr}})
            ev.append({"ph": "f", "bp": "e", "name": "enqueue_to_dequeue", "id": corr, "pid": pid,
                       "tid": run.deq_tid, "ts": tss(s), "cat": "async_task_queue"})
        for i, (f, b) in enumerate(run.fwdbwd):
            ev.append({"ph": "s", "bp": "e", "name": "fwdbwd", "id": f.seq, "pid": pid, "tid": f.tid,
                       "ts": tss(f.start), "cat": "fwdbwd"})
            ev.append({"ph": "f", "bp": "e", "name": "fwdbwd", "id": f.seq, "pid": pid, "tid": b.tid,
                       "ts": tss(b.start), "cat": "fwdbwd"})
        for pi, (name, s, e, parent, mod) in enumerate(run.pyframes):
            a = {"Python id": pi, "Python parent id": max(parent, 0)}
            if mod:
                a["Python module id"] = mod[1]
            ev.append({"ph": "X", "name": name, "pid": pid, "tid": run.main_tid, "ts": tss(s), "dur": tsu(e - s),
                       "cat": "python_function", "args": a})
        ev.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "Python"}})
        ev.append({"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": "CPU"}})
        ev.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": 0}})
        for i, tid in enumerate((run.main_tid, run.bwd_tid, run.deq_tid)):
            ev.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": f"Thread {tid}"}})
            ev.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                       "args": {"sort_index": tid if i < 2 else run.bwd_tid + 1}})
        ev += self.device_meta()
        ev += sorted(self.device_events(), key=lambda e: int(e["ts"].replace(".", "")))
        for tk in run.tasks:
            a = tk["launch"]
            fid = tk["start"]
            fpid, ftid = (PID_HCCL, 0) if tk["kind"] == "nccl" else (PID_AH, NPU_STREAM)
            ev.append({"ph": "s", "bp": "e", "name": "torch_to_npu", "id": fid, "pid": pid, "tid": a.tid,
                       "ts": tss(a.start), "cat": "async_npu"})
            ev.append({"ph": "f", "bp": "e", "name": "torch_to_npu", "id": fid, "pid": fpid, "tid": ftid,
                       "ts": tss(tk["start"]), "cat": "async_npu"})
        return ev

    def device_meta(self):
        run = self.run
        m = lambda n, p, t, a: {"name": n, "pid": p, "tid": t, "args": a, "ph": "M"}  # noqa: E731
        out = [m("process_name", PID_AH, 0, {"name": "Ascend Hardware"}),
               m("thread_name", PID_AH, NPU_STREAM, {"name": f"Stream {NPU_STREAM}"}),
               m("thread_sort_index", PID_AH, NPU_STREAM, {"sort_index": NPU_STREAM}),
               m("process_labels", PID_AH, 0, {"labels": "NPU"}),
               m("process_sort_index", PID_AH, 0, {"sort_index": 13}),
               m("process_name", PID_HCCL, 0, {"name": "HCCL"}),
               m("thread_name", PID_HCCL, 0, {"name": "Group 0 Communication"}),
               m("thread_sort_index", PID_HCCL, 0, {"sort_index": 0})]
        out += [m("thread_name", PID_HCCL, p + 1, {"name": f"Plane {p}"}) for p in (0, 1)]
        out += [m("thread_sort_index", PID_HCCL, p + 1, {"sort_index": p + 1}) for p in (0, 1)]
        out += [m("process_labels", PID_HCCL, 0, {"labels": "NPU"}),
                m("process_sort_index", PID_HCCL, 0, {"sort_index": 15}),
                m("process_name", PID_CANN, 0, {"name": "CANN"})]
        tids = (run.main_tid, run.bwd_tid, run.deq_tid)
        out += [m("thread_name", PID_CANN, t, {"name": f"Thread {t}"}) for t in tids]
        out += [m("thread_sort_index", PID_CANN, t, {"sort_index": t}) for t in tids]
        out += [m("process_labels", PID_CANN, 0, {"labels": "CPU"}), m("process_sort_index", PID_CANN, 0,
                                                                       {"sort_index": 7}),
                m("process_name", PID_OVL, 0, {"name": "Overlap Analysis"})]
        out += [m("thread_name", PID_OVL, i, {"name": n}) for i, n in
                enumerate(("Computing", "Communication", "Communication(Not Overlapped)", "Free"))]
        out += [m("process_labels", PID_OVL, 0, {"labels": "NPU"}),
                m("process_sort_index", PID_OVL, 0, {"sort_index": 23})]
        return out

    def device_events(self):
        run = self.run
        out = []
        for tk in run.tasks:
            conn = tk.get("conn")
            if tk["kind"] == "nccl":
                out.append({"name": tk["name"], "pid": PID_HCCL, "tid": 0, "ts": tss(tk["start"]),
                            "dur": tsu(tk["dur"]), "args": {"connection_id": conn, "model id": 4294967295,
                                                            "data_type": "FP32", "alg_type": "RING",
                                                            "count": GRAD_TOTAL // 4}, "ph": "X"})
                out.append({"name": f"HostToDevice{conn}", "ph": "f", "id": str(conn), "ts": tss(tk["start"]),
                            "cat": "HostToDevice", "pid": PID_HCCL, "tid": 0, "bp": "e"})
                for i, (p, name, s, d, size) in enumerate(planes(run, tk)):
                    nw = name.startswith("Notify")
                    link = "ON_CHIP" if (p == 0 and i == 0) else ("INVALID_TYPE" if nw else "HCCS")
                    out.append({"name": name, "pid": PID_HCCL, "tid": p + 1, "ts": tss(s), "dur": tsu(d), "args": {
                        "notify_id": "18446744073709551615" if not nw else str(64 + 8 * p + i),
                        "duration estimated(us)": 0.02 if name == "Notify_Wait" else r3(d / 1000 * 0.93 + 0.6),
                        "stream id": 5 + p, "task id": 40 + i, "context id": i, "task type": name,
                        "src rank": 0, "dst rank": 0 if (p == 0 and i == 0) else 1,
                        "transport type": "LOCAL" if name == "Notify_Wait" else "SDMA", "size(Byte)": size,
                        "data type": "FP32" if name == "Reduce_Inline" else "INVALID_TYPE", "link type": link,
                        "bandwidth(GB/s)": (size / d) if size else 0.0, "model id": 4294967295}, "ph": "X"})
                continue
            core = KINDS[tk["kind"]][4]
            ttype = "PCIE_DMA_SQE" if tk["kind"] == "memcpy" else AIC[core]
            out.append({"name": tk["name"], "pid": PID_AH, "tid": NPU_STREAM, "ts": tss(tk["start"]),
                        "dur": tsu(tk["dur"]), "args": {
                            "Model Id": 4294967295, "Task Type": ttype, "Physic Stream Id": NPU_STREAM,
                            "Task Id": tk["task_id"], "Batch Id": 0,
                            "Subtask Id": 0 if core == "MIX_AIV" else 4294967295, "connection_id": conn}, "ph": "X"})
            out.append({"name": f"HostToDevice{conn}", "ph": "f", "id": str(conn), "ts": tss(tk["start"]),
                        "cat": "HostToDevice", "pid": PID_AH, "tid": NPU_STREAM, "bp": "e"})
        for name, s, d, level, ident, mode, conn in run.cann:
            cid = conn if conn is not None else self.run.next_conn()
            out.append({"name": name, "pid": PID_CANN, "tid": run.deq_tid, "ts": tss(s), "dur": tsu(d), "args": {
                "Thread Id": run.deq_tid, "Mode": mode, "level": level,
                "id": ident if level == "acl" else "0",
                "item_id": "0" if level == "acl" else (self.by_conn[conn]["name"] if level == "node" else ident),
                "connection_id": cid}, "ph": "X"})
            if conn is not None:
                out.append({"name": f"HostToDevice{conn}", "ph": "s", "cat": "HostToDevice", "id": str(conn),
                            "pid": PID_CANN, "tid": run.deq_tid, "ts": tss(s)})
        for i, (s, e) in enumerate(run.sync):
            out.append({"name": "AscendCL@aclrtSynchronizeDevice", "pid": PID_CANN, "tid": run.main_tid,
                        "ts": tss(s), "dur": tsu(e - s), "args": {
                            "Thread Id": run.main_tid, "Mode": "ACL_RTS", "level": "acl",
                            "id": "aclrtSynchronizeDevice", "item_id": "0", "connection_id": 9001 + i}, "ph": "X"})
        for tid, name, iv in ((0, "Computing", self.cu), (1, "Communication", self.commu),
                              (2, "Communication(Not Overlapped)", self.unc), (3, "Free", self.free)):
            for s, e in iv:
                out.append({"name": name, "pid": PID_OVL, "tid": tid, "ts": tss(s), "dur": tsu(e - s), "ph": "X"})
        return out



    # ---- CSVs
    def kernel_details(self):
        hdr = ("Step Id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,Start Time(us),Duration(us),"
               "Wait Time(us),Block Dim,Mix Block Dim,HF32 Eligible,Input Shapes,Input Data Types,Input Formats,"
               "Output Shapes,Output Data Types,Output Formats,Context ID,aicore_time(us),aic_total_cycles,"
               "aic_mac_time(us),aic_mac_ratio,aic_scalar_time(us),aic_scalar_ratio,aic_mte1_time(us),aic_mte1_ratio,"
               "aic_mte2_time(us),aic_mte2_ratio,aic_fixpipe_time(us),aic_fixpipe_ratio,aic_icache_miss_rate,"
               "aiv_time(us),aiv_total_cycles,aiv_vec_time(us),aiv_vec_ratio,aiv_scalar_time(us),aiv_scalar_ratio,"
               "aiv_mte2_time(us),aiv_mte2_ratio,aiv_mte3_time(us),aiv_mte3_ratio,aiv_icache_miss_rate,"
               "cube_utilization(%)").split(",")
        rows, prev_end = [hdr], None
        for tk in self.run.tasks:
            wait = 0 if prev_end is None else (tk["start"] - prev_end) / 1000
            if tk["kind"] != "memcpy":
                row = [tk["step"], 4294967295]
                if tk["kind"] == "nccl":
                    row += ["N/A", "N/A", tk["name"], "hcom_allReduce_", "N/A", "HCCL", tss(tk["start"]) + "\t",
                            tsu(tk["dur"]), wait, 0] + ["N/A"] * 34
                else:
                    _, _, _, typ, core = KINDS[tk["kind"]]
                    ins, itys, outs, otys = kernel_io(tk)
                    row += [tk["task_id"], NPU_STREAM, tk["name"], typ, "dynamic", core, tss(tk["start"]) + "\t",
                            tsu(tk["dur"]), wait, 24 if core == "AI_CORE" else 48, 0, "NO",
                            shapes_cell(ins) if ins else "N/A", ";".join(itys) or "N/A",
                            ";".join("FORMAT_ND" for _ in itys) or "N/A", shapes_cell(outs) if outs else "N/A",
                            ";".join(otys) or "N/A", ";".join("FORMAT_ND" for _ in otys) or "N/A",
                            "0" if core == "MIX_AIV" else "N/A"] + pmu(tk["kind"], tk["dur"])
                rows.append(row)
            prev_end = tk["end"]
        return rows

    def op_statistic(self):
        groups = {}
        for tk in self.compute:
            _, _, _, typ, core = KINDS[tk["kind"]]
            groups.setdefault((typ, core), []).append(tk["dur"] / 1000)
        total = sum(sum(v) for v in groups.values())
        rows = [["OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)", "Max Time(us)",
                 "Ratio(%)"]]
        for (typ, core), v in sorted(groups.items(), key=lambda kv: (-sum(kv[1]), kv[0])):
            rows.append([typ, core, len(v), r3(sum(v)), min(v), r3(sum(v) / len(v)), max(v),
                         r3(sum(v) / total * 100)])
        return rows

    def api_statistic(self):
        groups = {}
        for name, s, d, level, ident, mode, conn in self.run.cann:
            groups.setdefault((level, ident), []).append(d / 1000)
        for s, e in self.run.sync:
            groups.setdefault(("acl", "aclrtSynchronizeDevice"), []).append((e - s) / 1000)
        rows = [["Level", "API Name", "Time(us)", "Count", "Avg(us)", "Min(us)", "Max(us)", "Variance"]]
        order = {"hccl": 0, "acl": 1, "node": 2}
        for (level, ident), v in sorted(groups.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
            avg = sum(v) / len(v)
            rows.append([level, ident, round(sum(v), 2), len(v), r3(avg), round(min(v), 2), round(max(v), 2),
                         r3(sum((x - avg) ** 2 for x in v) / len(v))])
        return rows

    def l2_cache(self):
        rows = [["Stream Id", "Task Id", "Hit Rate", "Victim Rate", "Op Name"]]
        for tk in self.compute:
            rows.append([NPU_STREAM, tk["task_id"], "N/A", round(zlib.crc32(tk["name"].encode()) % 1000 / 4000, 6),
                         tk["name"]])
        return rows

    def operator_details(self):
        rows = [["Name", "Input Shapes", "Call Stack", "Host Self Duration(us)", "Host Total Duration(us)",
                 "Device Self Duration(us)", "Device Total Duration(us)", "Device Self Duration With AICore(us)",
                 "Device Total Duration With AICore(us)"]]
        own = {}
        for tk in self.run.tasks:
            own.setdefault(id(tk["launch"]), []).append(tk)

        def dev(n, aicore):
            tot = sum(tk["dur"] for tk in own.get(id(n), []) if not aicore or tk["kind"] not in ("nccl", "memcpy"))
            return tot

        def subtree(n, aicore):
            return dev(n, aicore) + sum(subtree(k, aicore) for k in n.kids + n.launches)

        for n in self.cpu_nodes:
            if n.name.startswith("ProfilerStep#"):
                continue
            kids = n.kids + n.launches
            self_host = (n.end - n.start) - sum(k.end - k.start for k in kids)
            rows.append([n.name, ";\n".join(",".join(str(x) for x in d) for d in n.dims) if n.dims else "",
                         ";\n".join(n.stack) if n.tid == self.run.main_tid else "", r3(self_host / 1000),
                         r3((n.end - n.start) / 1000), dev(n, False) / 1000, subtree(n, False) / 1000,
                         dev(n, True) / 1000, subtree(n, True) / 1000])
        return rows

    def memory_rows(self):
        run = self.run
        res = run.reserved / MIB
        rec = [["Component", "Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)", "Total Active(MB)",
                "Stream Ptr", "Device Type"]]
        body = []
        for ts, sign, r, allocated in run.memevents:
            for comp in ("PTA", "PTA+GE"):
                body.append((ts, [comp, tss(ts) + "\t", allocated / MIB, res, allocated / MIB, STREAM_PTR, "NPU:0"]))
        t0, t1 = run.pyframes[0][1], run.pyframes[0][2]
        t = t0 + us(812.4)
        while t < t1:
            body.append((t, ["APP", tss(t) + "\t", "", res, "", "", "NPU:0"]))
            t += us(2000)
        body.sort(key=lambda x: x[0])
        rec += [b for _, b in body]
        om = [["Name", "Size(KB)", "Allocation Time(us)", "Release Time(us)", "Active Release Time(us)",
               "Duration(us)", "Active Duration(us)", "Allocation Total Allocated(MB)",
               "Allocation Total Reserved(MB)", "Allocation Total Active(MB)", "Release Total Allocated(MB)",
               "Release Total Reserved(MB)", "Release Total Active(MB)", "Stream Ptr", "Device Type"]]
        after = {}
        for ts, sign, r, allocated in run.memevents:
            after[(id(r), sign)] = allocated
        for r in sorted((r for r in run.mem if r["ts"] is not None), key=lambda r: r["ts"]):
            a = after[(id(r), 1)] / MIB
            row = [r["op"].name, r["size"] / 1024, tss(r["ts"]) + "\t"]
            if r["free"] is not None:
                f = r["free"][0]
                rel = after[(id(r), -1)] / MIB
                row += [tss(f) + "\t", tss(f - 310) + "\t", tss(f - r["ts"]) + "\t", tss(f - r["ts"] - 310) + "\t",
                        a, res, a, rel, res, rel]
            else:
                row += ["", "", "", "", a, res, a, "", "", ""]
            om.append(row + [STREAM_PTR, "NPU:0"])
        mm = [["Component", "Timestamp(us)", "Total Reserved(MB)", "Device"]]
        stamps = []
        t = t0 + us(1377.81)
        while t < t1:
            stamps.append(t)
            t += us(5000)
        for comp, val in (("SLOG", 0.0), ("HCCL", 328.0625), ("RUNTIME", 18.4375), ("APP", res), ("GE", 6.0),
                          ("FFTS", 0.0)):
            mm += [[comp, tss(s) + "\t", val, "NPU:0"] for s in stamps]
        return rec, om, mm

    def communication(self):
        comm, matrix = {}, {}
        for st in range(1, NSTEPS + 1):
            ops = [tk for tk in self.comm if tk["step"] == st]
            coll, mcoll = {}, {}
            tot = {"elapse": 0, "transit": 0, "wait": 0, "sync": 0, "size": 0, "ttime": 0, "dist": {}}
            for tk in ops:
                pl = planes(self.run, tk)
                nw0 = sum(d for p, n, s, d, sz in pl if p == 0 and n == "Notify_Wait")
                tr0 = sum(d for p, n, s, d, sz in pl if p == 0 and n in ("Reduce_Inline", "Memcpy") and s > tk["start"])
                xfer = [(d, sz) for p, n, s, d, sz in pl if n in ("Reduce_Inline", "Memcpy") and not
                        (p == 0 and s == tk["start"])]
                size = sum(sz for d, sz in xfer) / 1e6
                ttime = sum(d for d, sz in xfer) / 1e6
                dist = {}
                for d, sz in xfer:
                    e = dist.setdefault(repr(sz / 1e6), [0, 0.0])
                    e[0] += 1
                    e[1] += d / 1e6
                el = tk["dur"] / 1e6
                info = {"Start Timestamp(us)": tk["start"] / 1000, "Elapse Time(ms)": el,
                        "Transit Time(ms)": tr0 / 1e6, "Wait Time(ms)": nw0 / 1e6,
                        "Synchronization Time(ms)": nw0 / 1e6, "Idle Time(ms)": (tk["dur"] - tr0 - nw0) / 1e6,
                        "Wait Time Ratio": round(nw0 / (nw0 + tr0), 4),
                        "Synchronization Time Ratio": round(nw0 / (nw0 + tr0), 4)}
                coll[f"{tk['name']}@{GROUP_HASH}"] = {"Communication Time Info": info,
                                                       "Communication Bandwidth Info": self.bw(size, ttime, dist)}
                for k, v in (("elapse", el), ("transit", tr0 / 1e6), ("wait", nw0 / 1e6), ("sync", nw0 / 1e6),
                             ("size", size), ("ttime", ttime)):
                    tot[k] += v
                for k, v in dist.items():
                    e = tot["dist"].setdefault(k, [0, 0.0])
                    e[0] += v[0]
                    e[1] += v[1]
                local = (GRAD_TOTAL / 1e6, us(100) / 1e6)
                links = {"0-0": ("LOCAL", *local), "0-1": ("HCCS", size, ttime)}
                for nm in ("top1", "total"):
                    mcoll[f"allreduce-{nm}@{GROUP_HASH}"] = {
                        k: {"Transport Type": tt, "Transit Size(MB)": sz, "Transit Time(ms)": tm,
                            "Bandwidth(GB/s)": round(sz / tm, 4), "Op Name": tk["name"]}
                        for k, (tt, sz, tm) in links.items()}
            coll["Total Op Info"] = {
                "Communication Time Info": {
                    "Elapse Time(ms)": tot["elapse"], "Transit Time(ms)": tot["transit"],
                    "Wait Time(ms)": tot["wait"], "Synchronization Time(ms)": tot["sync"],
                    "Idle Time(ms)": tot["elapse"] - tot["transit"] - tot["wait"],
                    "Wait Time Ratio": round(tot["wait"] / (tot["wait"] + tot["transit"]), 4),
                    "Synchronization Time Ratio": round(tot["sync"] / (tot["sync"] + tot["transit"]), 4)},
                "Communication Bandwidth Info": {
                    k: {"Transit Time(ms)": tot["ttime"] if k in ("HCCS", "SDMA") else 0,
                        "Transit Size(MB)": tot["size"] if k in ("HCCS", "SDMA") else 0,
                        "Size Distribution": tot["dist"] if k == "HCCS" else {}}
                    for k in ("RDMA", "HCCS", "PCIE", "SDMA", "SIO")}}
            comm[f"step{st}"] = {"p2p": {}, "collective": coll}
            matrix[f"step{st}"] = {"p2p": {}, "collective": mcoll}
        return comm, matrix

    @staticmethod
    def bw(size, ttime, dist):
        zero = {"Transit Size(MB)": 0, "Transit Time(ms)": 0, "Bandwidth(GB/s)": 0, "Large Packet Ratio": 0,
                "Size Distribution": {}}
        link = {"Transit Size(MB)": size, "Transit Time(ms)": ttime, "Bandwidth(GB/s)": round(size / ttime, 4)}
        return {"RDMA": dict(zero), "HCCS": dict(link, **{"Large Packet Ratio": 0.0, "Size Distribution": dist}),
                "PCIE": dict(zero), "SDMA": dict(link, **{"Large Packet Ratio": 0, "Size Distribution": {}}),
                "SIO": dict(zero)}

    def write(self, root: Path):
        run = self.run
        out = root / "ASCEND_PROFILER_OUTPUT"
        out.mkdir(parents=True, exist_ok=True)
        trace = self.trace()
        (out / "trace_view.json").write_text(json.dumps(trace), encoding="utf-8", newline="")
        files = {"kernel_details.csv": (self.kernel_details(), True), "op_statistic.csv": (self.op_statistic(), False),
                 "api_statistic.csv": (self.api_statistic(), False), "l2_cache.csv": (self.l2_cache(), False),
                 "operator_details.csv": (self.operator_details(), False),
                 "step_trace_time.csv": (self.step_rows(), True)}
        rec, om, mm = self.memory_rows()
        files.update({"memory_record.csv": (rec, True), "operator_memory.csv": (om, True),
                      "npu_module_mem.csv": (mm, False)})
        for name, (rows, crlf) in files.items():
            (out / name).write_text(csv_text(rows, crlf), encoding="utf-8", newline="")
        comm, matrix = self.communication()
        (out / "communication.json").write_text(json.dumps(comm), encoding="utf-8", newline="")
        (out / "communication_matrix.json").write_text(json.dumps(matrix), encoding="utf-8", newline="")
        info = {"config": {"common_config": {
            "activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"],
            "schedule": {"wait": 0, "active": NSTEPS, "warmup": 1, "repeat": 1, "skip_first": 5},
            "record_shapes": True, "profile_memory": True, "with_stack": True, "with_flops": False,
            "with_modules": True},
            "experimental_config": {"_profiler_level": "Level1", "_aic_metrics": "ACL_AICORE_PIPE_UTILIZATION",
                                    "_l2_cache": True, "_msprof_tx": False, "_data_simplification": True,
                                    "record_op_args": False, "_export_type": "text", "_op_attr": False,
                                    "_gc_detect_threshold": None}},
            "start_info": {"syscnt_enable": True, "freq": 100, "start_cnt": 20811400731655,
                           "start_monotonic": 208114007316550},
            "end_info": {"collectionTimeEnd": run.end + us(3512.7), "MonotonicTimeEnd": 208114153480212},
            "rank_id": 0}
        (root / "profiler_info_0.json").write_text(json.dumps(info, indent=4), encoding="utf-8", newline="")
        env = ["ASCEND_GLOBAL_LOG_LEVEL", "HCCL_RDMA_TC", "HCCL_RDMA_SL", "ACLNN_CACHE_LIMIT", "HOST_CACHE_CAPACITY",
               "ASCEND_ENHANCE_ENABLE", "PYTORCH_NPU_ALLOC_CONF", "ASCEND_LAUNCH_BLOCKING"]
        (root / "profiler_metadata.json").write_text(json.dumps({"ENV_VARIABLES": dict.fromkeys(env, "")}, indent=4),
                                                     encoding="utf-8", newline="")
