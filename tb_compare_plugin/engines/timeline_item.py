"""One timeline item: its row (by id: ``k<row>`` kernel, ``o<row>`` host op, ``c<row>`` collective,
``t<row>`` communication task), its details for the click panel, and its matched counterpart on the
other side from the operator matching (``operator.match_ops``).

The counterpart of a host op is the op the matching paired with it; an op the matching did not
pair itself (it matches top-layer ops) takes its nearest matched ancestor's partner and, inside
that partner's subtree, the op of the same name at the same ordinal (else the partner itself,
``exact`` False).  A kernel's counterpart is found through the op that launched it: inside the
two matched subtrees, the kernel of the same class at the same ordinal in time order.  Pure.
"""
from __future__ import annotations

import numpy as np

from .kernel import listed_names, row_keys
from .timeline_lanes import CLASSES

_TABLE = {"k": "kernels", "o": "ops", "c": "comm_ops", "t": "comm_tasks"}


class UnknownItem(ValueError):
    """An id that names no row of its table."""


def item_row(profile, ident: str) -> dict:
    """{"table", "row", "start_ns", "dur_ns", "name"} of the item ``ident`` (UnknownItem when it names no row)."""
    kind, row = ident[0], int(ident[1:])
    table = _TABLE[kind]
    df = profile.tables[table]
    if not 0 <= row < len(df):
        raise UnknownItem(f"{ident} names no row ({table} holds {len(df)} rows)")
    return {"table": table, "row": row, "start_ns": int(df["start_ns"].iat[row]), "dur_ns": int(df["dur_ns"].iat[row]),
            "name": profile.symbols.string(int(df["name"].iat[row]))}


def _step_of(profile, t_ns: int):
    st = profile.steps
    if not len(st):
        return None
    hit = (st["start_ns"].to_numpy() <= t_ns) & (st["end_ns"].to_numpy() >= t_ns)
    return int(st["step"].to_numpy()[hit][0]) if hit.any() else None


def item_details(profile, lanes, ident: str) -> dict:
    """What the click panel shows of ``ident``: name, times, shapes, stream, step, class, launching op,
    and ``links`` (the table view and row key to open)."""
    info = item_row(profile, ident)
    table, row = info["table"], info["row"]
    sym = profile.symbols
    df = profile.tables[table]
    get = lambda c: df[c].iat[row]  # noqa: E731
    out = {"name": info["name"], "start_ns": info["start_ns"], "dur_ms": round(info["dur_ns"] / 1e6, 6)}
    if table == "kernels":
        step = int(get("step"))
        launch = int(get("launch_op"))
        out.update(kind="kernel", cls=CLASSES[int(lanes.kernel_class[row])], stream=int(get("stream")),
                   shapes=sym.string(int(get("input_shapes"))), task_type=sym.string(int(get("task_type"))),
                   step=step if step >= 0 else _step_of(profile, info["start_ns"]),
                   launch_op=({"id": f"o{launch}", "name": sym.string(int(profile.ops["name"].iat[launch]))}
                              if 0 <= launch < len(profile.ops) else None))
        out["links"] = kernel_link(profile, row)
    elif table == "ops":
        out.update(kind="op", cls="host", shapes=sym.string(int(get("input_shapes"))), pid=int(get("pid")),
                   tid=int(get("tid")), depth=int(get("depth")), step=_step_of(profile, info["start_ns"]))
        out["links"] = {"view": "operator", "key": info["name"]}
    elif table == "comm_ops":
        out.update(kind="collective", cls="communication", group=sym.string(int(get("group"))),
                   bytes=int(get("bytes")), step=_step_of(profile, info["start_ns"]))
        out["links"] = {"view": "communication", "key": info["name"]}
    else:
        from .timeline_lanes import WAIT
        waits = lanes.task_class
        out.update(kind="task", cls=CLASSES[int(waits[row])] if row < len(waits) else "transmit",
                   group=sym.string(int(get("group"))), plane=int(get("plane")), bytes=int(get("bytes")),
                   step=_step_of(profile, info["start_ns"]))
        out["wait"] = out["cls"] == CLASSES[WAIT]
        out["links"] = {"view": "communication", "key": sym.string(int(get("group")))}
    return out


