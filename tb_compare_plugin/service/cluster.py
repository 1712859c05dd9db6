"""A run's cluster analysis, for the CLI and the plugin: find the run's workers (discovery),
summarise every rank (``analyses.run.summarise.summarise_worker``) on every local core or as Dask
tasks, through the summary cache, and analyse (``analyses.run.cluster.analyse_cluster``).

Entry points:

* :func:`cluster_json` ``(run, against=None, *, scheduler=None, ...) -> dict`` — the issue's JSON
  (``ClusterResult.to_dict()``) plus ``"errors"``: one ``{"run", "worker", "rank", "path",
  "error"}`` per rank that could not be summarised.  Those ranks are left out of the analysis and
  named there (and in ``warnings``); the others are analysed.  A run where no rank can be
  summarised raises ``ValueError`` with one line naming the first error.
* :func:`find_run` ``(path | RunInfo) -> RunRef``; :func:`summarise_specs` ``(specs, ...)`` for
  callers that hold specs already (the plugin's scanner snapshot).

Executors: ``scheduler`` (or ``$TB_COMPARE_DASK_SCHEDULER``, see :mod:`.dask_exec`) runs the
per-rank work as Dask tasks; otherwise a process pool of ``workers`` (default: every core) started
from the parse pool's fork server, ranks sent in chunks; ``TB_COMPARE_PROCESSES=0`` runs them in
the calling process.  All three run the same function on the same inputs, so they give the same
JSON.

Caching (``cache.ProfileCache`` checked records, see cache.py): each rank's summary under its
worker's fingerprint (format, root, every file's path/size/mtime) and the code hash of kind
"summary"; the finished JSON of a run under a fingerprint of every file of the run (and of the
``against`` run) and the code hash of kind "cluster", so a second look at an unchanged run skips
discovery, summaries and analysis alike.  Records are written whole or not at all; a damaged or
mismatching record is a miss.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Callable, Sequence

from . import dask_exec

log = logging.getLogger(__name__)
DEFAULT = object()            # "the default cache" (None = no cache)
CHUNK_MOST = 64


@dataclass
class RunRef:
    name: str                 # the run's name in the JSON
    path: str                 # its folder ("" when only specs are known)
    specs: list = field(default_factory=list)     # WorkerSpec of every worker


# ------------------------------------------------------------------------------------------ discovery

def find_run(run) -> RunRef:
    """The run at a path (a folder of worker folders / trace files; a logdir holding exactly one
    run), or a :class:`~..discovery.RunInfo` the caller has already (the plugin's scanner)."""
    from ..discovery import find_runs
    known = _known_ref(run)
    if known is not None:
        return known
    path = _run_folder(run)
    runs = find_runs(path)
    if not runs:
        raise ValueError(f"{path}: no profile found")
    if len(runs) > 1:
        names = ", ".join(r.name for r in runs[:8]) + (", ..." if len(runs) > 8 else "")
        raise ValueError(f"{path} holds {len(runs)} runs ({names}); name one of them")
    r = runs[0]
    name = os.path.basename(path.rstrip(os.sep)) if r.name == "." else r.name
    return RunRef(name, path, list(r.workers))


def _known_ref(run) -> RunRef | None:
    """The RunRef of a RunRef or of a discovery :class:`~..discovery.RunInfo`; None for a path."""
    from ..discovery import RunInfo
    if isinstance(run, RunRef):
        return run
    if isinstance(run, RunInfo):
        return RunRef(run.name, run.path, list(run.workers))
    return None


def _run_folder(run) -> str:
    """The absolute path of a run given as a path; ValueError unless it is a folder."""
    path = os.path.abspath(os.fspath(run))
    if not os.path.isdir(path):
        raise ValueError(f"{path}: not a folder (a cluster run is a folder of its ranks' profiles)")
    return path


def tree_source(path: str) -> str:
    """A hash of (relative path, size, mtime) of every file under ``path`` as discovery walks it
    (hidden and tool folders skipped, symlinked folders followed once): any change discovery or a
    summary could see changes it."""
    from ..discovery.walk import _SKIP_DIRS
    h = hashlib.sha256()
    seen = set()
    rows = []
    for dirpath, dirs, names in os.walk(path, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
        rel = os.path.relpath(dirpath, path)
        for n in names:
            try:
                st = os.stat(os.path.join(dirpath, n))
            except OSError:
                continue
            rows.append(f"{rel}/{n}\0{st.st_size}\0{st.st_mtime_ns}")
    for r in sorted(rows):
        h.update(r.encode("utf-8", "surrogateescape") + b"\n")
    return f"{len(rows)}:{h.hexdigest()}"


def _run_source(ref: RunRef) -> str:
    if ref.path and os.path.isdir(ref.path) and not ref.specs:
        return tree_source(ref.path)
    h = hashlib.sha256(repr(sorted(repr(s.fingerprint) + repr(s.rank) + (s.error or "")
                                   for s in ref.specs)).encode("utf-8"))
    return f"specs:{len(ref.specs)}:{h.hexdigest()}"


# ------------------------------------------------------------------------------------------ executors

class SummaryPool:
    """``workers`` processes from the parse pool's fork server (libraries and loaders imported
    once), each summarising chunks of ranks.  Registered with :func:`.parsepool.abort_all`, so
    the CLI's Ctrl-C / SIGTERM handler stops it too."""

    def __init__(self, workers: int) -> None:
        from . import parsepool
        self.workers = max(1, int(workers))
        try:
            import multiprocessing as mp
            ctx = mp.get_context("forkserver")
            ctx.set_forkserver_preload(parsepool._preload() + ["tb_compare_plugin.analyses.run.summarise",
                                                               "tb_compare_plugin.service.dask_exec"])
            parsepool._start_forkserver_quietly()
        except (ValueError, OSError):
            import multiprocessing as mp
            ctx = mp.get_context("spawn")
        self._ctx = ctx
        self._ex = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx)
        self.aborted = False
        parsepool._LIVE.add(self)

    def abort(self) -> None:
        """Kill the children now (takes no lock: safe in a signal handler)."""
        self.aborted = True
        for pid in list(getattr(self._ex, "_processes", None) or {}):
            try:
                os.kill(pid, signal.SIGKILL)
            except (OSError, TypeError):
                pass

    def shutdown(self) -> None:
        from . import parsepool
        parsepool._LIVE.discard(self)
        self._ex.shutdown(wait=True, cancel_futures=True)

    def map(self, specs: Sequence, options: dict, progress=None) -> list:
        """``[("ok", RankSummary) | ("error", line)]`` per spec.  A chunk whose child died is
        tried once more in a fresh pool; if it dies again its ranks get that error."""
        out: list = [None] * len(specs)
        bounds = dask_exec.chunk_bounds(len(specs), self.workers, CHUNK_MOST)
        done = 0
        for attempt in range(2):
            futs = {self._ex.submit(dask_exec.summarise_chunk, list(specs[a:b]), options): (a, b)
                    for a, b in bounds}
            failed = []
            for fut, (a, b) in futs.items():
                try:
                    got = fut.result()
                except BrokenProcessPool:
                    if self.aborted:
                        raise RuntimeError("stopped before the ranks were summarised") from None
                    failed.append((a, b))
                    continue
                out[a:b] = got
                done += b - a
                if progress is not None:
                    progress(done / len(specs))
            if not failed:
                return out
            log.warning("profile_compare: a summarising process died; %d rank(s) %s", sum(b - a for a, b in failed),
                        "retried" if attempt == 0 else "given up")
            self._ex.shutdown(wait=True, cancel_futures=True)
            self._ex = ProcessPoolExecutor(max_workers=self.workers, mp_context=self._ctx)
            bounds = failed
        for a, b in bounds:
            out[a:b] = [("error", "the summarising process died (killed, or out of memory?)")] * (b - a)
        return out


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _run_local(specs, options, workers, progress) -> tuple[list, str]:
    from .parsepool import processes_enabled
    workers = workers or default_workers()
    if not processes_enabled():
        out = []
        for i, s in enumerate(specs):
            out += dask_exec.summarise_chunk([s], options)
            if progress is not None:
                progress((i + 1) / len(specs))
        return out, "in-process"
    pool = SummaryPool(min(workers, len(specs)))
    try:
        return pool.map(specs, options, progress), f"local:{pool.workers}"
    finally:
        pool.shutdown()


# ------------------------------------------------------------------------------------------ summaries

def _default_cache():
    from .. import cache
    return cache.ProfileCache() if cache.enabled() else None


def _options_key(options: dict) -> list:
    return sorted((str(k), repr(v)) for k, v in options.items())


def summarise_specs(specs: Sequence, *, options: dict | None = None, cache=DEFAULT,
                    scheduler: str | None = None, workers: int | None = None,
                    progress: Callable[[float], None] | None = None, stats: dict | None = None):
    """``(summaries, errors)`` for ``specs``: each a RankSummary, from the cache when it holds
    one for the worker's current files and this code, else computed (Dask when ``scheduler`` or
    ``$TB_COMPARE_DASK_SCHEDULER`` names one, else local processes) and stored.  ``errors``:
    ``{"worker", "rank", "path", "error"}`` per spec that failed (discovery's own error included)."""
    got = _summarise(specs, options=dict(options or {}), cache=_default_cache() if cache is DEFAULT else cache,
                     scheduler=scheduler, workers=workers, progress=progress,
                     stats={} if stats is None else stats)
    return _split(specs, got)


def _split(specs: Sequence, results: Sequence) -> tuple[list, list]:
    summaries, errors = [], []
    for s, r in zip(specs, results):
        if r[0] == "ok":
            summaries.append(r[1])
        else:
            errors.append({"worker": s.name, "rank": s.rank, "path": s.root, "error": r[1]})
    return summaries, errors


def _summarise(specs: Sequence, *, options: dict, cache, scheduler, workers, progress, stats: dict) -> list:
    """One ``("ok", RankSummary) | ("error", line)`` per spec, in order."""
    from ..model.rank_summary import RankSummary
    okey = _options_key(options)
    results: list = [None] * len(specs)
    todo = []
    t0 = time.perf_counter()
    for i, s in enumerate(specs):
        if s.error:
            results[i] = ("error", s.error)
            continue
        got = cache.get_record(["rank-summary", s.fingerprint, s.rank, okey], "summary",
                               list(s.fingerprint)) if cache is not None else None
        if got is not None:
            try:
                results[i] = ("ok", RankSummary.from_dict(got))
                continue
            except (KeyError, TypeError, ValueError):
                pass
        todo.append(i)
    stats["summary_cache_hits"] = sum(1 for r in results if r is not None and r[0] == "ok")
    stats["summary_cache_s"] = round(time.perf_counter() - t0, 3)
    t0 = time.perf_counter()
    address = dask_exec.scheduler_address(scheduler)
    if todo:
        sub = [specs[i] for i in todo]
        if address:
            got = dask_exec.map_summaries(address, sub, options, progress)
            stats["executor"] = f"dask:{address}"
        else:
            got, stats["executor"] = _run_local(sub, options, workers, progress)
        for i, r in zip(todo, got):
            results[i] = r
            s = specs[i]
            if cache is not None and r[0] == "ok":
                cache.put_record(["rank-summary", s.fingerprint, s.rank, okey], "summary",
                                 list(s.fingerprint), r[1].to_dict(), evict=False)
        if cache is not None:
            cache.evict()
    stats["computed"] = len(todo)
    stats["summarise_s"] = round(time.perf_counter() - t0, 3)
    return results


# ------------------------------------------------------------------------------------------ the run

def cluster_json(run, against=None, *, options: dict | None = None, cache=DEFAULT,
                 scheduler: str | None = None, workers: int | None = None,
                 progress: Callable[[float], None] | None = None, stats: dict | None = None,
                 step: int | None = None) -> dict:
    """The cluster JSON of ``run`` (a folder path, a RunInfo or a RunRef), and of it against
    ``against`` when given.  ``step``: analyse that step only (of both runs; ValueError when a
    run has no rank with it).  ``scheduler``: a Dask scheduler address (default
    ``$TB_COMPARE_DASK_SCHEDULER``; None and no variable = local cores).  ``workers``: local
    processes (default every core).  ``stats`` (a dict) receives timings and cache counts; they
    never enter the JSON."""
    from ..analyses.run.cluster import analyse_cluster
    options = dict(options or {})
    cache = _default_cache() if cache is DEFAULT else cache
    stats = {} if stats is None else stats
    t0 = time.perf_counter()
    refs = [_ref_for_key(run)] + ([_ref_for_key(against)] if against is not None else [])
    key = ["cluster-run", [(r.name, r.path) for r in refs], _options_key(options)]
    if step is not None:
        key.append(["step", int(step)])
    source = [_run_source(r) for r in refs]
    stats["fingerprint_s"] = round(time.perf_counter() - t0, 3)
    if cache is not None:
        hit = cache.get_record(key, "cluster", source)
        if hit is not None:
            stats["result_cache"] = "hit"
            stats["total_s"] = round(time.perf_counter() - t0, 3)
            return hit
    stats["result_cache"] = "miss"
    t1 = time.perf_counter()
    refs = [find_run(r.path) if not r.specs else r for r in refs]
    stats["discover_s"] = round(time.perf_counter() - t1, 3)
    stats["ranks"] = [len(r.specs) for r in refs]
    specs = [s for r in refs for s in r.specs]
    results = _summarise(specs, options=options, cache=cache, scheduler=scheduler, workers=workers,
                         progress=progress, stats=stats)
    t1 = time.perf_counter()
    per_run, err_of, at = [], [], 0
    for r in refs:
        got, errs = _split(r.specs, results[at:at + len(r.specs)])
        at += len(r.specs)
        if not got:
            first = errs[0]["error"] if errs else "no worker found"
            raise ValueError(f"{r.name}: no rank could be summarised ({len(r.specs)} worker(s)); "
                             f"first error: {first}")
        per_run.append(got if step is None else only_step(got, int(step), r.name))
        err_of.append(errs)
    result = analyse_cluster(refs[0].name, per_run[0],
                             against=(refs[1].name, per_run[1]) if len(refs) > 1 else None)
    out = result.to_dict()
    out["errors"] = [dict(e, run=refs[0].name) for e in err_of[0]]
    _note_errors(out, out["errors"])
    if len(refs) > 1 and isinstance(out.get("against"), dict):
        out["against"]["errors"] = [dict(e, run=refs[1].name) for e in err_of[1]]
        _note_errors(out["against"], out["against"]["errors"])
    out = json.loads(json.dumps(out))       # what a cache hit returns, to the last type (lists, str keys)
    stats["analyse_s"] = round(time.perf_counter() - t1, 3)
    if cache is not None:
        cache.put_record(key, "cluster", source, out)
    stats["total_s"] = round(time.perf_counter() - t0, 3)
    return out


def only_step(summaries: Sequence, step: int, run: str) -> list:
    """The summaries cut to the rows of ``step`` (the route's and the CLI's ``step``);
    BadParameter (a ValueError) naming the run's steps when no rank has it."""
    from ..model.rank_summary import RankSummary
    out = []
    for s in summaries:
        tables = {}
        for name in ("steps", "collectives", "links"):
            cols = s.columns(name)
            keep = cols["step"] == step
            tables[name] = {c: v[keep] for c, v in cols.items()}
        out.append(RankSummary(s.rank, s.worker, s.path, s.source, s.warnings, device=s.device,
                               format=s.format, **tables))
    if not any(len(t.columns("steps")["step"]) for t in out):
        have = sorted({int(x) for s in summaries for x in s.columns("steps")["step"]})
        from .errors import BadParameter
        raise BadParameter("step", f"{run}: no rank has step {step}; its steps: "
                           f"{', '.join(map(str, have[:20])) or 'none'}{' ...' if len(have) > 20 else ''}",
                           have)
    return out


def _ref_for_key(run) -> RunRef:
    """A RunRef for keying the run-level cache without walking discovery when a path is given."""
    known = _known_ref(run)
    return known if known is not None else RunRef("", _run_folder(run), [])


def _note_errors(d: dict, errors: list) -> None:
    ws = d.setdefault("warnings", [])
    for e in errors:
        ws.append(f"{e['path']}: rank {e['rank'] if e['rank'] is not None else '?'} ({e['worker']}) "
                  f"left out of the cluster analysis: {e['error']}")
