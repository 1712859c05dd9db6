"""Graph-mode host overhead (PyTorch on Ascend, TorchAir / ``torch.compile`` with the NPU backend):
per graph execution, per step and per side, the host time spent before each graph runs, in the
three parts Ascend's TorchAir guide tells apart (docs/host_overhead.md):

* framework: from entering the compiled module (Dynamo's ``eval_frame.py ... _fn`` frame or a
  ``Torch-Compiled Region`` event; else the outermost host event around the graph run) to the start
  of ``npu_fx_compiler inference`` (Dynamo cache lookup and guard checks, any serving framework);
* TorchAir: from the start of ``npu_fx_compiler inference`` to the start of ``ExecuteGraph``, split at
  the start of ``TorchNpuGraphBase::Run`` into the Python part (input conversion) and the C++ part;
* GE: from the start of ``ExecuteGraph`` to the end of ``npu_fx_compiler inference``.

Pure: reads the model's ops/pyfuncs/steps tables (names, nesting, times), never files or format ids.
A side without any ``npu_fx_compiler inference`` event has no graph-mode host overhead (None).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

GRAPH_EVENT = ("npu_fx_compiler inference", "npu_fx_compiler_inference")
RUN_EVENT = "TorchNpuGraphBase::Run"
EXEC_EVENT = "ExecuteGraph"
PARTS = ("framework", "torchair_python", "torchair_cpp", "ge")       # the leaves, in time order
LABELS = {"framework": "Framework (Dynamo guards, front end)", "torchair": "TorchAir",
          "torchair_python": "TorchAir Python (input handling)", "torchair_cpp": "TorchAir C++",
          "ge": "GE (ExecuteGraph to graph end)"}


def _is_entry(name: str) -> bool:
    """Does this host event mark entering a compiled module?"""
    return name.startswith("Torch-Compiled Region") or ("_dynamo/eval_frame.py" in name and name.endswith(": _fn"))


@dataclass
class GraphRunParts:
    step: int                           # -1: outside every step
    start_ns: int                       # entry into the compiled module
    parts_ns: dict                      # PARTS -> ns

    def to_dict(self) -> dict:
        d = {"step": self.step, "start_ns": self.start_ns}
        d.update({f"{k}_ms": v / 1e6 for k, v in self.parts_ns.items()})
        d["torchair_ms"] = (self.parts_ns["torchair_python"] + self.parts_ns["torchair_cpp"]) / 1e6
        d["total_ms"] = sum(self.parts_ns.values()) / 1e6
        return d


@dataclass
class HostOverheadSide:
    runs: list                          # GraphRunParts, in time order (the chosen step's, or all)
    step: int | None                    # the chosen step, None = the whole capture
    step_time_ns: int                   # wall time of the steps covered (0: no step markers)
    warnings: list = field(default_factory=list)

    def total_ns(self, part: str) -> int:
        if part == "torchair":
            return self.total_ns("torchair_python") + self.total_ns("torchair_cpp")
        if part == "total":
            return sum(self.total_ns(p) for p in PARTS)
        return sum(r.parts_ns[part] for r in self.runs)

    def per_step(self) -> list:
        out: dict = {}
        for r in self.runs:
            s = out.setdefault(r.step, {"step": r.step, "graph_runs": 0, **{p: 0 for p in PARTS}})
            s["graph_runs"] += 1
            for p in PARTS:
                s[p] += r.parts_ns[p]
        rows = []
        for s in sorted(out.values(), key=lambda x: x["step"]):
            row = {"step": s["step"], "graph_runs": s["graph_runs"]}
            row.update({f"{p}_ms": s[p] / 1e6 for p in PARTS})
            row["torchair_ms"] = (s["torchair_python"] + s["torchair_cpp"]) / 1e6
            rows.append(row)
        return rows

    def to_dict(self) -> dict:
        d = {"graph_runs": len(self.runs)}
        for p in ("framework", "torchair", "torchair_python", "torchair_cpp", "ge", "total"):
            d[f"{p}_ms"] = self.total_ns(p) / 1e6
        d["step"] = self.step
        d["step_time_ms"] = self.step_time_ns / 1e6 if self.step_time_ns else None
        d["share_of_step"] = (self.total_ns("total") / self.step_time_ns) if self.step_time_ns else None
        n = len(self.runs)
        d["per_graph_run_ms"] = {p: (self.total_ns(p) / n / 1e6 if n else None)
                                 for p in ("framework", "torchair_python", "torchair_cpp", "ge", "total")}
        d["per_step"] = self.per_step()
        d["graph_run_list"] = [r.to_dict() for r in self.runs]
        d["warnings"] = list(self.warnings)
        return d


def _name_ids(sym, names) -> set:
    out = set()
    for n in names:
        i = sym.lookup(n)
        if i:
            out.add(int(i))
    return out


def side_host_overhead(profile, step: int | None = None) -> HostOverheadSide | None:
    """The graph runs of one side (of step ``step``, else all) split into their host parts; None
    when the side has no graph-mode events."""
    sym = profile.symbols
    ops = profile.tables["ops"]
    graph_ids = _name_ids(sym, GRAPH_EVENT)
    if not graph_ids or not len(ops):
        return None
    names = ops["name"].to_numpy()
    graphs = np.flatnonzero(np.isin(names, list(graph_ids)))
    if not len(graphs):
        return None
    run_id, exec_id = sym.lookup(RUN_EVENT), sym.lookup(EXEC_EVENT)
    start = ops["start_ns"].to_numpy()
    end = start + ops["dur_ns"].to_numpy()
    tid = ops["tid"].to_numpy()
    pid = ops["pid"].to_numpy()
    parent = ops["parent"].to_numpy()
    steps = profile.tables["steps"]
    st_ids, st_s, st_e = (steps["step"].to_numpy(), steps["start_ns"].to_numpy(), steps["end_ns"].to_numpy())

    def step_of(t: int) -> int:
        hit = np.flatnonzero((st_s <= t) & (t < st_e))
        return int(st_ids[hit[0]]) if len(hit) else -1

    # python frames per thread, for the compiled-module entry
    py = profile.tables["pyfuncs"]
    py_s, py_e, py_t, py_n = (py["start_ns"].to_numpy(), (py["start_ns"] + py["dur_ns"]).to_numpy(),
                              py["tid"].to_numpy(), py["name"].to_numpy())
    entry_py = np.zeros(len(py), dtype=bool)
    if len(py):
        uniq = np.unique(py_n)
        marks = [u for u, s in zip(uniq.tolist(), sym.strings(uniq)) if _is_entry(s)]
        entry_py = np.isin(py_n, marks)
    step_name_ids = set(int(i) for i in sym.ids_matching(lambda s: s.startswith("ProfilerStep#")))

    runs, warns = [], []
    no_run = no_exec = no_entry = 0
    kids_of: dict = {}
    # children lists only for the graph events' subtrees: walk parents of ops inside graph windows
    for g in graphs.tolist():
        inside = np.flatnonzero((tid == tid[g]) & (pid == pid[g]) & (start >= start[g]) & (end <= end[g]))
        kids_of[g] = inside[inside != g]
    for g in graphs.tolist():
        gs, ge_ = int(start[g]), int(end[g])
        inside = kids_of[g]
        run = inside[names[inside] == run_id] if run_id else inside[:0]
        exe = inside[names[inside] == exec_id] if exec_id else inside[:0]
        if len(exe):
            ex_s = int(start[exe].min())
        else:
            no_exec += 1
            ex_s = ge_                  # no GE call seen: all of it counted as TorchAir
        run_s = int(start[run].min()) if len(run) else ex_s
        if not len(run):
            no_run += 1
        # the compiled-module entry: a marked frame/op around the graph event, else the outermost
        # host event around it that is not the step marker
        entry = None
        if len(py):
            cand = np.flatnonzero(entry_py & (py_t == tid[g]) & (py_s <= gs) & (py_e >= ge_))
            if len(cand):
                entry = int(py_s[cand].max())               # the innermost marked frame
        p, outer = int(parent[g]), None
        while p >= 0:
            if int(names[p]) not in step_name_ids:
                if entry is None and _is_entry(sym.string(int(names[p]))):
                    entry = int(start[p])
                outer = int(start[p])
            p = int(parent[p])
        if entry is None:
            entry = outer
        if entry is None:
            no_entry += 1
            entry = gs
        parts = {"framework": gs - entry, "torchair_python": run_s - gs, "torchair_cpp": ex_s - run_s,
                 "ge": ge_ - ex_s}
        runs.append(GraphRunParts(step_of(entry), entry, parts))
    runs.sort(key=lambda r: r.start_ns)
    if step is not None:
        runs = [r for r in runs if r.step == step]
    if no_exec:
        warns.append(f"{no_exec} graph run(s) without an {EXEC_EVENT} event: GE part 0, TorchAir up to the "
                     "end of npu_fx_compiler inference")
    if no_run:
        warns.append(f"{no_run} graph run(s) without a {RUN_EVENT} event: TorchAir C++ part 0")
    if no_entry:
        warns.append(f"{no_entry} graph run(s) with no host event around npu_fx_compiler inference: framework part 0")
    if step is not None:
        sel = st_ids == step
    else:
        sel = np.ones(len(st_ids), dtype=bool)
    step_time = int((st_e[sel] - st_s[sel]).sum()) if len(st_ids) else 0
    return HostOverheadSide(runs, step, step_time, warns)


@dataclass
class HostOverheadComparison:
    baseline: HostOverheadSide | None
    target: HostOverheadSide | None

    def differences(self) -> list:
        """The leaf parts by |target - baseline| (ms), largest first; empty unless both sides have them."""
        if self.baseline is None or self.target is None:
            return []
        rows = []
        for p in PARTS:
            b, t = self.baseline.total_ns(p) / 1e6, self.target.total_ns(p) / 1e6
            rows.append({"part": f"{p}_ms", "label": LABELS[p], "baseline_ms": b, "target_ms": t,
                         "diff_ms": t - b, "ratio": (t / b) if b else None})
        rows.sort(key=lambda r: -abs(r["diff_ms"]))
        return rows

    def dominant(self, share: float = 0.5) -> list:
        """(side, share of the step) for each side whose host overhead is at least ``share`` of its step time."""
        out = []
        for who, s in (("baseline", self.baseline), ("target", self.target)):
            if s is not None and s.step_time_ns and s.total_ns("total") >= share * s.step_time_ns:
                out.append((who, s.total_ns("total") / s.step_time_ns))
        return out

    def to_dict(self) -> dict:
        return {"baseline": None if self.baseline is None else self.baseline.to_dict(),
                "target": None if self.target is None else self.target.to_dict(),
                "differences": self.differences()}


def compare_host_overhead(base, target, base_step: int | None = None,
                          target_step: int | None = None) -> HostOverheadComparison:
    return HostOverheadComparison(side_host_overhead(base, base_step), side_host_overhead(target, target_step))
