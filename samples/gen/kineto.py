"""The GPU run written as a PyTorch Profiler (Kineto) JSON trace."""
from __future__ import annotations

import json
import zlib
from pathlib import Path

from .common import GRAD_TOTAL, KINDS, MATMUL_KINDS, N, us
from .formatting import host_nodes, tsu


GPU_PID, GPU_STREAM, NCCL_STREAM = 2413, 7, 20


def gpu_kernel_args(task, ext):
    kind = task["kind"]
    h = zlib.crc32(kind.encode())
    if kind in MATMUL_KINDS:
        grid, block, regs, smem = [16 + h % 48, 8 + h % 24, 1], [256, 1, 1], 122, 49152
    else:
        grid, block, regs, smem = [108 * (4 + h % 12), 1, 1], [128 + 128 * (h % 2), 1, 1], 24 + h % 16, 0
    bps = round(grid[0] * grid[1] / 108, 6)
    args = {"External id": ext, "queued": 0, "device": 0, "context": 1,
            "stream": NCCL_STREAM if kind == "nccl" else GPU_STREAM, "correlation": task["corr"],
            "registers per thread": regs, "shared memory": smem, "blocks per SM": bps,
            "warps per SM": round(bps * block[0] / 32, 6), "grid": grid, "block": block,
            "est. achieved occupancy %": min(100, int(bps * block[0] / 20.48))}
    if kind == "nccl":
        args.update({"registers per thread": 96, "shared memory": 87568, "grid": [2, 1, 1], "block": [640, 1, 1],
                     "blocks per SM": 0.018519, "warps per SM": 0.37037, "est. achieved occupancy %": 0,
                     "Collective name": "allreduce", "In msg nelems": GRAD_TOTAL // 4,
                     "Out msg nelems": GRAD_TOTAL // 4, "Group size": 2, "dtype": "Float", "In split size": "[]",
                     "Out split size": "[]", "Process Group Name": "0", "Process Group Description": "default_pg",
                     "Process Group Ranks": "[0, 1]"})
    return args