def kernel_link(profile, row: int) -> dict | None:
    """Where the Kernel view lists kernel ``row``: ``{"view": "kernel", "key": the row's name (kernel
    and input shapes, what the view's search finds it by), "kernel", "shapes"}``; an NPU row names
    the kernel's Type (``MatMulV2`` for ``aclnnAddmm_MatMulCommon_MatMulV2``).  None when the view
    does not list it (an untyped NPU task, a GPU memcpy)."""
    name, shape = row_keys(profile, [row])
    if name[0] <= 0:
        return None
    kernel = profile.symbols.string(int(name[0]))
    shapes = profile.symbols.string(int(shape[0])) if shape[0] else "N/A"
    return {"view": "kernel", "key": kernel if shapes == "N/A" else f"{kernel} {shapes}", "kernel": kernel,
            "shapes": shapes}


# ------------------------------------------------------------------------------------ counterparts

def _partners(matched):
    """(base node -> target node, target node -> base node) arrays of the matched pairs."""
    b, t = np.asarray(matched.b_nodes), np.asarray(matched.t_nodes)
    both = (b >= 0) & (t >= 0)
    pb = np.full(matched.base.n, -1, np.int64)
    pt = np.full(matched.target.n, -1, np.int64)
    pb[b[both]] = t[both]
    pt[t[both]] = b[both]
    return pb, pt


def _matched_ancestor(tree, partner, node: int):
    cur = node
    while cur >= 0:
        if partner[cur] >= 0:
            return cur, int(partner[cur])
        cur = int(tree.parent[cur])
    return None


def _same_name_ordinal(tree, anc: int, node: int, other, oanc: int, name_of) -> int | None:
    """The node of ``other``'s subtree at ``oanc`` with ``node``'s name at its ordinal in ``anc``'s subtree."""
    sub = np.arange(anc, anc + tree.size[anc])
    same = sub[tree.name[sub] == tree.name[node]]
    j = int(np.searchsorted(same, node))
    osub = np.arange(oanc, oanc + other.size[oanc])
    want = name_of(tree, node)
    onames = np.array([name_of(other, int(x)) == want for x in osub]) if len(osub) <= 5000 else None
    if onames is None:
        return None
    ohits = osub[onames]
    return int(ohits[j]) if j < len(ohits) else None


def _name(tree, node: int) -> str:
    return tree.profile.symbols.string(int(tree.name[node]))


def _subtree_kernels(tree, node: int, cls: np.ndarray):
    """(kernel rows, their classes) of ``node``'s subtree in time order (kernels table rows only)."""
    dev = tree.dev
    lo, hi = int(tree.dev_lo[node]), int(tree.dev_hi[node])
    src = dev["source"].to_numpy()[lo:hi]
    rows = dev["row"].to_numpy()[lo:hi][src == 0]
    start = dev["start_ns"].to_numpy()[lo:hi][src == 0]
    rows = rows[np.argsort(start, kind="stable")]
    return rows, cls[rows]


def counterpart(matched, side: str, ident: str, base, target) -> dict | None:
    """``{"side", "id", "exact"}`` of the item's match on the other side, or None (also when the
    matching ran on a side's scope view rather than its host ops: its rows are not the timeline's)."""
    from .timeline_lanes import side_lanes
    kind, row = ident[0], int(ident[1:])
    if kind not in "ko":
        return None
    tree, other = (matched.base, matched.target) if side == "baseline" else (matched.target, matched.base)
    pb, pt = _partners(matched)
    partner = pb if side == "baseline" else pt
    prof, oprof = tree.profile, other.profile
    want = (base, target) if side == "baseline" else (target, base)
    if prof is not want[0] or oprof is not want[1]:
        return None
    oside = "target" if side == "baseline" else "baseline"
    if kind == "o":
        if not 0 <= row < len(tree.node_of_op):
            return None
        node = int(tree.node_of_op[row])
    else:
        if not 0 <= row < len(prof.kernels):
            return None
        launch = int(prof.kernels["launch_op"].iat[row])
        node = int(tree.node_of_op[launch]) if 0 <= launch < len(tree.node_of_op) else -1
    if node < 0:
        return None
    hit = _matched_ancestor(tree, partner, node)
    if hit is None:
        return None
    anc, oanc = hit
    if kind == "o":
        if anc == node:
            return {"side": oside, "id": f"o{int(other.op_rows[oanc])}", "exact": True}
        onode = _same_name_ordinal(tree, anc, node, other, oanc, _name)
        if onode is not None:
            return {"side": oside, "id": f"o{int(other.op_rows[onode])}", "exact": True}
        return {"side": oside, "id": f"o{int(other.op_rows[oanc])}", "exact": False}
    cls = side_lanes(prof).kernel_class
    ocls = side_lanes(oprof).kernel_class
    rows, rc = _subtree_kernels(tree, anc, cls)
    orows, orc = _subtree_kernels(other, oanc, ocls)
    pos = np.flatnonzero(rows == row)
    if not len(pos):
        return None
    mine = rc[pos[0]]
    j = int((rc[:pos[0]] == mine).sum())
    same = orows[orc == mine]
    if j < len(same):
        return {"side": oside, "id": f"k{int(same[j])}", "exact": True}
    return {"side": oside, "id": f"o{int(other.op_rows[oanc])}", "exact": False}


