"""Generate an N-rank Ascend cluster (PyTorch text export) from the corpus's real 2-rank run.

    python -m bench.gen_cluster --ranks 1024 [--out DIR] [--name NAME] [--steps S] [--seed 0]
        [--slow-rank K --slow-rank-extra-ms X] [--slow-link SRC-DST --bandwidth-cut F] [--force]

Source: ``npu/alexnet_ddp_2rank_level1`` of the corpus (``--source`` for another 2-rank text run),
read at generation time; nothing of it is committed.  Output: ``<out>/<name>/rank{k}_ascend_pt/``
for k in 0..N-1 (default ``<out>`` is ``$TB_COMPARE_BENCH_DIR`` or ``/tmp/tb_compare_bench``,
default ``<name>`` is ``cluster_<N>[_slow...]``), and a ``manifest.json`` (written last) naming
what was planted.  The whole run is built in a temporary folder and renamed into place, so an
interrupted generation leaves nothing that looks finished; a run whose manifest matches is kept.

What each rank holds (rank ``k`` copies source rank ``k % 2``):

* per rank, jittered (every figure times 1 + u, u uniform in ±``--jitter``, default 1 %; the
  reference's identities are kept: Stage = Computing + Communication(Not Overlapped) + Free,
  Communication = Not Overlapped + Overlapped, Elapse = Transit + Wait + Idle, the ratios):
  ``step_trace_time.csv`` (``--steps`` rows, steps 50, 51, ...), ``communication.json`` (per
  step, per collective: time and per-transport bandwidth info), ``communication_matrix.json``
  (per step, per collective, per ``src-dst`` link), ``profiler_info_{k}.json`` (``rank_id`` = k),
  and a small ``trace_view.json``: the source's metadata events, one ``ProfilerStep#N`` per step
  (its window = the source's, plus this rank's change of Stage + Preparing, so a slow rank's steps
  are longer) and the collectives' device events (durations = this rank's Elapse Time); steps
  follow one another (the longest window plus 1 ms apart), communication.json's Start
  Timestamps moved with them;
* shared by every rank (hard links to one copy per source rank in ``<run>/.templates``, which
  discovery skips): ``kernel_details.csv`` and ``profiler_metadata.json``, not jittered.
  With the trace they make discovery classify the folder as ``ascend-text`` and a full parse work.

Topology (links rewritten for N ranks): servers of 8 ranks (``--node-size``); rank k = server
k // 8, local index k % 8.  Inside a server the source's HCCS full mesh (each source link
``s-d`` becomes ``k-(server*8 + (d - s + local) mod 8)``, self = LOCAL; links to ranks past N are
dropped); between servers a ring over RDMA: each rank sends to the same local index of the next
server, 1/8 of the collective's median HCCS link size at ~12 GB/s (jittered).  Collective keys
get a fresh group hash (from the seed and N).

Planting:

* ``--slow-rank K --slow-rank-extra-ms X``: rank K computes X ms more per step (Computing and
  Stage + X); every other rank waits for it in the step's first collective (its Wait,
  Synchronization and Elapse + X; Communication(Not Overlapped), Communication and Stage + X).
  Rank K's own wait stays as it was: it is the one that waits least.
* ``--slow-link SRC-DST --bandwidth-cut F``: the link SRC->DST (it must exist in the topology)
  keeps (1 - F) of its bandwidth in every collective and step: its Transit Time / (1 - F),
  Bandwidth x (1 - F) in rank SRC's matrix, and the transport's time and bandwidth in rank
  SRC's communication.json grow accordingly.

Deterministic: rank k's numbers come from ``numpy.random.default_rng([seed, k])``, so the same
arguments give the same bytes whatever the order ranks are written in.  Fast: 1,024 ranks take a
few seconds (small files; the kernel table linked, not copied).
"""
from __future__ import annotations

import argparse
import copy
import csv
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

GEN_VERSION = 2
ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("TB_COMPARE_SHARED", ROOT.parent / "shared"))
DEFAULT_SOURCE = SHARED / "corpus" / "npu" / "alexnet_ddp_2rank_level1"
OUT_DIR = "ASCEND_PROFILER_OUTPUT"
RDMA_GBPS = 12.0
STEP_COLUMNS = ["Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free",
                "Stage", "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing"]
