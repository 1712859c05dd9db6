"""Links: per (step, collective, src rank, dst rank) the transport, bytes, time and bandwidth each
rank reports (communication_matrix.json / CommAnalyzerMatrix on NPU, NCCL kernel arguments on
GPU), and the slow ones.

A link is slow when its bandwidth is below ``ratio`` (default 0.5) times the median bandwidth of
the links of the same transport carrying the same collective in the same step, among at least
three such links (fewer cannot say which side is abnormal).  Like with like: bandwidth depends
on the message size and on the transport, so a link is compared only with its peers.  LOCAL
(a rank's copy to itself) is listed, never flagged: it is no link.  Links naming a rank outside
the run (a profiler that numbers devices of the whole node) are dropped with a warning.
Bandwidth = size / time, GB/s = MB/ms as the profiler counts them (10**9 bytes per second).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ...model.rank_summary import records, stack

RATIO = 0.5
MIN_PEERS = 3
NOT_A_LINK = {"LOCAL"}


def link_table(summaries: Sequence, warnings: list) -> pd.DataFrame:
    df = stack(summaries, "links", reporter="rank")
    if df.empty:
        return df.assign(bandwidth=np.zeros(0))
    ranks = {s.rank for s in summaries}
    df = _ring_peers(df, warnings)
    outside = ~(df["src_rank"].isin(ranks) & df["dst_rank"].isin(ranks))
    if outside.any():
        names = sorted((set(df.loc[outside, "src_rank"]) | set(df.loc[outside, "dst_rank"])) - ranks)
        shown = ", ".join(str(r) for r in names[:8]) + (" ..." if len(names) > 8 else "")
        warnings.append(f"{int(outside.sum())} link(s) name ranks outside the run ({shown}); "
                        "dropped (the profiler numbers the devices of the whole node)")
        df = df[~outside]
    # a link reported twice (by its source and its destination): keep the source's report
    df = df.assign(own=(df["reporter"] == df["src_rank"]).astype(int))
    df = df.sort_values("own", ascending=False, kind="stable").drop_duplicates(
        ["step", "collective", "group", "src_rank", "dst_rank"]).drop(columns="own")
    with np.errstate(divide="ignore", invalid="ignore"):
        df = df.assign(bandwidth=np.where(df["time"] > 0, df["bytes"] / df["time"], np.nan))
    return df.sort_values(["step", "collective", "src_rank", "dst_rank"], kind="stable")


def _ring_peers(df: pd.DataFrame, warnings: list) -> pd.DataFrame:
    """Links whose peer the source does not name (``dst_rank`` -1: NCCL kernels name their group,
    not their peer): the peer is taken as the next rank of the group's ring (the group's ranks
    = the ranks that report it, in rank order), and the time as the collective's shortest elapse
    among those ranks (its transmit time: the rest is waiting for the last rank)."""
    unknown = df["dst_rank"] < 0
    if not unknown.any():
        return df
    df = df.copy()
    sub = df[unknown]
    members = sub.groupby("group")["src_rank"].agg(lambda x: sorted(set(int(v) for v in x)))
    nxt = {}
    for group, ranks in members.items():
        for i, r in enumerate(ranks):
            nxt[(group, r)] = ranks[(i + 1) % len(ranks)] if len(ranks) > 1 else -1
    df.loc[unknown, "dst_rank"] = [nxt.get((g, int(r)), -1) for g, r in zip(sub["group"], sub["src_rank"])]
    df.loc[unknown, "time"] = sub.groupby(["step", "collective", "group"])["time"].transform("min")
    single = int((df.loc[unknown, "dst_rank"] < 0).sum())
    warnings.append(f"{int(unknown.sum())} collective link(s) without a named peer (NCCL): peer "
                    "taken as the next rank of the group's ring, time as the collective's shortest "
                    "elapse among its ranks" + (f"; {single} in a group of one rank dropped"
                                                if single else ""))
    return df[df["dst_rank"] >= 0] if single else df


def flag(df: pd.DataFrame, ratio: float = RATIO) -> pd.DataFrame:
    """``df`` with ``median_bw`` (of the link's peers) and ``slow``."""
    df = df.copy()
    df["median_bw"] = np.nan
    df["peers"] = 0
    real = ~df["transport"].isin(NOT_A_LINK) & df["bandwidth"].notna()
    if real.any():
        g = df[real].groupby(["step", "collective", "transport"])["bandwidth"]
        df.loc[real, "median_bw"] = g.transform("median")
        df.loc[real, "peers"] = g.transform("count")
    df["slow"] = real & (df["peers"] >= MIN_PEERS) & (df["bandwidth"] < ratio * df["median_bw"])
    return df


def rows(df: pd.DataFrame) -> list:
    """The links in the JSON's units (MB, ms, GB/s)."""
    return records({"step": df["step"].to_numpy(), "collective": df["collective"].to_numpy(),
                    "group": df["group"].to_numpy(), "src_rank": df["src_rank"].to_numpy(),
                    "dst_rank": df["dst_rank"].to_numpy(), "transport": df["transport"].to_numpy(),
                    "size_mb": df["bytes"].to_numpy(float) * 1e-6,
                    "time_ms": df["time"].to_numpy(float) * 1e-6,
                    "bandwidth_gbps": df["bandwidth"].to_numpy(float),
                    "slow": df["slow"].to_numpy(bool), "op_name": df["op_name"].to_numpy()})


def slow_pairs(df: pd.DataFrame) -> list:
    """The slow links by (src, dst, transport): how many of their collectives were slow, their
    median bandwidth against their peers' median, and a reason."""
    slow = df[df["slow"]]
    out = []
    for (src, dst, tr), g in slow.groupby(["src_rank", "dst_rank", "transport"]):
        bw, med = float(g["bandwidth"].median()), float(g["median_bw"].median())
        total = int(((df["src_rank"] == src) & (df["dst_rank"] == dst)
                     & (df["transport"] == tr)).sum())
        out.append({"src_rank": int(src), "dst_rank": int(dst), "transport": tr,
                    "bandwidth_gbps": bw, "median_gbps": med, "ratio": bw / med if med else None,
                    "slow_collectives": len(g), "collectives": total,
                    "reason": f"link {src}->{dst} ({tr}): {bw:.2f} GB/s, {bw / med:.0%} of the "
                              f"median {med:.2f} GB/s of its peers, slow in {len(g)} of "
                              f"{total} collectives"})
    out.sort(key=lambda d: (d["ratio"] if d["ratio"] is not None else 1, d["src_rank"]))
    return out


def pairs(df: pd.DataFrame, slow: list) -> list:
    """One row per (src, dst, transport) over all steps and collectives: what a src x dst heatmap
    shows.  Size and time are sums over the link's ``*-total`` rows where the profiler wrote
    them (Ascend's matrix also lists top/middle/bottom operations, which would count bytes twice),
    else over all its rows; bandwidth = size / time.  ``slow``: the pair is in ``slow``."""
    if df.empty:
        return []
    total = df["collective"].str.endswith("-total")
    has_total = total.groupby([df["src_rank"], df["dst_rank"], df["transport"]]).transform("any")
    use = df[total | ~has_total]
    g = use.groupby(["src_rank", "dst_rank", "transport"], sort=True).agg(
        bytes=("bytes", "sum"), time=("time", "sum"), n=("bytes", "size")).reset_index()
    with np.errstate(divide="ignore", invalid="ignore"):
        bw = np.where(g["time"] > 0, g["bytes"] / g["time"], np.nan)
    bad = {(d["src_rank"], d["dst_rank"], d["transport"]) for d in slow}
    return records({"src_rank": g["src_rank"].to_numpy(), "dst_rank": g["dst_rank"].to_numpy(),
                    "transport": g["transport"].to_numpy(),
                    "size_mb": g["bytes"].to_numpy(float) * 1e-6,
                    "time_ms": g["time"].to_numpy(float) * 1e-6, "bandwidth_gbps": bw,
                    "rows": g["n"].to_numpy(),
                    "slow": np.array([(int(a), int(b), t) in bad for a, b, t in
                                      zip(g["src_rank"], g["dst_rank"], g["transport"])], bool)})
