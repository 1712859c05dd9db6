"""Kineto trace loader: corpus traces, reference parse counts, exactness, chunking, bad input."""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest

from tb_compare_plugin.loaders import kineto_json
from tb_compare_plugin.loaders.errors import LoadError
from tb_compare_plugin.model.profile import KIND_COMM, KIND_COMPUTE, KIND_MEMCPY, KIND_MEMSET, SCHEMAS
from tb_compare_plugin.model.timeconv import us_str_to_ns

GPU = "gpu"
CONTROL = "gpu/hta_trace_diff/control/control.pt.trace.json.gz"
TEST = "gpu/hta_trace_diff/test/test.pt.trace.json.gz"
RESNET = "gpu/kineto_resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
NCCL = "gpu/hta_nccl/nccl.pt.trace.json.gz"
RANK0 = "gpu/hta_2rank/rank0.pt.trace.json.gz"
CPU_ONLY = "gpu/hta_cpu_only/rank34.pt.trace.json.gz"
STRING_COLS = {"name", "cat", "type", "task_type", "accel_core", "input_shapes", "input_types",
               "input_formats", "call_stack", "op_type", "group", "component", "transport"}

_cache: dict[str, object] = {}


def load(corpus: Path, rel: str | Path):
    """Load once per test session (the corpus is read-only)."""
    key = str(corpus / rel)
    if key not in _cache:
        _cache[key] = kineto_json.load(key)
    return _cache[key]


def corpus_traces(corpus: Path) -> list[Path]:
    return sorted((corpus / GPU).rglob("*.json.gz"))


def assert_same_tables(a, b) -> None:
    """Same rows and values in every table; string columns compared as decoded strings."""
    for name in SCHEMAS:
        x, y = a.tables[name], b.tables[name]
        assert len(x) == len(y), name
        for col in x.columns:
            u, v = x[col].to_numpy(), y[col].to_numpy()
            if col in STRING_COLS and SCHEMAS[name][col] == "int32":
                u, v = np.array(a.names(u), object), np.array(b.names(v), object)
            assert np.array_equal(u, v, equal_nan=u.dtype.kind == "f"), f"{name}.{col}"
    assert a.meta.to_dict() | {"files": [], "path": ""} == b.meta.to_dict() | {"files": [], "path": ""}


# ----------------------------------------------------------------------------- corpus

def test_every_corpus_trace_loads(corpus):
    traces = corpus_traces(corpus)
    assert len(traces) >= 9
    for path in traces:
        p = load(corpus, path)
        assert p.meta.files == [str(path)] and p.meta.format == "trace-json"
        # the 2021 resnet50 traces' [memory] events have Bytes but no totals: the loader says it
        # rebuilt allocated memory from them (tests/test_memory_peaks.py checks the figures)
        rebuilt = [w for w in p.meta.warnings if w.startswith("[memory] events without Total Allocated")]
        assert len(rebuilt) == ("kineto_resnet50" in str(path)), path
        assert [w for w in p.meta.warnings if w not in rebuilt] == [], path
        for name, schema in SCHEMAS.items():
            assert list(p.tables[name].columns) == list(schema), name
            assert [str(t) for t in p.tables[name].dtypes] == list(schema.values()), name
        assert len(p.ops) > 0
        expect = "CPU" if "cpu_only" in str(path) else "GPU"
        assert p.meta.device == expect, path
        if expect == "GPU":
            assert len(p.kernels) > 0 and p.meta.compute_stream is not None
            # ns on the same clock as the host ops: device activity lies within the host span +- 1 s
            assert (p.kernels.dur_ns >= 0).all() and (p.ops.dur_ns >= 0).all()
            lo, hi = p.ops.start_ns.min(), (p.ops.start_ns + p.ops.dur_ns).max()
            assert lo - 10 ** 9 < p.kernels.start_ns.min() and p.kernels.start_ns.max() < hi + 10 ** 9


def test_cpu_only_trace_is_cpu_not_an_error(corpus):
    p = load(corpus, CPU_ONLY)
    assert p.meta.device == "CPU"
    assert len(p.kernels) == 0 and len(p.ops) == 15
    assert p.meta.rank == 34 and p.step_ids() == [551]


