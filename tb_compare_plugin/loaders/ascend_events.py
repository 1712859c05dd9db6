"""Event schema of an Ascend ``trace_view.json``: the msgspec Structs one chunk of events decodes to.

Only the fields the loader reads are decoded (everything else is skipped unread); which ``args``
fields each table kind reads, and the storage groups a chunk keeps them in, are defined here too.

Two schemas: :data:`DECODER` takes any JSON value in every field; :data:`TYPED_DECODER` is what
exports write (integer pid/tid and numeric args, numeric dur, object args), so the column code can
skip checking value types.  Both give the same values (absent ones None); a chunk the typed schema
rejects is decoded again with the other one.
"""
from __future__ import annotations

from typing import Any, Optional, Union

import msgspec


class Args(msgspec.Struct, gc=False, frozen=True):
    """The ``args`` keys the loader reads from X events (everything else is skipped by the decoder)."""
    task_type: Any = msgspec.field(default=None, name="Task Type")
    task_id: Any = msgspec.field(default=None, name="Task Id")
    stream_id: Any = msgspec.field(default=None, name="Stream Id")
    phys_stream_id: Any = msgspec.field(default=None, name="Physic Stream Id")
    connection_id: Any = None
    input_dims: Any = msgspec.field(default=None, name="Input Dims")
    input_type: Any = msgspec.field(default=None, name="Input type")
    call_stack: Any = msgspec.field(default=None, name="Call stack")
    seq: Any = msgspec.field(default=None, name="Sequence number")
    py_id: Any = msgspec.field(default=None, name="Python id")
    py_parent: Any = msgspec.field(default=None, name="Python parent id")
    correlation_id: Any = None
    hccl_task_type: Any = msgspec.field(default=None, name="task type")
    transport: Any = msgspec.field(default=None, name="transport type")
    size: Any = msgspec.field(default=None, name="size(Byte)")
    src_rank: Any = msgspec.field(default=None, name="src rank")
    dst_rank: Any = msgspec.field(default=None, name="dst rank")


NO_ARGS = Args()


class MetaArgs(msgspec.Struct, gc=False):
    name: Any = None
    sort_index: Any = None


# Events are a union tagged by "ph": only X, M and flow s/f events carry decoded fields; every other
# phase decodes to an empty struct, its values skipped unread.  ``_k`` tells the phases apart.
class _Event(msgspec.Struct, gc=False, tag_field="ph"):
    _k = 0


class X(_Event, tag="X"):                       # field order = msgspec.structs.astuple order
    _k = 1
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    name: Any = None
    cat: Any = None
    args: Optional[Args] = NO_ARGS


class M(_Event, tag="M"):
    _k = 2
    name: Any = None
    pid: Any = None
    tid: Any = None
    args: Optional[MetaArgs] = None


class S(_Event, tag="s"):
    _k = 3
    pid: Any = None
    tid: Any = None
    ts: Any = None
    id: Any = None
    cat: Any = None


class F(S, tag="f"):
    _k = 4


_OTHER_PHASES = [type(f"_Ph{ord(p)}", (_Event,), {}, tag=p)
                 for p in "ABCDEFGHIJKLNOPQRTUVWYZabcdeghijklmnopqrtuvwxyz"]
DECODER = msgspec.json.Decoder(list[Union[tuple([X, M, S, F] + _OTHER_PHASES)]])  # type: ignore[misc]


# ------------------------------------------------------------------------------------ storage groups
# args fields per table kind; text fields are interned later, the others are numbers (ascend_columns.ints)
HW = ("task_type", "task_id", "stream_id", "phys_stream_id", "connection_id")
HCCL = ("hccl_task_type", "transport", "size", "src_rank", "dst_rank")
OPS = ("input_dims", "input_type", "call_stack", "seq", "correlation_id")
PY = ("py_id", "py_parent")
TEXT = frozenset({"task_type", "hccl_task_type", "transport", "input_dims", "input_type", "call_stack"})
# storage groups of X events: which args fields a chunk keeps for them
G_SKIP, G_HW, G_HCCL, G_OPS, G_PY, G_DEV, G_ALL = range(7)
GROUP_FIELDS = {G_HW: HW, G_HCCL: HCCL, G_OPS: OPS, G_PY: PY, G_DEV: HW + HCCL, G_ALL: HW + HCCL + OPS + PY}


# the typed schema
TypedArgs = msgspec.defstruct(                      # Args with the numbers typed
    "TypedArgs", [(f.name, Any if f.name in TEXT else Optional[int], msgspec.field(default=None, name=f.encode_name))
                  for f in msgspec.structs.fields(Args)], gc=False, frozen=True)
_TYPED_NO_ARGS = TypedArgs()


def _retyped(cls, tag: str, changes: dict, base=_Event):
    """``cls`` with the same field order, defaults and ``_k``, but the (type, default) in ``changes``."""
    fields = [(f.name, *changes.get(f.name, (f.type, f.default))) for f in msgspec.structs.fields(cls)]
    return msgspec.defstruct(f"_Typed{cls.__name__}", fields, bases=(base,), tag=tag, gc=False,
                             namespace={"_k": cls._k})


_IDS = {"pid": (Optional[int], None), "tid": (Optional[int], None)}
_TypedX = _retyped(X, "X", {**_IDS, "dur": (Union[int, float, None], None),
                            "args": (TypedArgs, _TYPED_NO_ARGS)})        # not null
_TypedS = _retyped(S, "s", _IDS)
_TypedF = _retyped(F, "f", _IDS, base=_TypedS)


TYPED_DECODER = msgspec.json.Decoder(
    list[Union[tuple([_TypedX, M, _TypedS, _TypedF] + _OTHER_PHASES)]])  # type: ignore[misc]
