"""Candidates for pairing an operator the matching left alone: for a baseline name, the target
names whose calls are all or partly unmatched (target only), ranked by name similarity (difflib
ratio on normalised names: no namespace, no ``npu_`` / underscores, lower case), the same input
shapes and a similar device time.  Also the matching's totals (matched / baseline-only /
target-only top-level operators and their device time), which the overview's hints show.  Pure
functions of an operator result's aligned pairs (``OperatorResult.pairs``)."""
from __future__ import annotations

import difflib
import re

import pandas as pd

from .sidebyside import BASE_ONLY, BOTH, TARGET_ONLY

W_NAME, W_SHAPE, W_TIME = 0.6, 0.25, 0.15
IDENTICAL = ("the same name on both sides: a name map applies to both sides alike, so it cannot "
             "split this pair")
_PREFIX = re.compile(r"^(?:autograd::engine::evaluate_function:\s*|[a-z0-9_]+::)+", re.I)


def normalise(name: str) -> str:
    """``npu::npu_fusion_attention`` -> ``fusionattention``; ``aten::_fused_adamw_`` -> ``fusedadamw``."""
    n = _PREFIX.sub("", str(name)).lower()
    n = re.sub(r"^(?:npu_|_npu_)", "", n)
    return re.sub(r"[^a-z0-9]+", "", n)


def name_score(a: str, b: str) -> float:
    na, nb = normalise(a), normalise(b)
    if not na or not nb:
        return 0.0
    return difflib.SequenceMatcher(None, na, nb, autojunk=False).ratio()


def _side_summary(pairs: pd.DataFrame, p: str, rows) -> pd.DataFrame:
    d = pairs.loc[rows, [f"{p}_name", f"{p}_input_shape", f"{p}_device_us"]]
    d.columns = ["name", "shape", "dev"]
    d["shape"] = d["shape"].fillna("")
    g = d.groupby("name", sort=False).agg(count=("dev", "size"), device_ms=("dev", "sum"),
                                          shape=("shape", lambda s: s.mode().iat[0] if len(s) else ""))
    g["device_ms"] = g["device_ms"] / 1000.0
    return g


def candidates(pairs: pd.DataFrame, b_name: str, q: str | None = None, limit: int = 50) -> dict:
    """Ranked target-only names for ``b_name``: {"name", "status", "baseline": {count, device_ms,
    shape}, "candidates": [{name, score, name_score, shape_score, time_score, count, device_ms,
    shape}], "total"}.  ``q``: only candidates whose name contains it (case-insensitive)."""
    st = pairs["status"]
    mine = pairs["b_name"] == b_name
    status = (BOTH if (mine & (st == BOTH)).any() and not (mine & (st == BASE_ONLY)).any()
              else BASE_ONLY if (mine & (st == BASE_ONLY)).all() and mine.any()
              else "mixed" if mine.any() else "absent")
    own_rows = mine & (st == BASE_ONLY) if (mine & (st == BASE_ONLY)).any() else mine
    base = _side_summary(pairs, "b", own_rows)
    b = base.iloc[0] if len(base) else None
    tgt = _side_summary(pairs, "t", st == TARGET_ONLY)
    out = []
    for name, r in tgt.iterrows():
        if q and q.lower() not in str(name).lower():
            continue
        ns = name_score(b_name, name)
        ss = (1.0 if b is not None and b["shape"] and b["shape"] == r["shape"]
              else 0.0 if b is None or not b["shape"] or not r["shape"]
              else 0.5 * difflib.SequenceMatcher(None, b["shape"], r["shape"], autojunk=False).ratio())
        bt, tt = (float(b["device_ms"]) if b is not None else 0.0), float(r["device_ms"])
        ts = min(bt, tt) / max(bt, tt) if max(bt, tt) > 0 else 1.0
        out.append({"name": name, "score": round(W_NAME * ns + W_SHAPE * ss + W_TIME * ts, 4),
                    "name_score": round(ns, 4), "shape_score": round(ss, 4), "time_score": round(ts, 4),
                    "count": int(r["count"]), "device_ms": tt, "shape": r["shape"] or None})
    out.sort(key=lambda c: (-c["score"], c["name"]))
    partners = [n for n in dict.fromkeys(pairs.loc[mine & (st == BOTH), "t_name"].tolist())]
    split = [{"target": n, "splittable": n != b_name,
              "reason": None if n != b_name else IDENTICAL} for n in partners]
    return {"name": b_name, "status": status, "paired_with": split,
            "baseline": (None if b is None else {"count": int(b["count"]), "device_ms": float(b["device_ms"]),
                                                 "shape": b["shape"] or None}),
            "candidates": out[:limit], "total": len(out)}


def matching_summary(pairs: pd.DataFrame) -> dict:
    """Top-level operators matched and left alone, and their device time (ms) per side."""
    st = pairs["status"]
    out = {}
    for key, rows in (("matched", st == BOTH), ("baseline_only", st == BASE_ONLY), ("target_only", st == TARGET_ONLY)):
        out[key] = {"count": int(rows.sum()),
                    "baseline_ms": float(pairs.loc[rows, "b_device_us"].fillna(0).sum()) / 1000.0,
                    "target_ms": float(pairs.loc[rows, "t_device_us"].fillna(0).sum()) / 1000.0,
                    "names": int(pairs.loc[rows, "b_name" if key == "baseline_only" else "t_name"
                                           if key == "target_only" else "name"].nunique())}
    return out