def _internals(golden: Path, run: str) -> dict:
    data = json.loads((golden / run / "internals.json").read_text())
    return {side: data[side]["parsed_counts"] for side in ("baseline_side", "target_side")}


def _picked(p) -> np.ndarray:
    """Rows the reference calls device events: cat kernel/gpu_memcpy (not memset, not 2021 Memcpy)."""
    cats = np.char.lower(np.array(p.names(p.kernels.task_type), dtype=str))
    return np.isin(cats, ["kernel", "gpu_memcpy"])


def _check_counts(p, ref: dict) -> None:
    # torch ops = cpu_op + user_annotation + cuda_runtime (+ 2021 Operator/Runtime)
    assert len(p.ops) == ref["torch_op_events"]
    assert len(p.pyfuncs) == ref["python_function_events"]
    assert int(p.pyfuncs.is_module.sum()) == ref["nn_module_events"]
    assert len(p.fwdbwd) == ref["fwdbwd_flow_pairs"]
    assert p.meta.bwd_tid == ref["bwd_tid"]
    # the reference keys its kernel lists by flow-start ts, one entry per launching op: the
    # number of distinct launching ops of its device events is its "launch points"
    linked = p.kernels.launch_op.to_numpy()[_picked(p)]
    assert len(np.unique(linked[linked >= 0])) == ref["kernel_dict_launch_points"]
    # memory: GPU [memory] alloc/free pairs per address
    assert len(p.mem_allocs) == ref["memory_records"]
    assert p.mem_allocs.bytes.sum() / 1024 == pytest.approx(ref["memory_records_total_size_kb"])
    comm = ref["communication"].get("ncclkernel")
    assert len(p.comm_ops) == (comm["ops"] if comm else 0)
    if comm:
        assert p.comm_ops.dur_ns.sum() / 1000 == pytest.approx(comm["op_total_us"])


def test_counts_match_reference_pair_iv(corpus, golden):
    ref = _internals(golden, "iv_gpu_hta_control_vs_test")
    control, test = load(corpus, CONTROL), load(corpus, TEST)
    _check_counts(control, ref["baseline_side"])
    _check_counts(test, ref["target_side"])
    # control: one device event per launch, so linked device events == reference's count
    assert int((control.kernels.launch_op[_picked(control)] >= 0).sum()) == \
        ref["baseline_side"]["kernels_linked_to_launch_points"]
    # test launches CUDA graphs: the reference keeps one kernel per flow id (9,690), we link every
    # graph kernel to its cudaGraphLaunch by correlation id, hence more linked kernels
    linked_test = int((test.kernels.launch_op[_picked(test)] >= 0).sum())
    assert linked_test > ref["target_side"]["kernels_linked_to_launch_points"]
    graph = test.symbols.lookup("cudaGraphLaunch")
    lo = test.kernels.launch_op.to_numpy()
    assert (test.ops.name.to_numpy()[lo[lo >= 0]] == graph).sum() > 4000
    assert control.meta.rank == 3 and test.meta.rank == 1
    assert control.meta.device_name == "NVIDIA A100-PG509-200"


def test_counts_match_reference_pair_iii_baseline(corpus, golden):
    ref = _internals(golden, "iii_gpu_resnet50_vs_npu_l1r0")["baseline_side"]
    p = load(corpus, RESNET)
    _check_counts(p, ref)
    assert int((p.kernels.launch_op[_picked(p)] >= 0).sum()) == ref["kernels_linked_to_launch_points"]
    # 2021 cats: Kernel / Memcpy / Memset, tid "stream 7"
    kinds = dict(zip(*np.unique(p.kernels.kind, return_counts=True)))
    assert kinds == {KIND_COMPUTE: 8772, KIND_MEMCPY: 12, KIND_MEMSET: 312}
    assert set(p.kernels.stream) == {7} and p.meta.compute_stream == 7
    assert p.step_ids() == [5, 6, 7, 8, 9, 10]
    # no Total Allocated in the file: rebuilt as the running sum of Bytes (peak 2,662.3 MiB, back to 0)
    assert len(p.mem_records) == 8220 and p.mem_records.reserved_bytes.isna().all()
    assert p.mem_records.allocated_bytes.max() == 2791636480
    assert p.mem_records.allocated_bytes.iloc[int(p.mem_records.ts_ns.to_numpy().argmax())] == 0


