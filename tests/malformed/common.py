"""Shared parts of the malformed-input cases: the :class:`Case` record and its registry, the
real files the cases start from (``samples/`` and, marked ``corpus=True``, ``../shared/corpus``),
the pristine sources (``SOURCES``) and small helpers for mutating copies."""
from __future__ import annotations

import gzip
import json
import shutil
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

from conftest import CORPUS, SAMPLES


GPU_SAMPLE = SAMPLES / "baseline_gpu" / "worker0.pt.trace.json"
NPU_SAMPLE = SAMPLES / "target_npu" / "rank0_ascend_pt"
C_GPU = CORPUS / "gpu" / "hta_2rank" / "rank0.pt.trace.json.gz"
C_GPU_SMALL = CORPUS / "gpu" / "hta_amd_mi250" / "mi250.pt.trace.json.gz"
C_NPU_L1 = CORPUS / "npu" / "alexnet_ddp_2rank_level1" / "rank0_ascend_pt"
C_NPU_L0 = CORPUS / "npu" / "alexnet_ddp_2rank_level0" / "rank0_ascend_pt"
C_DB_L0 = CORPUS / "npu" / "alexnet_ddp_2rank_db_level0" / "rank0_ascend_pt"
C_DB_L1_R1 = CORPUS / "npu" / "alexnet_ddp_2rank_db_level1" / "rank1_ascend_pt"

TRACE = "w.pt.trace.json"               # every trace case writes this file (or TRACE + ".gz")
WORKER = "rank0_ascend_pt"
OUT = "ASCEND_PROFILER_OUTPUT"
DB = "ascend_pytorch_profiler_0.db"
# files of a text export the loaders read (corpus copies skip the big ones nobody reads)
TEXT_FILES = ("trace_view.json", "kernel_details.csv", "operator_memory.csv", "memory_record.csv",
              "communication.json", "step_trace_time.csv")
ASCEND_TEXT_OWNER = "loaders/ascend_text.py / ascend_trace.py (the helper rewriting the Ascend text decoder)"


@dataclass
class Case:
    id: str
    group: str                          # trace | ascend-text | ascend-csv | ascend-db | layout
    build: Callable[[Path], None]       # writes the case into an empty folder
    culprits: tuple                     # names a LoadError message must contain (one of)
    source: str | None = None           # pristine source key (SOURCES), for the dropped-rows check
    removes: frozenset = frozenset()    # tables the mutation itself shrinks
    corpus: bool = False
    owner: str | None = None            # known failure in another helper's module -> xfail
    needs_unreadable: bool = False      # relies on chmod 000 denying reads (not as root)


CASES: list[Case] = []


def add(id, group, build, culprits, **kw) -> None:
    CASES.append(Case(id, group, build, tuple(culprits), **kw))


# ------------------------------------------------------------------------------ raw material

@lru_cache(None)
def gpu_bytes() -> bytes:
    return GPU_SAMPLE.read_bytes()


@lru_cache(None)
def corpus_gpu_bytes() -> bytes:
    return gzip.decompress(C_GPU.read_bytes())


def write_trace(dst: Path, doc, name: str = TRACE, **dump) -> Path:
    p = dst / name
    p.write_text(json.dumps(doc, **dump))
    return p


def copy_npu(dst: Path, src: Path = NPU_SAMPLE, files=None) -> Path:
    """Copy a text-export worker folder (``files``: only these output files)."""
    w = dst / WORKER
    if files is None:
        shutil.copytree(src, w)
    else:
        (w / OUT).mkdir(parents=True)
        for f in src.iterdir():
            if f.is_file():
                shutil.copy(f, w / f.name)
        for n in files:
            if (src / OUT / n).is_file():
                shutil.copy(src / OUT / n, w / OUT / n)
    for p in w.rglob("*"):                       # corpus files are read-only
        p.chmod(0o755 if p.is_dir() else 0o644)
    w.chmod(0o755)
    return w


def out(dst: Path) -> Path:
    return dst / WORKER / OUT


def sub_every(events: list, pred, fn, every: int = 3) -> int:
    """Apply ``fn(event, k)`` to every ``every``-th event matching ``pred``; returns how many."""
    k = 0
    for e in events:
        if isinstance(e, dict) and pred(e):
            if k % every == 0:
                fn(e, k // every)
            k += 1
    return k


def wrong(v, k: int):
    """The k-th wrong-typed stand-in for ``v`` (cycles: list, object, bool, null, swapped, junk)."""
    if isinstance(v, bool):
        swapped = "true"
    elif isinstance(v, (int, float)):
        swapped = repr(v)                      # a number written as a string
    elif isinstance(v, str):
        swapped = 12345                        # a string written as a number
    else:
        swapped = "12345"
    return [[1, 2], {"x": [1]}, True, None, swapped, "not a number"][k % 6]


# ------------------------------------------------------------------------------ sources

def src_gpu(dst: Path) -> None:
    (dst / TRACE).write_bytes(gpu_bytes())


def src_npu(dst: Path) -> None:
    copy_npu(dst)


def src_tinydb(dst: Path) -> None:
    from .tinydb import make_tiny_db
    (dst / WORKER / OUT).mkdir(parents=True)
    make_tiny_db(dst / WORKER / OUT / DB)


def src_cgpu(dst: Path) -> None:
    (dst / TRACE).write_bytes(corpus_gpu_bytes())


def src_cnpu(dst: Path) -> None:
    copy_npu(dst, C_NPU_L1, TEXT_FILES)


def src_cdb(dst: Path) -> None:
    copy_npu(dst, C_DB_L0, [DB])


SOURCES = {"gpu": src_gpu, "npu": src_npu, "tinydb": src_tinydb, "cgpu": src_cgpu, "cnpu": src_cnpu,
           "cdb": src_cdb}
CORPUS_SOURCES = {"cgpu", "cnpu", "cdb"}


def derived(source: str, mutate: Callable[[Path], None]) -> Callable[[Path], None]:
    def build(dst: Path) -> None:
        SOURCES[source](dst)
        mutate(dst)
    return build


def add_mut(id, group, source, mutate, culprits, **kw) -> None:
    add(id, group, derived(source, mutate), culprits, source=source, corpus=source in CORPUS_SOURCES, **kw)
