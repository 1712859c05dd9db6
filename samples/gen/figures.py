"""The ground-truth figures written to expected.json (interval arithmetic over a run's device
tasks) and the memory timeline both formats write."""
from __future__ import annotations

from .common import GRAD_TOTAL, MATMUL_KINDS, MIB, NPU_ONLY, NSTEPS, PARAM_STATE, us


def walk(node):
    yield node
    for k in node.kids:
        yield from walk(k)


def union(iv):
    out = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def overlap(a, b):
    tot = 0
    for s1, e1 in a:
        for s2, e2 in b:
            tot += max(0, min(e1, e2) - max(s1, s2))
    return tot


def subtract(a, b):
    """Intervals of union a minus union b."""
    out = []
    for s, e in a:
        cur = s
        for bs, be in b:
            if be <= cur or bs >= e:
                continue
            if bs > cur:
                out.append([cur, bs])
            cur = max(cur, be)
        if cur < e:
            out.append([cur, e])
    return out


def planes(run, task):
    """HCCL plane tasks of one NPU all-reduce: (plane, name, start, dur, size)."""
    w0, w1 = run.var["waits"]
    s, dur = task["start"], task["dur"]
    half = GRAD_TOTAL // 2
    out = []
    for p, (off, w, red) in enumerate(((0, w0, 500), (2, w1, 400))):
        t = s + us(off)
        seq = [("Memcpy", 100, GRAD_TOTAL)] if p == 0 else []
        seq += [("Notify_Record", 1, 0), ("Notify_Wait", w, 0), ("Reduce_Inline", red, half), ("Notify_Record", 1, 0)]
        for name, d, size in seq:
            out.append((p, name, t, us(d), size))
            t += us(d)
        out.append((p, "Memcpy", t, s + dur - t, half))
    return out


def figures(run):
    """Per step and capture totals, in integer µs (exact) and bytes."""
    res = {}
    comp = [tk for tk in run.tasks if tk["kind"] not in ("nccl", "memcpy")]
    steps = range(1, NSTEPS + 1)
    starts = {st: min(tk["start"] for tk in run.tasks if tk["step"] == st) for st in steps}
    last = max(tk["end"] for tk in run.tasks if tk["step"] == NSTEPS)
    windows = {st: (starts[st], starts[st + 1] if st < NSTEPS else last) for st in steps}
    windows["total"] = (starts[1], last)
    for key, (w0, w1) in windows.items():
        ts_ = [tk for tk in run.tasks if key == "total" or tk["step"] == key]
        cmp_ = [tk for tk in ts_ if tk in comp]
        comm = [tk for tk in ts_ if tk["kind"] == "nccl"]
        cu = union([(tk["start"], tk["end"]) for tk in cmp_])
        computing = sum(e - s for s, e in cu)
        assert computing == sum(tk["dur"] for tk in cmp_), "compute tasks overlap"
        comm_u = union([(tk["start"], tk["end"]) for tk in comm])
        uncovered = subtract(comm_u, cu)
        wait = 0
        if run.dev == "NPU":
            for tk in comm:
                pl = planes(run, tk)
                nw = {p: [(s, s + d) for (pp, n, s, d, _) in pl if pp == p and n == "Notify_Wait"] for p in (0, 1)}
                best = min((0, 1), key=lambda p: sum(e - s for s, e in nw[p]))
                wait += overlap(nw[best], uncovered)
        unc = sum(e - s for s, e in uncovered)
        e2e = w1 - w0
        cat = {"matmul": 0, "vector_trans": 0, "vector_notrans": 0}
        cnt = dict.fromkeys(cat, 0)
        for tk in cmp_:
            c = "matmul" if tk["kind"] in MATMUL_KINDS else "vector_trans" if tk["kind"] in NPU_ONLY else \
                "vector_notrans"
            cat[c] += tk["dur"]
            cnt[c] += 1
        sdma = sum(tk["dur"] for tk in ts_ if tk["kind"] == "memcpy")
        f = {
            "computing_us": computing, "matmul_cube_us": cat["matmul"], "matmul_vector_us": 0,
            "vector_us": cat["vector_trans"] + cat["vector_notrans"], "vector_trans_us": cat["vector_trans"],
            "vector_notrans_us": cat["vector_notrans"], "cube_us": 0, "other_us": 0,
            "communication_us": sum(tk["dur"] for tk in comm), "uncovered_communication_us": unc,
            "wait_us": wait, "transmit_us": unc - wait, "free_us": e2e - computing - unc, "sdma_us": sdma,
            "e2e_us": e2e, "kernel_count": len(cmp_), "matmul_count": cnt["matmul"],
            "vector_trans_count": cnt["vector_trans"], "vector_notrans_count": cnt["vector_notrans"],
            "comm_op_count": len(comm), "window_start_ns": w0, "window_end_ns": w1,
        }
        out = {}
        for k, v in f.items():
            if k.endswith("_us"):
                assert v % 1000 == 0, (k, v)
                out[k] = v // 1000
                out[k[:-3] + "_ms"] = v / 1e6
            else:
                out[k] = v
        res[str(key)] = out
    res["memory"] = run.memfig
    res["modules_fwd_us"] = module_times(run)
    return res