def test_each_kernel_links_to_its_launching_runtime_call(corpus):
    for rel in (CONTROL, RESNET, NCCL):
        p = load(corpus, rel)
        k, o = p.kernels, p.ops
        lo = k.launch_op.to_numpy()
        ok = lo >= 0
        assert ok.mean() > 0.9
        assert (lo < len(o)).all()
        # flow_start is the launching op's start; the op is a runtime call on a CPU thread
        assert np.array_equal(k.flow_start_ns.to_numpy()[ok], o.start_ns.to_numpy()[lo[ok]])
        assert (k.flow_start_ns.to_numpy()[~ok] == -1).all()
        cats = {c.lower() for c in p.names(np.unique(o.cat.to_numpy()[lo[ok]]))}
        assert cats <= {"cuda_runtime", "runtime"}
        names = set(p.names(np.unique(o.name.to_numpy()[lo[ok]])))
        assert all(re.search(r"Launch|Memcpy|Memset", n) for n in names), names
        # launched before running, and each kernel's step is the step of its launch
        assert (k.start_ns.to_numpy()[ok] >= k.flow_start_ns.to_numpy()[ok]).all()
        assert (k.step.to_numpy()[ok] >= 0).mean() > 0.9


def test_nccl_trace_comm_ops_fwdbwd_and_fractional_times(corpus):
    p = load(corpus, NCCL)
    c = p.comm_ops
    assert len(c) == 21
    assert sorted(set(p.names(c.op_type))) == ["allreduce", "broadcast"]
    assert set(p.names(c.group)) == {"0"}
    k = p.kernels
    assert (k.kind.to_numpy()[c.kernel.to_numpy()] == KIND_COMM).all()
    assert (c.bytes > 0).all()
    first = c.iloc[np.argmin(c.start_ns.to_numpy())]
    assert p.symbols.string(first["op_type"]) == "broadcast" and first["bytes"] == 53120 * 4
    assert len(p.fwdbwd) == 543 and p.meta.bwd_tid == 2919752
    assert p.ops.is_backward.sum() == (p.ops.tid == 2919752).sum() > 0
    # {"cat": "kernel", "name": "ncclKernel_AllReduce...", "ts": 4458677009853.422, "dur": 2636.669}
    row = k[(k.start_ns == 4458677009853422)]
    assert len(row) == 1 and row.dur_ns.iloc[0] == 2636669
    assert p.meta.compute_stream == 7 and int(row.stream.iloc[0]) == 40


def test_ns_timestamps_are_exact_against_the_text(corpus):
    """Every op's start/dur equals the decimal text of the file converted to ns without floats."""
    raw = gzip.decompress((corpus / NCCL).read_bytes())
    events = json.loads(raw, parse_float=str)["traceEvents"]
    op_cats = {"cpu_op", "user_annotation", "cuda_runtime"}
    ts = [us_str_to_ns(str(e["ts"])) for e in events if e.get("cat") in op_cats]
    dur = [us_str_to_ns(str(e["dur"])) for e in events if e.get("cat") in op_cats]
    p = load(corpus, NCCL)
    assert p.ops.start_ns.tolist() == ts
    assert p.ops.dur_ns.tolist() == dur
    r = load(corpus, RESNET)            # integer µs: {"cat": "Kernel", "ts": 1623142623531639, "dur": 605}
    hit = r.kernels[r.kernels.start_ns == 1623142623531639000]
    assert hit.dur_ns.tolist() == [605000]


