"""The scope view of a profile whose device kernels carry scope paths and which has no host ops.

MindSpore names each device task by its scope path
(``Default/network-WithLossCell/_backbone-ResNet/conv1-Conv2d/Conv2D-op1``; backward work under
``Gradients/...``) and records no timed host operators or ``nn.Module`` events.  The operator and
module comparisons read host ops and module ranges, so for such a profile this module derives, as
a pure function of the model (a fact of the data, never of the format id), a second profile:

* ``ops``: one host op per kernel, named by its op type (the kernel's ``type``, else the scope
  path's last part without ``-opN``), at the kernel's start, zero length (so ops on parallel
  streams never nest into each other), ``is_backward`` under ``Gradients/``; plus one
  ``ProfilerStep#N`` op per step of the steps table (so a step can be chosen);
* ``kernels``: the same rows, each launched by its own op (``launch_op``);
* ``pyfuncs``: the scope tree as module ranges: per depth, each run of consecutive kernels (in
  start order) under the same scope prefix is one call of that scope, spanning the run's kernel
  starts (padded by 1 ns so the run's ops lie strictly inside).  So the device time credited to a
  scope (total) is the sum of the durations of the kernels under it.

:func:`op_view` returns the profile itself whenever it has host ops or module events (every
PyTorch profile), so nothing changes for them.  The view is built once per profile
(``model.derived``).
"""
from __future__ import annotations

import re

import numpy as np

from ..model import Profile, SymbolTable, make_table
from ..model.derived import derived

SCOPE_SEP = "/"
BACKWARD_ROOT = "Gradients"
_OP_SUFFIX = re.compile(r"-op\d+.*$")


def op_type_of(leaf: str) -> str:
    """``Conv2D-op12`` -> ``Conv2D`` (MindSpore's kernel naming); other names unchanged."""
    return _OP_SUFFIX.sub("", leaf) or leaf


def has_scope_paths(profile) -> bool:
    """True when the profile has no host ops, no module events, and scope-path kernel names."""
    if not isinstance(profile, Profile):       # a stand-in (tests' stubs): read as it is
        return False
    if len(profile.ops) or profile.has()["modules"] or not len(profile.kernels):
        return False
    names = profile.symbols.as_array()[np.unique(profile.kernels["name"].to_numpy())]
    return any(SCOPE_SEP in n for n in names.tolist())


def op_view(profile):
    """The profile the operator and module comparisons read: its scope view when
    :func:`has_scope_paths`, else the profile itself."""
    if not has_scope_paths(profile):
        return profile
    return derived(profile, "scope_view", lambda: _build(profile))


def _runs(prefix: list) -> list[tuple[int, int]]:
    """(first, last) index of each run of equal, non-None values."""
    out, i, n = [], 0, len(prefix)
    while i < n:
        if prefix[i] is None:
            i += 1
            continue
        j = i
        while j + 1 < n and prefix[j + 1] == prefix[i]:
            j += 1
        out.append((i, j))
        i = j + 1
    return out


def _build(profile) -> Profile:
    k = profile.kernels
    strings = profile.symbols.as_array()
    sym = SymbolTable.from_list(profile.symbols.to_list())     # a copy: the loaded profile stays as it was
    order = np.argsort(k["start_ns"].to_numpy(), kind="stable")
    k = k.iloc[order].reset_index(drop=True)
    n = len(k)
    names = strings[k["name"].to_numpy()].tolist()
    ktypes = strings[k["type"].to_numpy()].tolist()
    parts = [nm.split(SCOPE_SEP) for nm in names]
    op_names = [t if t and t != "N/A" else op_type_of(p[-1]) for t, p in zip(ktypes, parts)]
    start = k["start_ns"].to_numpy().astype(np.int64)
    steps = profile.steps.sort_values("start_ns", kind="stable")
    ns = len(steps)
    cpu_op, ann = sym.intern("cpu_op"), sym.intern("user_annotation")
    ops = make_table(
        "ops", n + ns,
        name=np.concatenate([sym.intern_many(op_names),
                             sym.intern_many([f"ProfilerStep#{s}" for s in steps["step"].tolist()])]),
        cat=np.concatenate([np.full(n, cpu_op, np.int32), np.full(ns, ann, np.int32)]),
        start_ns=np.concatenate([start, steps["start_ns"].to_numpy()]),
        dur_ns=np.concatenate([np.zeros(n, np.int64), (steps["end_ns"] - steps["start_ns"]).to_numpy()]),
        pid=np.zeros(n + ns, np.int64), tid=np.zeros(n + ns, np.int64),
        parent=np.full(n + ns, -1, np.int64),
        is_backward=np.concatenate([np.array([p[0] == BACKWARD_ROOT for p in parts], bool), np.zeros(ns, bool)]),
        input_shapes=np.concatenate([k["input_shapes"].to_numpy(), np.zeros(ns, np.int32)]))
    kernels = k.copy()
    kernels["launch_op"] = np.arange(n, dtype=np.int64)
    # ---- the scope tree as module ranges, parents before children (row order breaks equal spans)
    f_name, f_start, f_end = [], [], []
    depth = max((len(p) - 1 for p in parts), default=0)
    for d in range(1, depth + 1):
        prefix = [SCOPE_SEP.join(p[:d]) if len(p) - 1 >= d else None for p in parts]
        for a, b in _runs(prefix):
            f_name.append(parts[a][d - 1])
            f_start.append(int(start[a]) - 1)
            f_end.append(int(start[b]) + 1)
    m = len(f_name)
    pyfuncs = make_table("pyfuncs", m, name=sym.intern_many(f_name),
                         start_ns=np.array(f_start, np.int64), dur_ns=np.array(f_end, np.int64) - np.array(f_start, np.int64),
                         pid=np.zeros(m, np.int64), tid=np.zeros(m, np.int64), is_module=np.ones(m, bool))
    tables = dict(profile.tables)
    tables.update(ops=ops, kernels=kernels, pyfuncs=pyfuncs)
    return Profile(sym, profile.meta, tables)
