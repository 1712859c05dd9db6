"""Readers of the Ascend text export's communication summaries: ``communication.json`` (per step,
per collective: Communication Time Info and Communication Bandwidth Info per transport) and
``communication_matrix.json`` (per step, per collective, per ``src-dst`` link: Transport Type,
Transit Size(MB), Transit Time(ms), Bandwidth(GB/s), Op Name).

Both files look like ``{"step50": {"collective": {"NAME@GROUP": {...}}, "p2p": {...}}}`` (the
step key is ``"step"`` alone when the run was not split into steps: step -1).  The readers
return plain columns (ns, bytes; MB = 10**6 bytes as the profiler counts them) and warnings
naming the file for every value dropped or left empty.  ``Total Op Info`` (the profiler's own
sum of a step's operations) is skipped: the analyses sum themselves.
"""
from __future__ import annotations

import json
import math
import re

from .regular import open_regular

MAX_BYTES = 512 << 20
TOTAL = "Total Op Info"
# transports whose bytes count once; SDMA is the copy engine behind HCCS/PCIe on a node and
# repeats their bytes, LOCAL is a rank's copy to itself
NETWORK_TRANSPORTS = ("HCCS", "PCIE", "RDMA", "SIO")
_STEP = re.compile(r"^step(\d*)$", re.I)


def _load(path: str) -> tuple:
    with open_regular(path, "rb") as f:
        raw = f.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise ValueError(f"{path}: larger than {MAX_BYTES >> 20} MB; not read")
    data = json.loads(raw.decode("utf-8", errors="replace") or "{}")
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a JSON object")
    return data


def _steps(path: str, data: dict, warnings: list):
    """(step id, kind, name, group, record) for every operation of every step."""
    for key, kinds in data.items():
        m = _STEP.match(str(key))
        if not m or not isinstance(kinds, dict):
            warnings.append(f"{path}: entry {key!r} is not a step; skipped")
            continue
        step = int(m.group(1)) if m.group(1) else -1
        for kind, ops in kinds.items():
            if not isinstance(ops, dict):
                continue
            for op_key, rec in ops.items():
                name, _, group = str(op_key).partition("@")
                if name == TOTAL:
                    continue
                if not isinstance(rec, dict):
                    warnings.append(f"{path}: {key}/{op_key} is not an object; skipped")
                    continue
                yield step, kind, name, group, rec


def scaled_amount(v, scale: float, bad: dict, key: str) -> float:
    """``v`` (a time or a size) times ``scale``; NaN, counted under ``key`` in ``bad``, when it is
    missing, not a number, infinite or negative (:func:`report_bad` turns the counts into warnings).
    Shared with the database export's reader (:mod:`.ascend_cluster_db`)."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        bad[key] = bad.get(key, 0) + 1
        return math.nan
    if math.isnan(x) or math.isinf(x) or x < 0:
        bad[key] = bad.get(key, 0) + 1
        return math.nan
    return x * scale


def report_bad(where: str, bad: dict, warnings: list) -> None:
    """One warning per key counted by :func:`scaled_amount`; ``where`` names the file (and table)."""
    for key, n in sorted(bad.items()):
        warnings.append(f"{where}: {n} {key} value(s) missing, negative or not a number (left empty)")


def _num(rec: dict, key: str, bad: dict, scale: float = 1.0) -> float:
    return scaled_amount(rec.get(key), scale, bad, key)


COLLECTIVE_COLUMNS = ("step", "name", "op_type", "group", "start_ns", "elapse", "transmit", "wait",
                      "synchronization", "idle", "bytes")


def read_communication(path: str) -> tuple[dict, list]:
    """``communication.json`` -> (columns of the RankSummary ``collectives`` table, warnings).
    ``op_type`` is the file's kind (collective / p2p); ``bytes`` sums the network transports."""
    warnings: list = []
    data = _load(path)
    out = {c: [] for c in COLLECTIVE_COLUMNS}
    bad: dict = {}
    for step, kind, name, group, rec in _steps(path, data, warnings):
        t = rec.get("Communication Time Info")
        if not isinstance(t, dict):
            warnings.append(f"{path}: step{step}/{name} has no Communication Time Info; skipped")
            continue
        bw = rec.get("Communication Bandwidth Info") or {}
        size = math.nan
        if isinstance(bw, dict):
            sizes = [_num(bw[tr], "Transit Size(MB)", bad, 1e6) for tr in NETWORK_TRANSPORTS
                     if isinstance(bw.get(tr), dict)]
            sizes = [s for s in sizes if not math.isnan(s)]
            size = sum(sizes) if sizes else math.nan
        out["step"].append(step)
        out["name"].append(name)
        out["op_type"].append(kind)
        out["group"].append(group)
        out["start_ns"].append(_num(t, "Start Timestamp(us)", bad, 1e3))
        out["elapse"].append(_num(t, "Elapse Time(ms)", bad, 1e6))
        out["transmit"].append(_num(t, "Transit Time(ms)", bad, 1e6))
        out["wait"].append(_num(t, "Wait Time(ms)", bad, 1e6))
        out["synchronization"].append(_num(t, "Synchronization Time(ms)", bad, 1e6))
        out["idle"].append(_num(t, "Idle Time(ms)", bad, 1e6))
        out["bytes"].append(size)
    report_bad(path, bad, warnings)
    return out, warnings


LINK_COLUMNS = ("step", "collective", "group", "src_rank", "dst_rank", "transport", "bytes", "time",
                "op_name")


def read_matrix(path: str) -> tuple[dict, list]:
    """``communication_matrix.json`` -> (columns of the RankSummary ``links`` table plus group and
    op_name, warnings).  A link key that is not ``SRC-DST`` integers is dropped (counted)."""
    warnings: list = []
    data = _load(path)
    out = {c: [] for c in LINK_COLUMNS}
    bad: dict = {}
    bad_keys = 0
    for step, _kind, name, group, rec in _steps(path, data, warnings):
        for link, v in rec.items():
            src, _, dst = str(link).partition("-")
            if not (src.strip().isdigit() and dst.strip().isdigit()) or not isinstance(v, dict):
                bad_keys += 1
                continue
            out["step"].append(step)
            out["collective"].append(name)
            out["group"].append(group)
            out["src_rank"].append(int(src))
            out["dst_rank"].append(int(dst))
            out["transport"].append(str(v.get("Transport Type") or ""))
            out["bytes"].append(_num(v, "Transit Size(MB)", bad, 1e6))
            out["time"].append(_num(v, "Transit Time(ms)", bad, 1e6))
            out["op_name"].append(str(v.get("Op Name") or ""))
    if bad_keys:
        warnings.append(f"{path}: {bad_keys} link(s) not keyed SRC-DST; dropped")
    report_bad(path, bad, warnings)
    return out, warnings