def write_gpu(run, path: Path):
    ev, ext, idx = [], {}, 0
    nodes = host_nodes(run)
    for i, n in enumerate(n for n in nodes if n.cat in ("cpu_op", "user_annotation")):
        ext[id(n)] = 1 + i
    for n in nodes:
        if n.cat == "python_function":
            continue
        if n.cat == "cuda_runtime":
            continue
        a = {"External id": ext[id(n)], "Record function id": ext[id(n)] + 6}
        if n.seq >= 0:
            a["Sequence number"] = n.seq
            a["Fwd thread id"] = 1 if n.bwd else 0
        a["Ev Idx"] = idx
        idx += 1
        if n.dims is not None and n.cat == "cpu_op":
            a["Input Dims"], a["Input type"] = n.dims, n.types
        if n.tid == run.main_tid and n.stack and n.cat == "cpu_op":
            a["Call stack"] = ";".join(n.stack)
        if n.name == "record_param_comms":
            a.update({"Process Group Name": "0", "Global rank stride": 1, "Out msg nelems": GRAD_TOTAL // 4,
                      "Process Group Ranks": "[0, 1]", "Group size": 2, "Global rank start": 0,
                      "In msg nelems": GRAD_TOTAL // 4, "In split size": "[]", "Out split size": "[]",
                      "dtype": "Float", "Process Group Description": "default_pg", "Collective name": "allreduce"})
        ev.append({"ph": "X", "cat": n.cat, "name": n.name, "pid": GPU_PID, "tid": n.tid, "ts": tsu(n.start),
                   "dur": tsu(n.end - n.start), "args": a})
    parent_ext = {}
    for n in nodes:
        for r in n.launches:
            parent_ext[id(r)] = ext[id(n)]
    for n in nodes:
        if n.cat != "cuda_runtime":
            continue
        cbid = {"cudaLaunchKernel": 211, "cudaMemcpyAsync": 41, "cudaLaunchKernelExC": 430}[n.name]
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": n.name, "pid": GPU_PID, "tid": n.tid,
                   "ts": tsu(n.start), "dur": tsu(n.end - n.start),
                   "args": {"External id": parent_ext[id(n)], "cbid": cbid, "correlation": n.corr}})
    for i, (s, e) in enumerate(run.sync):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": GPU_PID,
                   "tid": run.main_tid, "ts": tsu(s), "dur": tsu(e - s),
                   "args": {"External id": 0, "cbid": 165, "correlation": 900001 + i}})
    for pi, (name, s, e, parent, mod) in enumerate(run.pyframes):
        a = {"Python parent id": parent if parent >= 0 else None, "Python id": pi}
        if mod:
            a["Python module id"] = mod[1]
        ev.append({"ph": "X", "cat": "python_function", "name": name, "pid": GPU_PID, "tid": run.main_tid,
                   "ts": tsu(s), "dur": tsu(e - s), "args": a})
    for i, (ts, sign, r, allocated) in enumerate(run.memevents):
        tid = r["tid"] if sign > 0 else r["free"][1].tid
        ev.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": GPU_PID, "tid": tid,
                   "ts": tsu(ts), "args": {"Total Reserved": run.reserved, "Total Allocated": allocated,
                                           "Bytes": sign * r["size"], "Addr": r["addr"], "Device Id": 0,
                                           "Device Type": 1, "Ev Idx": idx + i}})
    for tk in run.tasks:
        e_ = parent_ext[id(tk["launch"])]
        stream = NCCL_STREAM if tk["kind"] == "nccl" else GPU_STREAM
        if tk["kind"] == "memcpy":
            ev.append({"ph": "X", "cat": "gpu_memcpy", "name": KINDS["memcpy"][0], "pid": 0, "tid": stream,
                       "ts": tsu(tk["start"]), "dur": tsu(tk["dur"]),
                       "args": {"External id": e_, "device": 0, "context": 1, "stream": stream,
                                "correlation": tk["corr"], "bytes": N * 8,
                                "memory bandwidth (GB/s)": N * 8 / tk["dur"]}})
        else:
            ev.append({"ph": "X", "cat": "kernel", "name": KINDS[tk["kind"]][0], "pid": 0, "tid": stream,
                       "ts": tsu(tk["start"]), "dur": tsu(tk["dur"]), "args": gpu_kernel_args(tk, e_)})
        r = tk["launch"]
        ev.append({"ph": "s", "id": tk["corr"], "pid": GPU_PID, "tid": r.tid, "ts": tsu(r.start), "cat": "ac2g",
                   "name": "ac2g"})
        ev.append({"ph": "f", "id": tk["corr"], "pid": 0, "tid": stream, "ts": tsu(tk["start"]), "cat": "ac2g",
                   "name": "ac2g", "bp": "e"})
    for i, (f, b) in enumerate(run.fwdbwd):
        ev.append({"ph": "s", "id": 1 + i, "pid": GPU_PID, "tid": f.tid, "ts": tsu(f.start), "cat": "fwdbwd",
                   "name": "fwdbwd"})
        ev.append({"ph": "f", "id": 1 + i, "pid": GPU_PID, "tid": b.tid, "ts": tsu(b.start), "cat": "fwdbwd",
                   "name": "fwdbwd", "bp": "e"})
    t0 = run.pyframes[0][1] - us(310.2)
    meta = [("process_name", GPU_PID, 0, {"name": "python3.11"}), ("process_labels", GPU_PID, 0, {"labels": "CPU"}),
            ("process_sort_index", GPU_PID, 0, {"sort_index": GPU_PID}),
            ("process_name", 0, 0, {"name": "python3.11"}), ("process_labels", 0, 0, {"labels": "GPU 0"}),
            ("process_sort_index", 0, 0, {"sort_index": 16777216})]
    for s in (GPU_STREAM, NCCL_STREAM):
        meta += [("thread_name", 0, s, {"name": f"stream {s} "}), ("thread_sort_index", 0, s, {"sort_index": s})]
    for tid, lab in ((run.main_tid, "pt_main_thread"), (run.bwd_tid, "pt_autograd_0")):
        meta += [("thread_name", GPU_PID, tid, {"name": f"thread {tid} ({lab})"}),
                 ("thread_sort_index", GPU_PID, tid, {"sort_index": tid})]
    ev += [{"name": n, "ph": "M", "ts": tsu(t0), "pid": p, "tid": t, "args": a} for n, p, t, a in meta]
    end = run.end + us(95.3)
    ev += [{"ph": "X", "cat": "Trace", "ts": tsu(t0), "dur": tsu(end - t0), "pid": "Spans", "tid": "PyTorch Profiler",
            "name": "PyTorch Profiler (0)", "args": {"Op count": 0}},
           {"name": "process_sort_index", "ph": "M", "ts": tsu(t0), "pid": "Spans", "tid": 0,
            "args": {"sort_index": 536870912}},
           {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces",
            "tid": "Trace PyTorch Profiler", "ts": tsu(t0)},
           {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": tsu(end)}]
    dev = {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85097971712, "computeMajor": 8,
           "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
           "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 108, "regsPerMultiprocessor": 65536,
           "sharedMemPerBlockOptin": 166912, "sharedMemPerMultiprocessor": 167936}
    dist = {"backend": "nccl", "rank": 0, "world_size": 2, "pg_count": 1,
            "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": 2,
                           "ranks": [0, 1]}], "nccl_version": "2.21.5"}
    parts = ['{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    ' + json.dumps(dev) + "\n  ],",
             '  "distributedInfo": ' + json.dumps(dist) + ",", '  "record_shapes": 1,', '  "traceEvents": [']
    parts.append(",\n".join("  " + json.dumps(e) for e in ev))
    parts += ["  ],", '  "traceName": "/tmp/tinylm_prof/worker0.pt.trace.json",', '  "displayTimeUnit": "ms",',
              '  "baseTimeNanoseconds": 1736900000000000000', "}", ""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts), encoding="utf-8", newline="")