def _same_shapes(a: str, b: str) -> bool:
    norm = lambda x: "".join(ch for ch in x if ch not in '" \t\r\n')  # noqa: E731
    return norm(a) == norm(b)


def operator_link(matched, side: str, ident: str, base, target) -> dict | None:
    """The Operator view's row of a host op or kernel: ``{"view": "operator", "key": name}`` of the
    op itself or, when the matching did not list it (it lists top-layer ops), of its nearest
    ancestor it lists (a kernel: through its launching op).  None when no listed op encloses it
    (or the matching ran on a side's scope view)."""
    kind, row = ident[0], int(ident[1:])
    if kind not in "ko":
        return None
    tree = matched.base if side == "baseline" else matched.target
    if tree.profile is not (base if side == "baseline" else target):
        return None
    prof = tree.profile
    if kind == "k":
        if not 0 <= row < len(prof.kernels):
            return None
        row = int(prof.kernels["launch_op"].iat[row])
    if not 0 <= row < len(tree.node_of_op):
        return None
    node = int(tree.node_of_op[row])
    nodes = np.asarray(matched.b_nodes if side == "baseline" else matched.t_nodes)
    listed = np.zeros(tree.n, bool)
    listed[nodes[nodes >= 0]] = True
    while node >= 0 and not listed[node]:
        node = int(tree.parent[node])
    return {"view": "operator", "key": _name(tree, node)} if node >= 0 else None


def find_item(profile, kind: str, name: str, lo: int, hi: int, nth: int = 0, shapes: str | None = None) -> str | None:
    """The id of the ``nth`` (0 = first) ``kind`` ("kernel" | "op") named ``name`` that starts in
    [lo, hi), in time order, else of the first one anywhere; None when there is none.

    ``name`` is what the table row shows: an op's name; a kernel's Kernel view row name (``row_keys``:
    on an NPU the kernel's Type, e.g. ``MatMulV2`` for ``aclnnAddmm_MatMulCommon_MatMulV2``), else the
    kernel's own full name.  ``shapes`` (the row's input shapes, "N/A" none) keeps the items of that
    row only, when given."""
    table, prefix = ("kernels", "k") if kind == "kernel" else ("ops", "o")
    df = profile.tables[table]
    sid = profile.symbols.lookup(name)
    if sid <= 0 or not len(df):
        return None
    if kind == "kernel":
        rows = np.flatnonzero(listed_names(profile) == sid)
        if not len(rows):                       # a kernel's own name (also one the view does not list)
            rows = np.flatnonzero(df["name"].to_numpy() == sid)
    else:
        rows = np.flatnonzero(df["name"].to_numpy() == sid)
    if len(rows) and shapes is not None:
        if kind == "kernel":
            sh = row_keys(profile, rows)[1]
        else:
            sh = df["input_shapes"].to_numpy()[rows]
        want = shapes.strip() or "N/A"
        ok = [u for u in np.unique(sh).tolist()
              if _same_shapes(profile.symbols.string(int(u)) if u else "N/A", want)]
        rows = rows[np.isin(sh, ok)]
    if not len(rows):
        return None
    start = df["start_ns"].to_numpy()[rows]
    rows = rows[np.argsort(start, kind="stable")]
    start = np.sort(start)
    inside = rows[(start >= lo) & (start < hi)]
    pick = inside if len(inside) else rows
    return f"{prefix}{int(pick[min(max(nth, 0), len(pick) - 1)])}"