def test_large_fractional_timestamps_take_the_exact_path(tmp_path):
    rng = np.random.default_rng(3)
    whole = np.concatenate([rng.integers(9_000_000_000_000, 9_999_999_999_999, 1500),    # > 2^43 µs
                            rng.integers(1_600_000_000_000_000, 1_700_000_000_000_000, 1500)])  # epoch µs
    frac = rng.integers(0, 1000, 3000)
    lines = [f'{{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": {w}.{f:03d}, '
             f'"dur": 1.5}}' for w, f in zip(whole, frac)]
    lines[7] = lines[7].replace('"ts": ', '"ts": "').replace(', "dur"', '", "dur"')   # one as a string
    path = tmp_path / "big_ts.json"
    path.write_text('{"traceEvents": [\n' + ",\n".join(lines) + "\n]}")
    p = kineto_json.load(str(path))
    assert p.ops.start_ns.tolist() == (whole * 1000 + frac).tolist()
    assert set(p.ops.dur_ns) == {1500}


# ----------------------------------------------------------------------------- reading

def test_gz_and_plain_json_give_identical_tables(corpus, tmp_path):
    for rel in (RANK0, NCCL):
        plain = tmp_path / Path(rel).name.replace(".gz", "")
        plain.write_bytes(gzip.decompress((corpus / rel).read_bytes()))
        assert_same_tables(kineto_json.load(str(corpus / rel)), kineto_json.load(str(plain)))


def test_results_do_not_depend_on_chunk_size(corpus):
    # resnet is pretty-printed ("},\n  {" cuts); rank0 is one line ("}, {" cuts)
    for rel in (RESNET, RANK0):
        small = kineto_json.load(str(corpus / rel), chunk_bytes=40_000)
        assert_same_tables(load(corpus, rel), small)


def test_progress_is_reported(corpus):
    seen = []
    kineto_json.load(str(corpus / RANK0), progress=seen.append, chunk_bytes=100_000)
    assert len(seen) > 3 and seen[-1] == 1.0
    assert seen == sorted(seen) and all(0 <= f <= 1 for f in seen)


def test_kernels_without_correlation_link_through_flows(corpus, tmp_path):
    text = gzip.decompress((corpus / NCCL).read_bytes()).decode()
    stripped = re.sub(r'"correlation": \d+, |,\s*"correlation": \d+', "", text)
    path = tmp_path / "nocorr.json"
    path.write_text(stripped)
    p = kineto_json.load(str(path))
    ref = load(corpus, NCCL)
    assert (p.kernels["corr"] == -1).all()
    assert np.array_equal(p.kernels.launch_op.to_numpy(), ref.kernels.launch_op.to_numpy())
    assert any("through flow events" in w for w in p.meta.warnings)


def test_top_level_array_and_keys_after_the_array(tmp_path):
    ev = ('{"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": "stream 3", "ts": 10, "dur": 2, '
          '"args": {"device": 0, "correlation": 5}}')
    rt = ('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 8, '
          '"dur": 1, "args": {"correlation": 5}}')
    a = tmp_path / "a.json"
    a.write_text(f"[{rt},{ev}]")
    b = tmp_path / "b.json"
    b.write_text(f'{{"traceEvents":[{rt},{ev}],"deviceProperties":[{{"id":0,"name":"X1"}}],'
                 f'"distributedInfo":{{"rank":5}}}}')
    for path in (a, b):
        p = kineto_json.load(str(path))
        assert p.kernels.launch_op.tolist() == [0] and p.kernels.stream.tolist() == [3]
        assert p.kernels.start_ns.tolist() == [10000] and p.kernels.flow_start_ns.tolist() == [8000]
    p = kineto_json.load(str(b))
    assert (p.meta.rank, p.meta.device_name) == (5, "X1")
    assert kineto_json.peek(str(b))["rank"] == 5
    only = tmp_path / "only_kernels.json"           # device events without any host op
    only.write_text(f'{{"traceEvents": [{ev}]}}')
    p = kineto_json.load(str(only))
    assert p.meta.device == "GPU" and p.kernels.launch_op.tolist() == [-1] and len(p.ops) == 0