STEP_FIGURES = ("duration", "iteration_gap", "fwd_bwd", "tail", "tail_compute", "tail_communication", "tail_idle",
                "dataloader", "memcpy")


def step_phases(run):
    """Per step (host window [ProfilerStep#N start, end]) the phase figures of expected.json "steps", in ns:

    * iteration_gap: ProfilerStep#N start -> start of the step's first device task (the device is idle: the
      previous step ended before it; the host runs the DataLoader, zero_grad and the first launches);
    * fwd_bwd: first device task start -> end of the last compute task launched by the forward or backward
      pass (the last task before the all-reduce; everything launched before Optimizer.step);
    * tail: end of fwd_bwd -> ProfilerStep#N end, so iteration_gap + fwd_bwd + tail = duration;
    * tail_compute: compute task time inside the tail (the optimizer's kernels);
    * tail_communication: communication op time inside the tail not covered by compute (the all-reduce);
    * tail_idle: tail - tail_compute - tail_communication;
    * dataloader: the step's DataLoader ``__next__`` host op; memcpy: the step's HtoD copy (device time).
    """
    out = []
    for st in run.steps:
        ps, n = st["node"], st["step"]
        tks = [tk for tk in run.tasks if tk["step"] == n]
        first = min(tk["start"] for tk in tks)
        fb_end = max(tk["end"] for tk in tks if tk["kind"] not in ("nccl", "memcpy") and tk["phase"] != "opt")
        assert all(tk["phase"] == "opt" or tk["kind"] == "nccl" or tk["end"] <= fb_end for tk in tks)
        comp = union([[max(tk["start"], fb_end), tk["end"]] for tk in tks
                      if tk["kind"] not in ("nccl", "memcpy") and tk["end"] > fb_end])
        comm = subtract(union([[max(tk["start"], fb_end), tk["end"]] for tk in tks
                               if tk["kind"] == "nccl" and tk["end"] > fb_end]), comp)
        tail = ps.end - fb_end
        dl = ps.kids[0]
        f = {"duration": ps.end - ps.start, "iteration_gap": first - ps.start, "fwd_bwd": fb_end - first,
             "tail": tail, "tail_compute": sum(e - s for s, e in comp),
             "tail_communication": sum(e - s for s, e in comm), "dataloader": dl.end - dl.start,
             "memcpy": sum(tk["dur"] for tk in tks if tk["kind"] == "memcpy")}
        f["tail_idle"] = tail - f["tail_compute"] - f["tail_communication"]
        assert f["iteration_gap"] + f["fwd_bwd"] + f["tail"] == f["duration"]
        out.append(dict(step=n, start_ns=ps.start, **{k: f[k] for k in STEP_FIGURES}))
    return out


def module_times(run):
    """Device time (µs, whole capture) of the kernels launched inside each forward nn.Module, by module path."""
    paths = {}
    for i, (name, s, e, parent, mod) in enumerate(run.pyframes):
        if mod:
            p = parent
            while p >= 0 and not run.pyframes[p][4]:
                p = run.pyframes[p][3]
            paths[i] = (paths[p] + "/" if p >= 0 else "") + name[len("nn.Module: "):]
    out = {}
    for tk in run.tasks:
        t = tk["launch"].start
        if tk["launch"].tid != run.main_tid:
            continue
        for i, path in paths.items():
            if run.pyframes[i][1] <= t <= run.pyframes[i][2]:
                out[path] = out.get(path, 0) + tk["dur"] // 1000
    return dict(sorted(out.items()))


# ----------------------------------------------------------------------------------------------------------------
# memory timeline (shared by both formats)

def memory_timeline(run):
    """Events sorted by time: (ts, +/-bytes, rec); fills run.memfig and run.memevents."""
    evs = []
    for r in run.mem:
        if r["ts"] is not None:
            evs.append((r["ts"], 1, r))
        if r["free"] is not None:
            evs.append((r["free"][0], -1, r))
    evs.sort(key=lambda e: (e[0], -e[1]))
    allocated = PARAM_STATE + sum(r["size"] for r in run.mem if r["ts"] is None)
    peak, out = allocated, []
    for ts, sign, r in evs:
        allocated += sign * r["size"]
        peak = max(peak, allocated)
        out.append((ts, sign, r, allocated))
    reserved = (peak + 2 * MIB - 1) // (2 * MIB) * (2 * MIB) + 96 * MIB
    run.memevents, run.reserved = out, reserved
    run.memfig = {"peak_allocated_bytes": peak, "peak_reserved_bytes": reserved,
                  "peak_allocated_mb": peak / MIB, "peak_reserved_mb": reserved / MIB,
                  "peak_reserved_gb": reserved / (1 << 30)}
