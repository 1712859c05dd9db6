"""Placement of the program on a run's host and device timelines: host times, launches, the
device schedule, communication and memory records, for every step.

Jitter: host times carry sub-µs jitter keyed by (step, node path); kernel durations and the device gaps
in front of tasks carry whole-µs jitter keyed by (step, kernel path), which names a kernel the same way
on every side, so shared kernels stay equal step by step; the DataLoader and the lead of each step's
device work come from per-step draws shared by every side.  Only the planted differences and the
labels HtoD copy (planted #10, noise only: ``MEMCPY_US`` per run) differ between runs."""
from __future__ import annotations

from .common import (CALL_IMPL, DATALOADER, DATALOADER_FRAMES, DATALOADER_US, GAP, LEAD, MEMCPY_SLOT, MEMCPY_US,
                     NPU_ONLY, NSTEPS, PREV_GRADS, SRC, TRAIN, jit, kernel_jitter, spread, us)
from .program import Node, Program
from .figures import walk


def step_dataloader_us(step: int) -> int:
    """The DataLoader ``__next__`` of a step before any stall (µs), the same on every side."""
    return spread(f"dataloader{step}", *DATALOADER_US)


class Run:
    """Everything generated for one run (both steps)."""

    def __init__(self, name, var, host0, dev_frac):
        self.name, self.var, self.dev = name, var, var["dev"]
        self.host0, self.dev_frac = host0, dev_frac
        self.main_tid, self.bwd_tid, self.deq_tid = (2413, 2571, 2519) if self.dev == "GPU" else (31847, 31903, 31866)
        self.steps = []            # per step: dict(step, node=ProfilerStep, bwd=[evaluate_function nodes], grads)
        self.tasks = []            # device tasks, program order
        self.mem = []              # allocation records: dict(ts, size, addr, tid, op, mode, tag, free=(ts, node))
        self.pyframes = []         # (name, start, end, parent_index, module(cls, idx) or None)
        self.fwdbwd = []           # (fwd node, bwd node)
        self.enqs = []             # NPU api nodes in enqueue order
        self.cann = []             # NPU CANN events
        self.deqs = []             # NPU dequeue (start, dur, corr, api_name)
        self.corr = 0
        self.addr = 0x7F3A_2000_0000
        self.sync = []

    # -- host placement
    def place(self, node, t, tid, frames, path, ctx):
        node.start, node.tid = t, tid
        node.stack = list(reversed(frames))
        t += us(node.pre) + jit(f"{ctx['step']}/" + path + "#pre", 400)
        if node.mod:
            fi = len(self.pyframes)
            self.pyframes.append([node.name, node.start, 0, ctx["pyparent"], node.mod])
            ci = len(self.pyframes)
            self.pyframes.append([CALL_IMPL, node.start + 900, 0, fi, None])
            src = SRC[node.mod[0]]
            si = len(self.pyframes)
            self.pyframes.append([src, node.start + 1800, 0, ci, None])
            node.frames = [fi, ci, si]
            frames = frames + [CALL_IMPL, src]
            ctx = dict(ctx, pyparent=si)
        if node.allocs:
            for i, a in enumerate(node.allocs):
                self.alloc(node.start + us(node.pre) // 2 + i * 300, a, node, ctx)
        if node.kern:
            t = self.place_launch(node, t, path, ctx)
        names = {}
        for kid in node.kids:
            names[kid.name] = names.get(kid.name, 0) + 1
            kpath = f"{path}/{kid.name}#{names[kid.name]}"
            t = self.place(kid, t, tid, frames, kpath, ctx) + us(1.1) + jit(f"{ctx['step']}/" + kpath + "#gap", 300)
        t += us(node.post) + jit(f"{ctx['step']}/" + path + "#post", 400)
        node.end = t
        if node.mod:
            fi, ci, si = node.frames
            self.pyframes[fi][2] = node.end
            self.pyframes[ci][2] = node.end - 500
            self.pyframes[si][2] = node.end - 1100
        return t

    def task(self, kind, dur, path, i, launch, node, ctx, ready):
        """One device task: its jittered duration and the jittered gap in front of it (shared keys)."""
        step = ctx["step"]
        key = "allreduce" if kind == "nccl" else f"{path}#k{i}"
        if kind == "memcpy":
            d = us(MEMCPY_US[self.name][step - 1])
        else:
            d = us(dur + kernel_jitter(step, kind, key))
        return dict(kind=kind, dur=d, launch=launch, op=node, ready=ready, step=step, phase=ctx["phase"],
                    gap=us(spread(f"gap{step}|{key}", *GAP)), corr=launch.corr if ready is not None else None)

    def place_launch(self, node, t, path, ctx):
        slot = us(11)
        nk = len(node.kern)
        if self.dev == "GPU":
            for i, (kind, dur) in enumerate(node.kern):
                rname = node.launch or "cudaLaunchKernel"
                r = Node(rname, "cuda_runtime")
                r.start = t + i * slot + us(1.5) + jit(f"{ctx['step']}/" + path + f"#r{i}", 300)
                r.end = r.start + us(5.5 if rname == "cudaLaunchKernel" else 9.0) + jit(f"{ctx['step']}/" + path + f"#rd{i}", 700)
                r.tid = node.tid
                self.corr += 1
                r.corr = self.corr
                node.launches.append(r)
                self.tasks.append(self.task(kind, dur, path, i, r, node, ctx, r.end + us(2)))
        else:
            a = Node(node.api, "cpu_op")
            a.start = t + jit(f"{ctx['step']}/" + path + "#api", 300)
            a.end = t + nk * slot - us(1.0)
            a.tid = node.tid
            self.corr += 1
            a.enq = (a.start + us(2.5), us(2.1) + jit(f"{ctx['step']}/" + path + "#enq", 500), self.corr)
            node.launches.append(a)
            self.enqs.append(a)
            a.tasks = []
            for i, (kind, dur) in enumerate(node.kern):
                task = self.task(kind, dur, path, i, a, node, ctx, None)
                task["corr"] = a.enq[2]
                a.tasks.append(task)
                self.tasks.append(task)
        return t + nk * slot

    # -- memory
    def alloc(self, ts, spec, node, ctx):
        size, mode = spec[0], spec[1]
        tag = spec[2] if len(spec) > 2 else node.key
        self.addr += ((size + 511) // 512) * 512 + 0x200000
        rec = dict(ts=ts, size=size, addr=self.addr, tid=node.tid, op=node, mode=mode, tag=tag, free=None,
                   step=ctx["step"])
        self.mem.append(rec)
        if mode == "tmp":
            ctx["tmp"].append(rec)
        elif mode == "grad":
            ctx["grads"].append(rec)
        else:
            ctx["saved"].setdefault(tag, []).append(rec)

    def release(self, ev, ctx):
        inner = ev.kids[0] if ev.kids else None
        t = (inner.end if inner is not None else ev.start) + us(0.8)
        recs = ctx["tmp"][:]
        ctx["tmp"].clear()
        if inner is not None and inner.key:
            recs += ctx["saved"].pop(inner.key, [])
        for i, r in enumerate(recs):
            r["free"] = (t + i * 200, ev.kids[0] if ev.kids else ev)

    # -- one step
    def dataloader(self, step, t0):
        """The step's ``enumerate(DataLoader)#...__next__`` (planted #8: longer by ``stall`` in the NPU runs)
        under its Python frames, at the start of ProfilerStep#N as in real captures."""
        dl = Node(DATALOADER, "user_annotation" if self.dev == "GPU" else "cpu_op")
        dl.tid = self.main_tid
        dl.stack = [DATALOADER_FRAMES[0], TRAIN[0]]
        dl.start = t0 + us(4.1) + jit(f"{step}/dl", 400)
        dl.end = dl.start + us(step_dataloader_us(step) + self.var.get("stall", 0)) + jit(f"{step}/dl#d", 900)
        f0 = len(self.pyframes)
        self.pyframes.append([DATALOADER_FRAMES[0], dl.start - us(1.3), dl.end + us(0.9), 0, None])
        self.pyframes.append([DATALOADER_FRAMES[1], dl.start + us(2.4), dl.end - us(1.7), f0, None])
        return dl

    def run_step(self, step, t0, prev_grads):
        prog = Program(self.var, step)
        ps = Node(f"ProfilerStep#{step}", "user_annotation" if self.dev == "GPU" else "cpu_op")
        dl = self.dataloader(step, t0)
        self.pyframes.append([TRAIN[1], dl.end + us(2.0), 0, 0, None])
        ctx = dict(step=step, pyparent=len(self.pyframes) - 1, tmp=[], grads=[], saved={}, phase="fwd")
        zero = Node("Optimizer.zero_grad#AdamW.zero_grad", pre=6.0, post=30.0)
        fwd = prog.forward()
        ones = Node("aten::ones_like", kids=[Node("aten::empty_like", dims=[[], [], [], [], [], []],
                                                  types=["float"] + [""] * 5),
                                             prog.leaf("aten::fill_", [("fill", 4)], [[], []],
                                                       types=["float", "Scalar"])],
                    dims=[[], [], [], [], [], []], types=["float"] + [""] * 5)
        ps.kids = [dl, zero, fwd, ones]
        frames = list(TRAIN)
        ps.start = t0
        ps.tid = self.main_tid
        t = dl.end + us(4.6) + jit(f"{step}/zero", 500)
        zero.start, zero.tid, zero.stack = t, self.main_tid, list(reversed(frames))
        for i, r in enumerate(prev_grads):  # zero_grad(set_to_none=True) frees last step's grads
            r["free"] = (t + us(3) + i * 250, zero)
        zero.end = t + us(zero.pre + zero.post) + len(prev_grads) * 250
        t = zero.end + us(1.4)
        t = self.place(fwd, t, self.main_tid, frames, f"s/{fwd.name}", ctx) + us(2.2)
        t = self.place(ones, t, self.main_tid, frames, "s/ones", ctx) + us(6.0)
        bwd = prog.backward()
        tb = t
        ctx["phase"] = "bwd"
        for i, ev in enumerate(bwd):
            tb = self.place(ev, tb, self.bwd_tid, [], f"b/{ev.kids[0].name}#{i}", ctx) + us(2.4)
            self.release(ev, ctx)
        t = tb + us(14.0) + jit(f"{step}/opt#lead", 700)
        opt = prog.optimizer()
        ctx["phase"] = "opt"
        t = self.place(opt, t, self.main_tid, frames, "s/opt", ctx) + us(3.1)
        ps.kids.append(opt)
        self.steps.append(dict(step=step, node=ps, bwd=bwd, grads=ctx["grads"]))
        for rec in ctx["saved"].values():
            raise AssertionError(f"{self.name}: saved tensors never freed: {rec}")
        return t

    def schedule(self, step, dev_start):
        """Device start times: every task starts its jittered gap after the previous one ends.  An NPU-only task
        takes the gap of the shared task after it, which then follows with no gap; the HtoD copy ends
        MEMCPY_SLOT µs after its gap whatever it lasts, so neither moves any shared task."""
        tasks = [tk for tk in self.tasks if tk["step"] == step]
        t = dev_start
        prev_only = False
        for i, tk in enumerate(tasks):
            if i and not prev_only:
                nxt = next(x for x in tasks[i:] if x["kind"] not in NPU_ONLY)
                t += nxt["gap"]
            if tk["kind"] == "memcpy":
                t += us(MEMCPY_SLOT) - tk["dur"]
            tk["start"] = t
            if tk["ready"] is not None and tk["start"] < tk["ready"]:
                raise AssertionError(f"{self.name} step {step}: task {i} {tk['kind']} starts before its launch")
            t += tk["dur"]
            tk["end"] = t
            prev_only = tk["kind"] in NPU_ONLY
        return t

    def dequeue(self, apis):
        """NPU task queue: Dequeue@<api> on the dequeue thread, CANN launch events, launch-ready times."""
        last = self.deq_last
        for a in apis:
            enq_t, enq_d, corr = a.enq
            nk = len(a.tasks)
            start = max(enq_t + us(3.1), last + us(0.9)) + jit(a.name + str(corr), 300)
            dur = us(5 + 8 * nk) + jit(str(corr) + "d", 600)
            self.deqs.append((start, dur, corr, a.name))
            last = start + dur
            acl0 = start + us(1.2)
            kind0 = a.tasks[0]["kind"]
            if kind0 == "memcpy":
                ev = ("AscendCL@aclrtMemcpyAsync", acl0, dur - us(2.0), "acl", "aclrtMemcpyAsync", "ACL_RTS")
                self.cann.append(ev + (self.conn(a.tasks[0]),))
                a.tasks[0]["ready"] = acl0 + dur - us(2.0) + us(1)
                continue
            if kind0 == "nccl":
                ev = ("Hccl@Launch_Ffts", acl0, dur - us(2.0), "hccl", "Launch_Ffts", "master")
                self.cann.append(ev + (self.conn(a.tasks[0]),))
                a.tasks[0]["ready"] = acl0 + dur - us(2.0) + us(1)
                continue
            if kind0 == "transdata":
                self.cann.append(("AscendCL@aclopCompileAndExecute", acl0, dur - us(2.0), "acl",
                                  "aclopCompileAndExecute", "ACL_OP", None))
            else:
                self.cann.append((f"AscendCL@{a.name}", acl0, dur - us(2.0), "acl", a.name, "ACL_NN", None))
            for i, tk in enumerate(a.tasks):
                n0 = acl0 + us(1.0) + i * us(8)
                self.cann.append(("Node@launch", n0, us(5.3), "node", "launch", "launch", self.conn(tk)))
                tk["ready"] = n0 + us(5.3) + us(1)
        self.deq_last = last

    def next_conn(self):
        self.conn_id += 1
        return self.conn_id

    def conn(self, task):
        task["conn"] = self.next_conn()
        return task["conn"]

    def generate(self):
        t = self.host0
        dev_start = None
        prev_grads = [dict(ts=None, size=s, addr=0x7F39_0000_0000 + i * 0x4000_0000, tid=self.main_tid, op=None,
                           mode="grad", tag=None, free=None, step=0) for i, s in enumerate(PREV_GRADS)]
        self.mem.extend(prev_grads)
        self.deq_last, self.conn_id = 0, 4000
        self.pyframes.append([TRAIN[0], self.host0 - us(120.5), 0, -1, None])
        dev_end = None
        for step in range(1, NSTEPS + 1):
            first_enq = len(self.enqs)
            t_end = self.run_step(step, t, prev_grads)
            if self.dev == "NPU":
                self.dequeue(self.enqs[first_enq:])
            ps = self.steps[-1]["node"]
            # the device idles from the step's start until the host has fetched the batch and launched the
            # forward: a whole number of µs after the previous step's last task (so device times keep their
            # fraction), the same on every side but for the stall
            lead = 10 + step_dataloader_us(step) + self.var.get("stall", 0) + spread(f"lead{step}", *LEAD)
            if dev_end is None:
                dev_start = ps.start - ps.start % 1000 + self.dev_frac + us(lead)
            else:
                dev_start = dev_end + us(-(-(ps.start - dev_end) // 1000) + lead)
            dev_end = self.schedule(step, dev_start)
            sync_end = max(t_end + us(3), dev_end + us(6.2))   # the host waits for the device
            assert sync_end == dev_end + us(6.2), f"{self.name} step {step}: the host ends after the device"
            self.sync.append((t_end, sync_end))
            ps.end = sync_end + us(4.4)
            prev_grads = self.steps[-1]["grads"]
            t = ps.end + us(8.0) + jit(f"{step}/next", 900)
            self.pyframes[self.step_frame(step)][2] = ps.end + us(2.2)
        self.end = t
        self.pyframes[0][2] = t + us(55.0)
        self.pair_fwdbwd()

    def step_frame(self, step):
        return [i for i, f in enumerate(self.pyframes) if f[0] == TRAIN[1]][step - 1]

    def pair_fwdbwd(self):
        """fwd op (node with key) -> backward node (XBackward0) of the same step; assigns sequence numbers."""
        seq = 1200
        for st in self.steps:
            fwd = {}
            for n in walk(st["node"]):
                if n.key and not n.bwd:
                    fwd[n.key] = n
            for ev in st["bwd"]:
                inner = ev.kids[0]
                if inner.bwd and inner.key in fwd:
                    f = fwd[inner.key]
                    f.seq = inner.seq = seq
                    seq += 1
                    self.fwdbwd.append((f, inner))