def test_events_with_bad_fields_are_skipped_or_repaired_with_a_warning(tmp_path):
    good = '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}'
    bad = ['{"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": {}, "dur": 1}',
           '{"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": 2, "dur": 1, '
           '"args": {"Sequence number": [1], "Call stack": 7}}',
           '{"ph": "X", "cat": "cpu_op", "name": "d", "pid": 1, "tid": 1, "dur": 1}',
           '{"ph": "X", "cat": "cpu_op", "name": "e", "pid": 1, "tid": 1, "ts": "junk", "dur": 1}',
           '[1, 2]']
    path = tmp_path / "bad.json"
    path.write_text('{"traceEvents": [' + ",\n".join([good] + bad + [good]) + "]}")
    p = kineto_json.load(str(path))
    assert p.names(p.ops.name) == ["a", "c", "a"]
    assert len(p.meta.warnings) == 3
    assert any("3 events skipped: missing or unreadable ts" in w for w in p.meta.warnings)


def test_memory_pairing_and_owner_ops(tmp_path):
    def mem(ts, nbytes, addr, dev=0, total=None):
        args = {"Device Type": 1, "Device Id": dev, "Addr": addr, "Bytes": nbytes}
        if total is not None:
            args["Total Allocated"] = total
        return {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts, "args": args}
    ops = [{"ph": "X", "cat": "cpu_op", "name": "outer", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
           {"ph": "X", "cat": "cpu_op", "name": "inner", "pid": 1, "tid": 1, "ts": 10, "dur": 10}]
    events = ops + [mem(12, 512, 1, total=512), mem(30, -512, 1),          # alloc/free in inner/outer
                    mem(40, 256, 2), mem(50, -128, 2),                      # size mismatch: dropped
                    mem(60, 64, 3), mem(70, 64, 3),                         # re-alloc: first unreleased
                    mem(80, 32, 4, dev=-1),                                 # CPU: ignored
                    mem(200, 16, 5)]                                        # open at the end, no op
    path = tmp_path / "mem.json"
    path.write_text(json.dumps({"traceEvents": events}))
    p = kineto_json.load(str(path))
    m = p.mem_allocs
    assert m.bytes.tolist() == [512, 64, 64, 16]
    assert m.alloc_ns.tolist() == [12000, 60000, 70000, 200000]
    assert m.release_ns.tolist() == [30000, -1, -1, -1]
    assert p.names(m.name) == ["inner", "outer", "outer", ""]
    assert m.op.tolist() == [1, 0, 0, -1]
    r = p.mem_records
    assert len(r) == 7 and r.allocated_bytes.iloc[0] == 512 and np.isnan(r.allocated_bytes.iloc[1])


def test_collective_type_names():
    ct = kineto_json.collective_type
    assert ct("ncclDevKernel_AllReduce_Sum_f32_RING_LL") == "allreduce"
    assert ct("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*)") == "allgather"
    assert ct("ncclDevKernel_SendRecv(ncclDevComm*)") == "sendrecv"
    assert ct("ncclKernel_ReduceScatter_RING_SIMPLE_Sum_bf16") == "reducescatter"
    assert ct("ncclAllReduceRingLLKernel_sum_f32(ncclColl)") == "allreduce"
    assert ct("ncclDevKernel_Generic_4", hint="all_to_all") == "alltoall"


# ----------------------------------------------------------------------------- bad input

def _err(path: Path) -> str:
    with pytest.raises(LoadError) as e:
        kineto_json.load(str(path))
    assert str(e.value).startswith(str(path) + ": ")
    return e.value.problem


def test_truncated_traces_are_load_errors(corpus, tmp_path):
    raw = gzip.decompress((corpus / RANK0).read_bytes())
    for cut in (50, 400, len(raw) // 3, len(raw) - 100, len(raw) - 3):
        path = tmp_path / f"cut{cut}.json"
        path.write_bytes(raw[:cut])
        problem = _err(path)
        assert "truncated" in problem, problem
    packed = (corpus / RANK0).read_bytes()
    for cut in (100, len(packed) // 2, len(packed) - 10):
        path = tmp_path / f"cut{cut}.json.gz"
        path.write_bytes(packed[:cut])
        assert "truncated" in _err(path)


def test_other_bad_files_are_load_errors(tmp_path):
    cases = {
        "empty.json": (b"", "empty"),
        "garbage.json": (bytes(range(256)) * 4, "not a JSON trace"),
        "latin1.json": (b'{"traceEvents": [{"ph": "X", "name": "caf\xe9", "ts": 1}]}', "UTF-8"),
        "no_events.json": (b'{"schemaVersion": 1, "deviceProperties": []}', "no \"traceEvents\""),
        "events_not_list.json": (b'{"traceEvents": {"a": 1}}', "not a JSON array"),
        "numbers.json": (b"[1, 2, 3]", "not a trace"),
        "bad.json.gz": (b"\x1f\x8b\x08\x00garbage-garbage-garbage", "gzip"),
    }
    for name, (data, needle) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        assert needle in _err(path), name
    with pytest.raises(LoadError, match="cannot open"):
        kineto_json.load(str(tmp_path / "missing.json"))


def test_malformed_json_reports_the_byte_offset(corpus, tmp_path):
    raw = gzip.decompress((corpus / RESNET).read_bytes())
    at = raw.index(b"},\n", len(raw) // 2) + 3
    path = tmp_path / "broken.json"
    path.write_bytes(raw[:at] + b"@" + raw[at:])
    assert f"malformed JSON at byte {at:,}" in _err(path)


# ----------------------------------------------------------------------------- peek

def test_peek_on_every_corpus_trace(corpus):
    for path in corpus_traces(corpus):
        info = kineto_json.peek(str(path))
        assert info["is_trace"] and info["error"] is None, path
        p = load(corpus, path)
        assert info["rank"] == p.meta.rank, path
        # peek reads only the head: deviceProperties written after traceEvents (the TraceLens
        # traces) is not seen, and peek says "not known" rather than guessing
        assert info["device_name"] in (p.meta.device_name, None), path
        assert info["device_hint"] in (p.meta.device, None), path
    assert kineto_json.peek(str(corpus / CPU_ONLY))["device_hint"] == "CPU"
    assert kineto_json.peek(str(corpus / RESNET))["device_hint"] == "GPU"


def test_peek_reads_only_the_head(corpus, tmp_path):
    # a 'trace' whose head is fine but whose body is garbage far away: peek does not notice
    raw = gzip.decompress((corpus / CONTROL).read_bytes())
    path = tmp_path / "late_garbage.json"
    path.write_bytes(raw[:2_000_000] + b"\xff\xff garbage")
    info = kineto_json.peek(str(path))
    assert info["is_trace"] and info["rank"] == 3 and info["device_hint"] == "GPU"
    for name, data in (("e.json", b""), ("x.json", b'{"a": 1}')):
        (tmp_path / name).write_bytes(data)
        info = kineto_json.peek(str(tmp_path / name))
        assert not info["is_trace"] and info["error"]


def test_python_functions_nest_per_thread(tmp_path):
    def pyf(name, ts, dur, pid_, tid, py_id, parent):
        return {"ph": "X", "cat": "python_function", "name": name, "pid": pid_, "tid": tid, "ts": ts,
                "dur": dur, "args": {"Python id": py_id, "Python parent id": parent}}
    events = [pyf("train.py(10): <module>", 0, 100, 1, 1, 1, None),
              pyf("nn.Module: Linear_0", 10, 20, 1, 1, 2, 1),
              pyf("torch/nn/functional.py(5): linear", 12, 5, 1, 1, 3, 2),
              pyf("worker.py(1): run", 15, 50, 1, 2, 4, None)]           # other thread: a root
    path = tmp_path / "py.json"
    path.write_text(json.dumps({"traceEvents": events}))
    p = kineto_json.load(str(path))
    f = p.pyfuncs
    assert f.parent.tolist() == [-1, 0, 1, -1] and f.depth.tolist() == [0, 1, 2, 0]
    assert f.is_module.tolist() == [False, True, False, False]
    assert f.py_id.tolist() == [1, 2, 3, 4] and f.py_parent.tolist() == [-1, 1, 2, -1]
    assert p.meta.device == "CPU" and len(p.ops) == 0
