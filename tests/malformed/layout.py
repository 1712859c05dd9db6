"""Odd folder layouts for discovery and the loaders: folders named like files, symlink loops,
unreadable files, missing or doubled output folders, files of different captures side by side."""
from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

from .ascend_text import KD, MR, OM, TV, csv_mut
from .common import (C_DB_L1_R1, C_NPU_L0, C_NPU_L1, DB, OUT, TEXT_FILES, TRACE, WORKER, add, copy_npu, gpu_bytes,
                     out)
from .tinydb import make_tiny_db

def _good_trace(dst: Path, name: str = TRACE) -> None:
    (dst / name).write_bytes(gpu_bytes())


def _folder_named_trace(dst: Path) -> None:
    (dst / "x.pt.trace.json").mkdir()
    (dst / "y.json.gz").mkdir()
    (dst / "z.pt.trace.json.gz").mkdir()
    (dst / "z.pt.trace.json.gz" / "inner.txt").write_text("not a trace")
    _good_trace(dst)


def _trace_inside_trace_named_folder(dst: Path) -> None:
    (dst / "r.pt.trace.json").mkdir()
    _good_trace(dst / "r.pt.trace.json")


def _symlink_loops(dst: Path) -> None:
    _good_trace(dst)
    sub = dst / "sub"
    sub.mkdir()
    os.symlink("..", sub / "up")                  # back to the run
    os.symlink(str(dst), sub / "abs_up")
    os.symlink("b", dst / "a")                    # a -> b -> a
    os.symlink("a", dst / "b")
    os.symlink("self.pt.trace.json", dst / "self.pt.trace.json")   # ELOOP trace file
    os.symlink("nowhere.pt.trace.json", dst / "dangling.pt.trace.json")


def _unreadable_file(dst: Path) -> None:
    _good_trace(dst)
    os.chmod(dst / TRACE, 0)


def _unreadable_dir(dst: Path) -> None:
    copy_npu(dst)
    os.chmod(out(dst), 0)


def _empty_worker(dst: Path) -> None:
    (dst / WORKER / OUT).mkdir(parents=True)


def _out_is_file(dst: Path) -> None:
    (dst / WORKER).mkdir()
    (dst / WORKER / OUT).write_text("not a folder")


def _trace_view_is_dir(dst: Path) -> None:
    copy_npu(dst)
    (out(dst) / TV).unlink()
    (out(dst) / TV).mkdir()


def _db_is_dir(dst: Path) -> None:
    (dst / WORKER / OUT / DB).mkdir(parents=True)


def _csv_is_dir(dst: Path) -> None:
    copy_npu(dst)
    (out(dst) / KD).unlink()
    (out(dst) / KD).mkdir()


def _no_trace_view(dst: Path) -> None:
    copy_npu(dst)
    (out(dst) / TV).unlink()


def _text_plus_other_rank_db(dst: Path) -> None:
    copy_npu(dst)
    make_tiny_db(out(dst) / "ascend_pytorch_profiler_1.db", rank=1)


def _corpus_text_plus_other_rank_db(dst: Path) -> None:
    copy_npu(dst, C_NPU_L1, TEXT_FILES)
    shutil.copy(C_DB_L1_R1 / OUT / "ascend_pytorch_profiler_1.db", out(dst))


def _level0_csv_level1_trace(dst: Path) -> None:
    """samples: the level-1 trace with a kernel_details.csv stripped of the PMU/shape columns."""
    copy_npu(dst)
    keep = ("Step Id", "Model ID", "Task ID", "Stream ID", "Name", "Type", "OP State", "Accelerator Core",
            "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Dim", "Mix Block Dim", "HF32 Eligible",
            "Context ID")

    def fn(h, rows):
        idx = [i for i, c in enumerate(h) if c in keep]
        return [h[i] for i in idx], [[r[i] for i in idx] for r in rows]
    csv_mut(KD, fn)(dst)


def _corpus_level0_csv_level1_trace(dst: Path) -> None:
    copy_npu(dst, C_NPU_L1, TEXT_FILES)
    for n in (KD, OM, MR):
        shutil.copy(C_NPU_L0 / OUT / n, out(dst) / n)
        (out(dst) / n).chmod(0o644)


def _other_run_csv(dst: Path) -> None:
    """kernel_details.csv of another capture: no start time matches the trace."""
    copy_npu(dst)
    csv_mut(KD, lambda h, rows: (h, [r[:h.index("Start Time(us)")] + ["1.000\t"] +
                                     r[h.index("Start Time(us)") + 1:] for r in rows]))(dst)


def _two_out_dirs(dst: Path) -> None:
    copy_npu(dst)
    shutil.copytree(out(dst), dst / WORKER / "ASCEND_PROFILER_OUTPUT_old")


def _bare_out_dir(dst: Path) -> None:
    copy_npu(dst)
    shutil.move(str(out(dst)), str(dst / OUT))
    shutil.rmtree(dst / WORKER)


def _trace_and_npu_in_one_run(dst: Path) -> None:
    _good_trace(dst)
    copy_npu(dst)
    (out(dst) / KD).write_bytes(b"")


def _gz_and_plain_same_name(dst: Path) -> None:
    _good_trace(dst)
    (dst / (TRACE + ".gz")).write_bytes(gzip.compress(gpu_bytes()[:5000]))


LAYOUT = [
    ("layout-folder-named-like-trace", _folder_named_trace, [TRACE], "gpu"),
    ("layout-trace-inside-trace-named-folder", _trace_inside_trace_named_folder, [TRACE], "gpu"),
    ("layout-symlink-loops", _symlink_loops, [TRACE, "self.pt.trace.json", "dangling.pt.trace.json"], "gpu"),
    ("layout-empty-worker", _empty_worker, [WORKER], None),
    ("layout-output-is-a-file", _out_is_file, [WORKER, OUT], None),
    ("layout-trace-view-is-a-folder", _trace_view_is_dir, [TV, WORKER], None),
    ("layout-db-is-a-folder", _db_is_dir, [DB, WORKER], None),
    ("layout-csv-is-a-folder", _csv_is_dir, [KD], None),
    ("layout-no-trace-view", _no_trace_view, [WORKER, TV], None),
    ("layout-text-plus-other-rank-db", _text_plus_other_rank_db, ["ascend_pytorch_profiler_1.db"], None),
    ("layout-level0-csv-level1-trace", _level0_csv_level1_trace, [KD], "npu"),
    ("layout-csv-from-other-capture", _other_run_csv, [KD], None),
    ("layout-two-output-dirs", _two_out_dirs, [WORKER], "npu"),
    ("layout-bare-output-dir", _bare_out_dir, [OUT, TV], None),
    ("layout-trace-and-npu-in-one-run", _trace_and_npu_in_one_run, [TRACE, KD], None),
    ("layout-gz-and-plain-same-name", _gz_and_plain_same_name, [TRACE, TRACE + ".gz"], None),
]
for cid, fn, culprits, source in LAYOUT:
    add(cid, "layout", fn, culprits, source=source)
add("layout-unreadable-file", "layout", _unreadable_file, [TRACE], needs_unreadable=True)
add("layout-unreadable-output-dir", "layout", _unreadable_dir, [WORKER, OUT], needs_unreadable=True)
add("corpus-layout-text-plus-other-rank-db", "layout", _corpus_text_plus_other_rank_db,
    ["ascend_pytorch_profiler_1.db"], corpus=True)
add("corpus-layout-level0-csv-level1-trace", "layout", _corpus_level0_csv_level1_trace, [KD], corpus=True)
