"""Parallel-strategy hints, following MindSpore Insight's cluster tuning method: after slow ranks
and slow links, look at how the parallel split spends the step.

* data parallel: the step's tail is the gradient all-reduce; when communication not overlapped
  by computation is a large share of the step and most of the communication is all-reduce, the
  all-reduce is not hidden behind the backward pass (bucket sizes, overlap, fewer/larger
  buckets, gradient accumulation);
* model (tensor) parallel: the pure (not overlapped) communication share of the step, from the
  all-gather / reduce-scatter / all-to-all collectives of the layers;
* pipeline parallel: time in Receive (p2p receive / batchSendRecv), the imbalance of the stages
  (computing of the slowest rank against the fastest) and the bubble.
Each hint is one plain sentence with its figures; thresholds are constants below.
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np
import pandas as pd

EXPOSED_SHARE = 0.20       # communication not overlapped / step time worth a hint
DOMINANT = 0.50            # share of communication time that makes a collective kind dominant
IMBALANCE = 0.10           # stage imbalance (max/min computing - 1) worth a hint
BUBBLE_SHARE = 0.05

_ALLREDUCE = re.compile(r"all_?reduce", re.I)
_MODEL = re.compile(r"all_?gather|reduce_?scatter|all_?to_?all|alltoallv?", re.I)
_RECV = re.compile(r"recv|receive|batchsendrecv|send", re.I)


def _kind(name: str, op_type: str) -> str:
    text = f"{name} {op_type}"
    if _ALLREDUCE.search(text):
        return "allreduce"
    if op_type == "p2p" or _RECV.search(text):
        return "p2p"
    if _MODEL.search(text):
        return "model"
    return "other"


def hints(table: pd.DataFrame, coll: pd.DataFrame, slow_ranks: list, slow_links: list) -> list:
    out: list = []
    if table.empty:
        return out
    per = table.groupby("rank")[["step_time", "computing", "communication_not_overlapped",
                                 "communication", "bubble"]].mean()
    step = float(np.nanmedian(per["step_time"])) if per["step_time"].notna().any() else np.nan
    exposed = float(np.nanmedian(per["communication_not_overlapped"]))
    share = exposed / step if step and step == step else np.nan
    kinds = {}
    if len(coll) and coll["elapse"].notna().any():
        k = coll.assign(kind=[_kind(n, t) for n, t in zip(coll["name"], coll["op_type"])])
        kinds = (k.groupby("kind")["elapse"].sum() / k["elapse"].sum()).to_dict()
    if slow_ranks:
        s = slow_ranks[0]
        out.append(f"Slow rank first: rank {s['rank']} ({s['metric']}, loses in {s['phase']}) "
                   "holds the collectives of the others; fix it before tuning the split.")
    if slow_links:
        s = slow_links[0]
        out.append(f"Slow link: {s['src_rank']}->{s['dst_rank']} ({s['transport']}) runs at "
                   f"{s['ratio']:.0%} of its peers' bandwidth; check that connection.")
    if share == share and share >= EXPOSED_SHARE:
        if kinds.get("allreduce", 0) >= DOMINANT:
            out.append(f"Data parallel: communication not overlapped is {share:.0%} of the step "
                       f"and {kinds['allreduce']:.0%} of the communication is all-reduce: the "
                       "gradient all-reduce is the step's tail. Overlap it with the backward pass "
                       "(gradient buckets), use fewer larger buckets, or accumulate gradients.")
        elif kinds.get("model", 0) >= DOMINANT:
            out.append(f"Model parallel: pure communication (not overlapped) is {share:.0%} of "
                       f"the step, {kinds['model']:.0%} of it all-gather / reduce-scatter / "
                       "all-to-all: the tensor-parallel split is too fine for the links; "
                       "reduce the model-parallel degree or overlap its communication.")
        else:
            out.append(f"Communication not overlapped by computation is {share:.0%} of the step.")
    if kinds.get("p2p", 0) > 0:
        p2p = coll[[_kind(n, t) == "p2p" for n, t in zip(coll["name"], coll["op_type"])]]
        p2p_ms = float(p2p.groupby(["rank", "step"])["elapse"].sum()
                       .groupby(level="rank").mean().median()) / 1e6
        comp = per["computing"].dropna()
        imb = float(comp.max() / comp.min() - 1) if len(comp) > 1 and comp.min() > 0 else 0.0
        text = (f"Pipeline parallel: the ranks spend a median {p2p_ms:.3f} ms in send/receive "
                f"per step")
        if imb >= IMBALANCE:
            text += (f"; stage computing is unbalanced (rank {int(comp.idxmax())} computes "
                     f"{imb:.0%} more than rank {int(comp.idxmin())}): move layers off the "
                     "heaviest stage")
        out.append(text + ".")
    bubble = float(np.nanmedian(per["bubble"])) if per["bubble"].notna().any() else 0.0
    if step == step and step and bubble / step >= BUBBLE_SHARE:
        out.append(f"Pipeline bubble: {bubble / 1e6:.3f} ms per step ({bubble / step:.0%}); more "
                   "micro-batches or an interleaved schedule shrink it.")
    return out