SHARED_FILES = ("kernel_details.csv",)


def default_out() -> Path:
    return Path(os.environ.get("TB_COMPARE_BENCH_DIR", "/tmp/tb_compare_bench"))


@dataclass(frozen=True)
class Plan:
    ranks: int
    steps: int = 1
    seed: int = 0
    jitter: float = 0.01
    node_size: int = 8
    slow_rank: int | None = None
    slow_rank_extra_ms: float = 0.0
    slow_link: tuple | None = None          # (src, dst)
    bandwidth_cut: float = 0.0
    source: str = str(DEFAULT_SOURCE)

    def default_name(self) -> str:
        name = f"cluster_{self.ranks}"
        if self.slow_rank is not None:
            name += f"_slowrank{self.slow_rank}"
        if self.slow_link is not None:
            name += f"_slowlink{self.slow_link[0]}-{self.slow_link[1]}"
        return name

    def group_hash(self) -> str:
        h = hashlib.sha256(f"tb-compare cluster {self.seed} {self.ranks}".encode()).hexdigest()
        return str(int(h[:16], 16))


# ------------------------------------------------------------------------------------------ source

class SourceRank:
    """One real rank of the source run: its light files as Python objects, ready to jitter."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        out = folder / OUT_DIR
        with open(out / "step_trace_time.csv", newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        if not rows:
            raise ValueError(f"{out / 'step_trace_time.csv'}: no step row")
        self.step = {k: float(v) for k, v in rows[0].items() if k != "Step"}
        self.step_id = int(rows[0]["Step"])
        self.comm = json.loads((out / "communication.json").read_text(encoding="utf-8"))
        self.matrix = json.loads((out / "communication_matrix.json").read_text(encoding="utf-8"))
        infos = sorted(folder.glob("profiler_info*.json"))
        if not infos:
            raise ValueError(f"{folder}: no profiler_info*.json")
        self.info = json.loads(infos[0].read_text(encoding="utf-8"))
        self.rank = int(self.info.get("rank_id", 0))
        # the step's collectives (one step in the source) and which one synchronises first
        self.comm_step = next(iter(self.comm.values()))
        self.matrix_step = next(iter(self.matrix.values()))
        ops = [(v["Communication Time Info"].get("Start Timestamp(us)", 0.0), k)
               for k, v in self.comm_step.get("collective", {}).items() if k != "Total Op Info"]
        self.first_op = min(ops)[1] if ops else None

        # the trace events each generated rank gets its own copy of: the metadata (process and
        # thread names), the ProfilerStep window and the collectives' device-side events
        events = json.loads((out / "trace_view.json").read_text(encoding="utf-8"))
        self.meta_events = [e for e in events if e.get("ph") == "M"]
        steps = [e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")]
        if not steps:
            raise ValueError(f"{out / 'trace_view.json'}: no ProfilerStep event")
        self.step_event = {k: v for k, v in steps[0].items() if k != "args"}
        self.step_event["args"] = {k: v for k, v in steps[0].get("args", {}).items() if k != "Call stack"}
        self.comm_events = [e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("hcom_")]
        self.window_us = float(self.step_event["dur"])

    def write_shared(self, dest: Path) -> None:
        """The files every generated copy of this rank links to (kernels, metadata)."""
        dest.mkdir(parents=True, exist_ok=True)
        out = self.folder / OUT_DIR
        shutil.copyfile(out / "kernel_details.csv", dest / "kernel_details.csv")
        meta = self.folder / "profiler_metadata.json"
        if meta.exists():
            shutil.copyfile(meta, dest / "profiler_metadata.json")


def _ns(ts) -> int:
    """A trace ``ts`` (µs, string "W.FFF" or number) as integer ns."""
    whole, _, frac = str(ts).partition(".")
    return int(whole) * 1000 + int((frac + "000")[:3])


def _ts(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


# ------------------------------------------------------------------------------------------ topology

def links_of(plan: Plan, k: int, src_rank: int, template_links: dict) -> list:
    """(template link key or None, dst, transport) of rank ``k``'s links for one collective."""
    node, local = divmod(k, plan.node_size)
    node_len = min(plan.node_size, plan.ranks - node * plan.node_size)
    out = []
    for key, v in template_links.items():
        s, _, d = key.partition("-")
        try:
            d = int(d)
        except ValueError:
            continue
        loc = (d - src_rank + local) % plan.node_size
        if loc < node_len:
            out.append((key, node * plan.node_size + loc, v.get("Transport Type", "HCCS")))
    nodes = -(-plan.ranks // plan.node_size)
    if nodes > 1:
        nxt = ((node + 1) % nodes) * plan.node_size + local
        if nxt >= plan.ranks:                       # a short last server: its first rank instead
            nxt = ((node + 1) % nodes) * plan.node_size
        if nxt != k:
            out.append((None, nxt, "RDMA"))
    return out


# ------------------------------------------------------------------------------------------ one rank

class RankWriter:
    def __init__(self, plan: Plan, sources: list) -> None:
        self.plan = plan
        self.sources = sources
        self.group = plan.group_hash()
        # steps start this far apart on every rank: the longest window jitter and the slow rank
        # can make, and 1 ms
        extra = plan.slow_rank_extra_ms * 1000.0 if plan.slow_rank is not None else 0.0
        self.gap_ns = int((max(s.window_us for s in sources) * (1 + 4 * plan.jitter) + extra) * 1000) + 1_000_000

    def _j(self, rng, x: float) -> float:
        return float(x) * (1.0 + rng.uniform(-self.plan.jitter, self.plan.jitter)) if x else float(x)

    def files(self, k: int) -> dict:
        """name (relative to the rank folder) -> text, for rank ``k``."""
        plan, src = self.plan, self.sources[k % len(self.sources)]
        rng = np.random.default_rng([plan.seed, k])
        slow = plan.slow_rank is not None and plan.slow_rank_extra_ms > 0
        extra_us = plan.slow_rank_extra_ms * 1000.0 if slow else 0.0
        steps, comm, matrix, trace = [], {}, {}, list(src.meta_events)
        for i in range(plan.steps):
            step_id = src.step_id + i
            row = {c: self._j(rng, src.step[c]) for c in ("Computing", "Communication(Not Overlapped)",
                                                          "Overlapped", "Free", "Preparing")}
            row["Bubble"] = src.step.get("Bubble", 0.0)
            if slow and k == plan.slow_rank:
                row["Computing"] += extra_us
            elif slow:
                row["Communication(Not Overlapped)"] += extra_us
            row["Communication"] = row["Communication(Not Overlapped)"] + row["Overlapped"]
            row["Stage"] = row["Computing"] + row["Communication(Not Overlapped)"] + row["Free"]
            row["Communication(Not Overlapped and Exclude Receive)"] = row["Communication(Not Overlapped)"]
            steps.append([step_id] + [row[c] for c in STEP_COLUMNS[1:]])
            shift_ns = i * self.gap_ns
            waits = extra_us if slow and k != plan.slow_rank else 0.0
            comm[f"step{step_id}"] = self._comm_step(rng, src, shift_ns / 1000.0, waits)
            matrix[f"step{step_id}"] = self._matrix_step(rng, src, k)
            # the ProfilerStep window grows or shrinks with the step's own figures
            grow = (row["Stage"] + row["Preparing"]) - (src.step["Stage"] + src.step.get("Preparing", 0.0))
            trace += self._trace_step(src, step_id, shift_ns, src.window_us + grow, comm[f"step{step_id}"])
        self._cut_link(k, comm, matrix)
        info = copy.deepcopy(src.info)
        info["rank_id"] = k
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(STEP_COLUMNS)
        w.writerows(steps)
        return {f"{OUT_DIR}/step_trace_time.csv": buf.getvalue(),
                f"{OUT_DIR}/trace_view.json": json.dumps(trace),
                f"{OUT_DIR}/communication.json": json.dumps(comm),
                f"{OUT_DIR}/communication_matrix.json": json.dumps(matrix),
                f"profiler_info_{k}.json": json.dumps(info, indent=4)}

    def _trace_step(self, src: SourceRank, step_id: int, shift_ns: int, window_us: float, comm: dict) -> list:
        """The step's ProfilerStep event and its collectives' events (their durations from this
        rank's communication.json), moved ``shift_ns`` later."""
        ev = dict(src.step_event, name=f"ProfilerStep#{step_id}", ts=_ts(_ns(src.step_event["ts"]) + shift_ns),
                  dur=round(window_us, 3))
        out = [ev]
        elapse = {op.split("@", 1)[0]: v["Communication Time Info"]["Elapse Time(ms)"]
                  for op, v in comm.get("collective", {}).items() if op != "Total Op Info"}
        for e in src.comm_events:
            e = dict(e, ts=_ts(_ns(e["ts"]) + shift_ns))
            if e["name"] in elapse:
                e["dur"] = elapse[e["name"]] * 1000.0
            out.append(e)
        return out

    def _key(self, op: str) -> str:
        return op if "@" not in op else op.split("@", 1)[0] + "@" + self.group

    def _comm_step(self, rng, src: SourceRank, shift_us: float, extra_wait_us: float) -> dict:
        out = {}
        for kind, ops in src.comm_step.items():
            out[kind] = {}
            total = None
            for op, info in ops.items():
                if op == "Total Op Info":
                    total = info
                    continue
                t = dict(info["Communication Time Info"])
                transit, wait = self._j(rng, t["Transit Time(ms)"]), self._j(rng, t["Wait Time(ms)"])
                sync, idle = self._j(rng, t["Synchronization Time(ms)"]), self._j(rng, t["Idle Time(ms)"])
                if op == src.first_op and extra_wait_us:
                    wait += extra_wait_us / 1000.0
                    sync += extra_wait_us / 1000.0
                t.update(_times(transit, wait, sync, idle))
                if "Start Timestamp(us)" in t:
                    t["Start Timestamp(us)"] = t["Start Timestamp(us)"] + shift_us
                bw = {tr: _bw(dict(b), self._j(rng, b.get("Transit Time(ms)", 0.0)))
                      for tr, b in info["Communication Bandwidth Info"].items()}
                out[kind][self._key(op)] = {"Communication Time Info": t, "Communication Bandwidth Info": bw}
            if total is not None:
                out[kind]["Total Op Info"] = _total(out[kind], total)
        return out

    def _matrix_step(self, rng, src: SourceRank, k: int) -> dict:
        out = {}
        for kind, ops in src.matrix_step.items():
            out[kind] = {}
            for op, links in ops.items():
                sizes = [v["Transit Size(MB)"] for v in links.values() if v.get("Transport Type") == "HCCS"]
                mine = {}
                for key, dst, transport in links_of(self.plan, k, src.rank, links):
                    if key is not None:
                        v = dict(links[key])
                        t = self._j(rng, v["Transit Time(ms)"])
                        v["Transit Time(ms)"] = t
                        v["Bandwidth(GB/s)"] = round(v["Transit Size(MB)"] / t, 4) if t else 0
                    else:
                        size = float(np.median(sizes)) / 8.0 if sizes else 0.0
                        bw = self._j(rng, RDMA_GBPS)
                        v = {"Transport Type": "RDMA", "Transit Size(MB)": size,
                             "Transit Time(ms)": size / bw if bw else 0.0, "Bandwidth(GB/s)": round(bw, 4)}
                        name = next((x.get("Op Name") for x in links.values() if x.get("Op Name")), None)
                        if name:
                            v["Op Name"] = name
                    mine[f"{k}-{dst}"] = v
                out[kind][self._key(op)] = mine
        return out

    def _cut_link(self, k: int, comm: dict, matrix: dict) -> None:
        plan = self.plan
        if plan.slow_link is None or plan.slow_link[0] != k or not plan.bandwidth_cut:
            return
        key, keep = f"{plan.slow_link[0]}-{plan.slow_link[1]}", 1.0 - plan.bandwidth_cut
        for step, kinds in matrix.items():
            for kind, ops in kinds.items():
                for op, links in ops.items():
                    v = links.get(key)
                    if v is None:
                        continue
                    added = v["Transit Time(ms)"] / keep - v["Transit Time(ms)"]
                    v["Transit Time(ms)"] += added
                    v["Bandwidth(GB/s)"] = round(v["Transit Size(MB)"] / v["Transit Time(ms)"], 4)
                    # the op this link served, in communication.json: its transport is slower too
                    name = v.get("Op Name")
                    for cop, info in comm.get(step, {}).get(kind, {}).items():
                        if name and cop.split("@", 1)[0] == name:
                            b = info["Communication Bandwidth Info"].get(v["Transport Type"])
                            if b is not None:
                                _bw(b, b.get("Transit Time(ms)", 0.0) + added)


def _times(transit: float, wait: float, sync: float, idle: float) -> dict:
    return {"Elapse Time(ms)": transit + wait + idle, "Transit Time(ms)": transit, "Wait Time(ms)": wait,
            "Synchronization Time(ms)": sync, "Idle Time(ms)": idle,
            "Wait Time Ratio": round(wait / (wait + transit), 4) if wait + transit else 0,
            "Synchronization Time Ratio": round(sync / (sync + transit), 4) if sync + transit else 0}


def _bw(b: dict, t: float) -> dict:
    """Set ``b``'s transit time to ``t`` and its bandwidth to match (in place); ``b``."""
    b["Transit Time(ms)"] = t
    size = b.get("Transit Size(MB)", 0) or 0
    b["Bandwidth(GB/s)"] = round(size / t, 4) if t and size else 0
    return b


def _total(ops: dict, template: dict) -> dict:
    t = {k: 0.0 for k in ("Transit Time(ms)", "Wait Time(ms)", "Synchronization Time(ms)", "Idle Time(ms)")}
    bw: dict = {}
    for info in ops.values():
        for k in t:
            t[k] += info["Communication Time Info"][k]
        for tr, b in info["Communication Bandwidth Info"].items():
            acc = bw.setdefault(tr, {"Transit Size(MB)": 0.0, "Transit Time(ms)": 0.0})
            acc["Transit Size(MB)"] += b.get("Transit Size(MB)", 0) or 0
            acc["Transit Time(ms)"] += b.get("Transit Time(ms)", 0) or 0
    out_bw = {}
    for tr, b in template["Communication Bandwidth Info"].items():
        acc = bw.get(tr, {"Transit Size(MB)": 0.0, "Transit Time(ms)": 0.0})
        nb = dict(b, **{"Transit Size(MB)": acc["Transit Size(MB)"]})
        out_bw[tr] = _bw(nb, acc["Transit Time(ms)"])
    times = _times(t["Transit Time(ms)"], t["Wait Time(ms)"], t["Synchronization Time(ms)"], t["Idle Time(ms)"])
    return {"Communication Time Info": times, "Communication Bandwidth Info": out_bw}


# ------------------------------------------------------------------------------------------ the run

def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def _check(plan: Plan) -> None:
    if plan.ranks < 1:
        raise ValueError("--ranks must be at least 1")
    if plan.slow_rank is not None and not 0 <= plan.slow_rank < plan.ranks:
        raise ValueError(f"--slow-rank {plan.slow_rank} is not a rank of a {plan.ranks}-rank run")
    if plan.slow_link is not None:
        s, d = plan.slow_link
        if not (0 <= s < plan.ranks and 0 <= d < plan.ranks) or s == d:
            raise ValueError(f"--slow-link {s}-{d}: both ends must be different ranks of 0..{plan.ranks - 1}")
        if d not in {dst for _, dst, _ in _link_ends(plan, s)}:
            ends = sorted(dst for _, dst, _ in _link_ends(plan, s) if dst != s)
            raise ValueError(f"--slow-link {s}-{d} is not a link of the {plan.ranks}-rank topology; "
                             f"rank {s} sends to {ends}")
        if not 0 < plan.bandwidth_cut < 1:
            raise ValueError("--bandwidth-cut must be in (0, 1): the share of bandwidth the link loses")


def _link_ends(plan: Plan, k: int) -> list:
    full = {f"0-{d}": {"Transport Type": "LOCAL" if d == 0 else "HCCS"} for d in range(plan.node_size)}
    return links_of(plan, k, 0, full)


def manifest_of(plan: Plan) -> dict:
    return {"generator": "bench.gen_cluster", "version": GEN_VERSION, "plan": asdict(plan),
            "planted": {"slow_rank": plan.slow_rank if plan.slow_rank_extra_ms > 0 else None,
                        "slow_rank_extra_ms": plan.slow_rank_extra_ms,
                        "slow_link": list(plan.slow_link) if plan.slow_link else None,
                        "bandwidth_cut": plan.bandwidth_cut}}


def generate(plan: Plan, dest: Path, force: bool = False, log=None) -> dict:
    """Build the run at ``dest`` (kept when its manifest already matches ``plan``); its manifest."""
    _check(plan)
    want = json.loads(json.dumps(manifest_of(plan)))      # as read back (tuples -> lists)
    man_path = dest / "manifest.json"
    if not force and man_path.exists():
        try:
            got = json.loads(man_path.read_text(encoding="utf-8"))
            if {k: got.get(k) for k in want} == want:
                return got
        except (OSError, ValueError):
            pass
    t0 = time.perf_counter()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        src_root = Path(plan.source)
        folders = sorted(p for p in src_root.iterdir() if p.is_dir() and p.name.endswith("_ascend_pt"))
        if not folders:
            raise FileNotFoundError(f"{src_root}: no *_ascend_pt rank folder (is ../shared/corpus there?)")
        sources = sorted((SourceRank(p) for p in folders), key=lambda s: s.rank)
        shared = []
        for s in sources:
            where = tmp / ".templates" / f"rank{s.rank}"
            s.write_shared(where)
            shared.append(where)
        writer = RankWriter(plan, sources)
        for k in range(plan.ranks):
            rank_dir = tmp / f"rank{k}_ascend_pt"
            (rank_dir / OUT_DIR).mkdir(parents=True)
            tpl = shared[k % len(shared)]
            for name in SHARED_FILES:
                _link_or_copy(tpl / name, rank_dir / OUT_DIR / name)
            if (tpl / "profiler_metadata.json").exists():
                _link_or_copy(tpl / "profiler_metadata.json", rank_dir / "profiler_metadata.json")
            for rel, text in writer.files(k).items():
                with open(rank_dir / rel, "w", encoding="utf-8") as f:
                    f.write(text)
        want["seconds"] = round(time.perf_counter() - t0, 3)
        want["created"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        (tmp / "manifest.json").write_text(json.dumps(want, indent=1), encoding="utf-8")
        if dest.exists():
            shutil.rmtree(dest)
        os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if log:
        log(f"gen_cluster: {plan.ranks} ranks -> {dest} in {want['seconds']} s")
    return want


def _link_arg(text: str) -> tuple:
    a, sep, b = text.partition("-")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected SRC-DST, got {text!r}")
    return int(a), int(b)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.gen_cluster", description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, required=True, help="number of ranks N (any N >= 1)")
    ap.add_argument("--out", type=Path, default=None, help="parent folder (default $TB_COMPARE_BENCH_DIR "
                                                           "or /tmp/tb_compare_bench)")
    ap.add_argument("--name", default=None, help="run folder name (default cluster_<N>[_slow...])")
    ap.add_argument("--steps", type=int, default=1, help="steps per rank (default 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jitter", type=float, default=0.01, help="relative jitter of every figure (default 0.01)")
    ap.add_argument("--node-size", type=int, default=8, help="ranks per server (default 8)")
    ap.add_argument("--slow-rank", type=int, default=None, metavar="K")
    ap.add_argument("--slow-rank-extra-ms", type=float, default=0.0, metavar="X",
                    help="extra compute per step on the slow rank (ms)")
    ap.add_argument("--slow-link", type=_link_arg, default=None, metavar="SRC-DST")
    ap.add_argument("--bandwidth-cut", type=float, default=0.0, metavar="F",
                    help="share of the slow link's bandwidth lost, in (0, 1) (0.8 keeps a fifth)")
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="a 2-rank Ascend text run")
    ap.add_argument("--force", action="store_true", help="regenerate even when the manifest matches")
    a = ap.parse_args(argv)
    if a.slow_rank is not None and a.slow_rank_extra_ms <= 0:
        ap.error("--slow-rank needs --slow-rank-extra-ms X > 0")
    plan = Plan(ranks=a.ranks, steps=a.steps, seed=a.seed, jitter=a.jitter, node_size=a.node_size,
                slow_rank=a.slow_rank, slow_rank_extra_ms=a.slow_rank_extra_ms, slow_link=a.slow_link,
                bandwidth_cut=a.bandwidth_cut, source=str(a.source))
    dest = (a.out or default_out()) / (a.name or plan.default_name())
    try:
        generate(plan, dest, force=a.force, log=lambda m: print(m, file=sys.stderr))
    except (ValueError, FileNotFoundError) as e:
        print(f"gen_cluster: {e}", file=sys.stderr)
        return 2
    print(dest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
