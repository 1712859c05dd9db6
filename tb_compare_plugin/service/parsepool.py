"""Parse workers in child processes, through the persistent cache.

Parsing a trace is CPU-bound Python; in TensorBoard's process it would hold the GIL while
request threads wait, and two sides could never use two cores.  So a bounded pool of child
processes (forkserver: modules imported once, each job a cheap fork; one job per child so its
memory returns to the system) parses a worker, writes the columnar profile into the cache and
exits; the parent maps the cached columns.  Progress travels through a tiny file; a child that
dies (killed, out of memory) is reported in plain words and retried once, and its half-written
cache entry is deleted.

Stopping: :func:`abort_all` (the CLI calls it from its SIGTERM / SIGINT handler; at interpreter
exit it runs before Python waits for the parsing threads, so a TensorBoard told to stop does not
wait for its parses) kills every pool's children at once; the waiting ``parse`` calls then delete
their half-written entries and raise, and ``shutdown`` removes the scratch folder.
:func:`stop_now` does all that at once for a caller about to ``os._exit``.  A Ctrl-C or a SIGTERM
reaches the whole process group, and the parent is the one that decides what to stop: the
parser processes never see SIGINT (the fork server starts with it blocked, and every child
inherits that from its first instruction), and a child that a SIGTERM kills while this process
is being stopped too is part of the stop, never a death to retry (:meth:`ParsePool._stopping`).
The scratch folder is ``$TB_COMPARE_SCRATCH_DIR`` when set, else /dev/shm, else the system temp
folder; it and the pools' semaphores are named after this process (:mod:`.leftovers`), and the
first pool of a process removes what killed processes left.

Without a usable cache the child leaves the profile in a hand-off folder (or, failing that,
sends it back through the pipe); with ``TB_COMPARE_PROCESSES=0`` everything runs in the calling
process.

Per-side work: ``parse(..., side_jobs=...)`` has the child run, after its parse and on its own core,
the per-side reductions the caller will read (``engines.side_work``: the overall split, the steps,
the API and kernel statistics, the op tree).  Small values come back pickled with the answer; a
value with ``to_arrays`` (the op tree, ~240 MB on a 1 GB trace) is written as .npy files in the
scratch folder and mapped back by the parent (:func:`_spill` / :func:`_unspill`); either way they
land in the profile's derived-data cache, where the engines look first.  Before that work the
child hands the heap its parse freed back to the system (``malloc_trim``), and it runs the jobs
one at a time, a spilled value leaving its memory before the next job starts.  The children of
parses under way share their small jobs (:mod:`.sharejobs`): the one that answers first is given
a second task, the others' last jobs, on its own mapped copy of their profile; the parse they
belong to waits for that task's answer (:meth:`ParsePool._shared`).

The children never write to the caller's stderr: the fork server, and so every parser process
forked from it, gets a private (already unlinked) file as its stderr.  Whatever a child prints
there -- Python warnings, the traceback multiprocessing prints when a worker dies of
KeyboardInterrupt or cannot start because its parent is exiting -- would otherwise land on the
CLI's stderr as a traceback, and only now and then (it depends on timing).  The tail of that file
goes into the error when a child dies; ``TB_COMPARE_DEBUG=1`` leaves the children's stderr alone.
"""
from __future__ import annotations

import atexit
import contextlib
import logging
import multiprocessing as mp
import os
import shutil
import signal
import tempfile
import threading
import time
import weakref
import concurrent.futures
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from ..loaders.errors import LoadError
from . import leftovers, sharejobs
from .handoff import handoff_cache
from ..envflags import switched_off
from ..heap import give_back
from ..timing import mark

log = logging.getLogger(__name__)
_PRELOAD = ["tb_compare_plugin.service.forkserver_preload"]
_PRELOAD_END = "tb_compare_plugin.service.forkserver_ready"


def _preload(warm_jit=False) -> list:
    """What the fork server imports once, in this order: the libraries, the cache and every
    format's loader (:mod:`.forkserver_preload`, with the garbage collector off); with
    ``warm_jit`` also numba and the compiled scanners (``loaders.jit_warm``); then
    :mod:`.forkserver_ready` freezes all that and turns the collector back on.  Nothing here is
    imported in this process: the fork server starts without waiting for the registry."""
    return _PRELOAD + (["tb_compare_plugin.loaders.jit_preload"] if warm_jit else []) + [_PRELOAD_END]


@contextlib.contextmanager
def _jit_parts_named(warm_jit):
    """While inside (the fork server's start), ``loaders.jit_warm.PRELOAD_ENV`` names the numba
    parts the fork server loads when ``warm_jit`` is a collection of them (``jit_warm.parts``):
    a forked fork server, and a fresh one, inherit it.  ``True``: unchanged (all of them).
    This process's own value is back afterwards."""
    if isinstance(warm_jit, bool) or not warm_jit:
        yield
        return
    from ..loaders.jit_warm import PRELOAD_ENV
    before = os.environ.get(PRELOAD_ENV)
    os.environ[PRELOAD_ENV] = ",".join(sorted(warm_jit))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(PRELOAD_ENV, None)
        else:
            os.environ[PRELOAD_ENV] = before


_CHILD_ERR: list = []              # the children's stderr file (one per process, opened on first use)


def _child_stderr_fd() -> int:
    if not _CHILD_ERR:
        _CHILD_ERR.append(tempfile.TemporaryFile(prefix="tbc-children-"))
    return _CHILD_ERR[0].fileno()


def children_stderr_size() -> int:
    try:
        return os.fstat(_CHILD_ERR[0].fileno()).st_size if _CHILD_ERR else 0
    except OSError:
        return 0


def children_stderr_tail(since: int = 0, limit: int = 300) -> str:
    """The last line the parser processes wrote to their stderr after offset ``since`` ("" if none)."""
    size = children_stderr_size()
    if size <= since:
        return ""
    try:
        start = max(since, size - 4096)
        tail = os.pread(_CHILD_ERR[0].fileno(), size - start, start).decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    return lines[-1][:limit] if lines else ""


def _start_forkserver_quietly(fork_here: bool = False) -> None:
    """Start the fork server (if it is not running) with the children's stderr file as its fd 2:
    every process it forks inherits that, so no child ever prints on the caller's stderr.
    ``fork_here`` (the CLI): as a fork of this process when :mod:`.forkserver_fork` can, after
    this process imported the libraries and loaders the fork server preloads first."""
    from multiprocessing import forkserver, resource_tracker
    from . import forkserver_fork
    leftovers.own_semaphore_names()
    if fork_here and forkserver_fork.possible():
        # the resource tracker (an interpreter of its own) first, so that its start-up runs on the
        # other core while this process imports what the fork server preloads
        with _children_stderr():
            resource_tracker.ensure_running()
        fork_here = forkserver_fork.import_shared(_PRELOAD[0])
        forkserver_fork.flush_std_streams()
    else:
        fork_here = False
    blocked = None
    try:
        with _children_stderr():
            # the resource tracker first: starting it unblocks SIGINT and SIGTERM on its way out
            resource_tracker.ensure_running()
            blocked = _block_stop_signals()
            if not (fork_here and forkserver_fork.start()):
                forkserver.ensure_running()
    finally:                # after fd 2 is restored, the signals: one that came meanwhile is handled now
        if blocked is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


@contextlib.contextmanager
def _children_stderr():
    """While inside, fd 2 is the children's stderr file (a process started meanwhile keeps it);
    unchanged with ``TB_COMPARE_DEBUG`` set."""
    saved = None if os.environ.get("TB_COMPARE_DEBUG") else os.dup(2)
    try:
        if saved is not None:
            os.dup2(_child_stderr_fd(), 2)
        yield
    finally:
        if saved is not None:
            os.dup2(saved, 2)
            os.close(saved)


def _block_stop_signals():
    """Block SIGINT in this thread (the previous mask; None where it cannot).  A process started
    meanwhile (the fork server) inherits the mask, through ``exec`` too, and so does every parser
    process it forks, from its first instruction: a Ctrl-C sent to the whole process group never
    kills a child behind the parent's back (the parent kills them when it decides to stop).
    SIGTERM stays deliverable: it is how a process pool ends its other workers when one dies, and
    how a user ends a stray process; a child it kills while this process is being stopped too is
    told apart by :meth:`ParsePool._stopping`."""
    try:
        return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    except (AttributeError, OSError, ValueError):
        return None


def processes_enabled() -> bool:
    return os.environ.get("TB_COMPARE_PROCESSES", "1").lower() not in ("0", "false", "no", "off")


_LIVE: "weakref.WeakSet[ParsePool]" = weakref.WeakSet()


def _copy(items) -> list:
    """``list(items)`` of a set another thread may change meanwhile (no lock: signal handlers)."""
    for _ in range(5):
        try:
            return list(items)
        except RuntimeError:          # "changed size during iteration"
            continue
    return []


def abort_all() -> None:
    """Stop every pool of this process now (safe in a signal handler: takes no lock)."""
    for pool in _copy(_LIVE):
        pool.abort()


def stop_now(wait: float = 0.3) -> None:
    """For a caller about to ``os._exit`` (its own cleanup did not finish in time): kill every
    pool's children, give them ``wait`` seconds to be gone, delete the half-written cache entries
    of the parses under way, this process's scratch folders and semaphores."""
    pools = _copy(_LIVE)
    for pool in pools:
        pool.abort()
    deadline = time.monotonic() + wait
    folders = set()
    for pool in pools:
        if isinstance(pool, ParsePool):
            pool._wait_killed(deadline)
            pool._discard_partials()
            folders.add(os.path.dirname(pool._progress_dir))
    leftovers.remove_own(folders, semaphores=True)


def stop_before_threads_join(fn) -> None:
    """Call ``fn`` when the interpreter exits, before it waits for the threads still running
    (``threading._register_atexit``, as ``concurrent.futures`` does; registered after the
    executors' own hooks, so it runs first: those wait for the work under way).  Without that,
    an exit (TensorBoard's SIGTERM handler calls ``sys.exit``) waits for every parse to end."""
    import concurrent.futures.process  # noqa: F401 - their exit hooks are registered on import
    import concurrent.futures.thread  # noqa: F401
    register = getattr(threading, "_register_atexit", None)
    try:
        if register is not None:
            register(fn)
        else:
            atexit.register(fn)
    except RuntimeError:              # already shutting down
        pass


_PROCESS_SETUP: list = []          # once per process: leftovers swept, exit hook registered


def _process_setup(scratch_parent: str | None) -> None:
    if _PROCESS_SETUP:
        return
    _PROCESS_SETUP.append(True)
    leftovers.sweep([scratch_parent] if scratch_parent else [])
    stop_before_threads_join(abort_all)
    atexit.register(leftovers.remove_own, [scratch_parent] if scratch_parent else [])


def _child_parse(fmt: str, root: str, fingerprint, cache_root: str | None, progress_path: str,
                 handoff_root: str | None = None, side_jobs: tuple = (), share: str | None = None):
    """Runs in the child: parse, store in the cache (or, without one, in the hand-off folder),
    return where it went; the profile itself is pickled back only when neither can be written.
    Then the per-side reductions ``side_jobs`` (``engines.side_work``) run here, on this core,
    and their values go back with the answer: ``(where, profile or None, values)``.  ``share``:
    the jobs are shared with the other parses' children (``sharejobs``): one done first may take
    some from the end of the list (and this one, done first, is given :func:`_child_help`)."""
    from .. import loaders
    from ..cache import ProfileCache

    last = [0.0]

    def progress(x: float) -> None:
        now = time.monotonic()
        if now - last[0] < 0.2 and x < 1.0:
            return
        last[0] = now
        try:
            with open(progress_path, "w") as f:
                f.write(f"{float(x):.4f}")
        except OSError:
            pass

    signal.signal(signal.SIGINT, signal.SIG_IGN)     # a Ctrl-C is the parent's to handle
    mark(f"child: start {os.path.basename(root)}")
    born = _born_columns(handoff_root, progress_path) if cache_root is None else None
    try:
        prof = loaders.load(fmt, root, progress=progress, options={"born": born} if born is not None else None)
        mark("child: parsed")
        where = "profile"
        if cache_root is not None:
            if ProfileCache(cache_root).put(fingerprint, prof):
                where = "cache"
        elif handoff_root is not None and handoff_cache(handoff_root).put(("handoff", progress_path), prof,
                                                                           born=born):
            where = "handoff"
    finally:
        if born is not None:
            born.close()
    mark("child: handed off")           # the hand-off put: the columns not born there written to tmpfs
    if where != "profile":              # another parser process may map it now and take jobs from the end
        sharejobs.handed_off(share, side_jobs, where, cache_root, fingerprint, ("handoff", progress_path))
    values = {}
    if side_jobs:
        if where == "handoff":          # the jobs read the hand-off's mapped copy: the built columns leave
            handed = handoff_cache(handoff_root).get(("handoff", progress_path))   # (~210 MB on a 1 GB
            if handed is not None:      # trace) and only the pages the jobs read come back
                prof = handed
            del handed
        if fmt not in _JOBS_IN_THE_PARSE_HEAP:
            _give_back_free_memory()    # the parse's garbage (~230 MB on a 1 GB trace) before more work
        from ..engines import side_work
        from ..model.derived import DERIVED
        mark("child: jobs start")
        for i, job in enumerate(side_jobs):     # one at a time: a big value leaves for its files before the next
            if not sharejobs.child_takes(share, side_jobs, i):
                mark(f"child: job {job[0]} taken")  # by the other side's parser process
                continue
            got = _spill(side_work.compute(prof, (job,)), handoff_root and f"{progress_path}.v{len(values)}")
            spilled = [key for key, value in got.items() if isinstance(value, _Spilled)]
            for key in spilled:
                DERIVED.forget(prof, key)
            values.update(got)
            del got
            if spilled:
                give_back()             # the spilled value's memory (~200 MB for an op tree) before the next job
            sharejobs.ran(job)
            mark(f"child: job {job[0]}")
    return (where, prof if where == "profile" else None, values)


def _child_help(share: str, handoff_root: str | None) -> dict:
    """The same child's second task, after its answer: the other parses' remaining jobs, from
    the end of their lists (``sharejobs.help_others``)."""
    mark("child: helping")
    return sharejobs.help_others(share, handoff_root)


_JOBS_IN_THE_PARSE_HEAP = frozenset({"ascend-text"})
"""Formats whose parser process runs its side jobs in the heap the parse left (no collection and
no trim first): an Ascend text export's child peaks in the parse, and its jobs then reuse that
memory instead of faulting in fresh pages (npu_500mb: ~12-17 k page faults a side instead of
~25 k, ~0.05 s of CPU less a side; the summed peak unchanged)."""


def _give_back_free_memory() -> None:
    """Return the heap the parse freed to the system (glibc keeps it otherwise: the child's RSS
    would carry it through the per-side work that follows)."""
    import gc
    gc.collect()
    give_back()


class _Spilled:
    """A per-side value too big for the pipe (an op tree: ~240 MB on a 1 GB trace), left by the
    child as .npy files in the scratch folder: its class, that class's ``to_arrays`` meta, the
    folder.  The parent maps the files back (:func:`_unspill`), no copy on either side."""
    __slots__ = ("module", "name", "meta", "folder", "arrays", "constants", "sparse")

    def __init__(self, module, name, meta, folder, arrays, constants=None, sparse=None) -> None:
        self.module, self.name, self.meta, self.folder, self.arrays = module, name, meta, folder, arrays
        self.constants = constants or {}    # array name -> (dtype, rows, value's bytes): no file
        self.sparse = sparse or {}          # array name -> (dtype, rows, rows not zero, their values)

    def __getstate__(self):
        return (self.module, self.name, self.meta, self.folder, self.arrays, self.constants, self.sparse)

    def __setstate__(self, state) -> None:
        self.module, self.name, self.meta, self.folder, self.arrays, self.constants, self.sparse = state


def _spill(values: dict, base: str | None) -> dict:
    """In the child: each value with a ``to_arrays`` method written as .npy files under
    ``base``.<i> (left out when there is no scratch folder or writing fails: the parent builds
    it itself)."""
    import numpy as np
    from ..constcols import constant_of, sparse_of
    out = {}
    for i, (key, value) in enumerate(values.items()):
        if not hasattr(value, "to_arrays"):
            out[key] = value
            continue
        if not base:
            continue
        folder = f"{base}.{i}"
        consts, sparse = {}, {}
        try:
            meta, arrays = value.to_arrays()
            os.mkdir(folder)
            for name, arr in arrays.items():
                arr = np.ascontiguousarray(arr)
                one = constant_of(arr)          # one value in every row: that value, no file
                if one is not None:
                    consts[name] = (arr.dtype.str, len(arr), one)
                    continue
                few = sparse_of(arr)            # nearly all zero: the rest, pickled (~0.1 MB for
                if few is not None:             # a 1 GB trace's comm_ns, not 15 MB)
                    sparse[name] = (arr.dtype.str, len(arr)) + few
                    continue
                np.save(os.path.join(folder, name + ".npy"), arr, allow_pickle=False)
        except (OSError, ValueError):
            shutil.rmtree(folder, ignore_errors=True)
            continue
        out[key] = _Spilled(type(value).__module__, type(value).__qualname__, meta, folder, list(arrays), consts,
                            sparse)
    return out


def _unspill(values: dict, profile) -> dict:
    """In the parent: the spilled values mapped back onto ``profile`` (``from_arrays``) and
    their files deleted (the mappings keep the data); one that cannot be read is left out."""
    import importlib
    out = {}
    for key, value in values.items():
        if not isinstance(value, _Spilled):
            out[key] = value
            continue
        try:
            cls = getattr(importlib.import_module(value.module), value.name)
            arrays = {n: _unspilled_array(value, n) for n in value.arrays}
            out[key] = cls.from_arrays(profile, value.meta, arrays)
        except (OSError, ValueError, ImportError, AttributeError, KeyError) as e:
            log.debug("per-side value %s not read back: %s", key, e)
        finally:
            shutil.rmtree(value.folder, ignore_errors=True)
    return out


def _unspilled_array(value: _Spilled, name: str):
    """Array ``name`` of a spilled value: mapped from its file, or made from what the child
    recorded instead (one value; the rows not zero)."""
    from ..cache import _load_npy
    from ..constcols import constant_column, sparse_column
    if name in value.constants:
        dtype, n, one = value.constants[name]
        return constant_column(one, dtype, n)
    if name in value.sparse:
        dtype, n, rows, values = value.sparse[name]
        return sparse_column(rows, values, dtype, n)
    return _load_npy(os.path.join(value.folder, name + ".npy"))


def _scratch_dir() -> str:
    """A private folder for progress files and hand-offs: in memory (/dev/shm) when possible,
    where writing the columns and mapping them back costs less than pickling them through a pipe.
    Named after this process (``tbc-pool-<pid>-…``); the first one of a process removes the
    folders and semaphores of processes that were killed (:func:`.leftovers.sweep`)."""
    where = os.environ.get("TB_COMPARE_SCRATCH_DIR")
    _process_setup(where or tempfile.gettempdir())
    prefix = leftovers.pool_prefix()
    if where:
        return tempfile.mkdtemp(prefix=prefix, dir=where)
    try:
        return tempfile.mkdtemp(prefix=prefix, dir=leftovers.SHM)
    except OSError:
        return tempfile.mkdtemp(prefix=prefix)


class _OneJobExecutor(ProcessPoolExecutor):
    """A process pool for one job in one child (``max_tasks_per_child=1``) that starts no child to
    replace that one when it exits after its job: CPython's pool forks a replacement (a ~54 MB
    process, started while the parent maps the answer, then stopped by ``shutdown``) for work
    that never comes."""
    _spawned = False

    def _adjust_process_count(self):
        if not self._spawned:
            self._spawned = True
            super()._adjust_process_count()


def _born_columns(handoff_root: str | None, progress_path: str):
    """In the child: the folder (beside its hand-off entry, named so that discarding the entry's
    half-written ones removes it) the parse writes the model's columns into (:mod:`..borncols`);
    None without a hand-off, or when it cannot be made."""
    if handoff_root is None or switched_off("TB_COMPARE_BORN_COLUMNS"):
        return None
    from ..borncols import BornColumns
    from ..cache import key_of
    handoff = handoff_cache(handoff_root)
    try:
        os.makedirs(handoff.root, exist_ok=True)
        return BornColumns(tempfile.mkdtemp(prefix=f".{key_of(('handoff', progress_path))}.born", dir=handoff.root))
    except OSError:
        return None




class ParsePool:
    """At most ``workers`` parser processes at once.  Each parse has an executor (and so a child)
    of its own: a child that dies breaks only its own parse, never the other side's, which a
    shared ``ProcessPoolExecutor`` would report broken too (and blame for the other's death)."""

    def __init__(self, workers: int = 2, cache=None, warm_jit=False, fork_here: bool = False) -> None:
        self.workers = max(1, int(workers))
        self.cache = cache
        self.warm_jit = warm_jit           # the fork server loads the numba scanners (big inputs):
                                           # all (True) or those named (``loaders.jit_warm.parts``)
        self.fork_here = fork_here         # the fork server is a fork of this process (the CLI)
        self._ctx = None
        self._slots = threading.BoundedSemaphore(self.workers)
        self._live: set[ProcessPoolExecutor] = set()
        self._lock = threading.Lock()
        self._progress_dir = _scratch_dir()
        self._aborted = False
        self._killed: list[int] = []
        self._inflight: dict = {}          # progress file -> fingerprint, of the parses under way
        self._retiring: set[threading.Thread] = set()   # children that answered, being waited for
        self._share_over: dict = {}        # share of a parse attempt (sharejobs) -> set once it answered
        self._lent: dict = {}              # share -> values other parser processes computed for it
        atexit.register(shutil.rmtree, self._progress_dir, True)
        _LIVE.add(self)

    def _context(self):
        with self._lock:
            if self._ctx is None:
                try:
                    ctx = mp.get_context("forkserver")
                    ctx.set_forkserver_preload(_preload(self.warm_jit))
                    with _jit_parts_named(self.warm_jit):
                        _start_forkserver_quietly(self.fork_here)
                    mark("pool: fork server started")
                except (ValueError, OSError):
                    ctx = mp.get_context("spawn")
                self._ctx = ctx
            return self._ctx

    def _executor(self, tasks: int = 1) -> ProcessPoolExecutor:
        """A one-child executor for one parse attempt (registered, so ``abort`` can reach it);
        ``tasks`` 2: the parse, then perhaps :func:`_child_help` (the child exits at shutdown)."""
        leftovers.own_semaphore_names()
        ex = _OneJobExecutor(max_workers=1, mp_context=self._context(), max_tasks_per_child=tasks)
        with self._lock:
            self._live.add(ex)
        return ex

    def _retire(self, ex: ProcessPoolExecutor, fut=None) -> None:
        """Done with ``ex``: its child (killed first if its parse is still under way: nobody
        waits for it any more) is gone when this returns.  ``shutdown(wait=True)``: with
        ``wait=False`` CPython 3.11's manager thread can read the ``_processes`` that shutdown
        has already set to None and die printing a traceback."""
        with self._lock:
            self._live.discard(ex)
        if fut is not None and not fut.done():
            _kill_children(ex)
        ex.shutdown(wait=True, cancel_futures=True)

    def _retire_later(self, ex: ProcessPoolExecutor, fut, helping=None) -> None:
        """``_retire`` on a thread of its own for a child that has answered (one job per child:
        it is exiting), then its slot is free: mapping its answer here overlaps its exit, which
        frees its ~0.8 GB (~0.1 s quiet, most of a second on a busy machine).  ``shutdown``
        waits for these.  ``helping``: the child's second task (:meth:`_help_later`), waited
        for first."""
        def run():
            try:
                if helping is not None:
                    concurrent.futures.wait([helping])
                self._retire(ex, fut)
            finally:
                self._slots.release()
                self._retiring.discard(threading.current_thread())
        t = threading.Thread(target=run, name="tbc-retire", daemon=True)
        self._retiring.add(t)
        t.start()

    def start(self) -> None:
        """Start the fork server now, so its imports (~0.5 s) overlap the caller's own work
        instead of delaying the first parse.  Optional; ``parse`` starts it anyway."""
        self._context()

    def abort(self) -> None:
        """Kill the parser processes now; every ``parse`` under way raises, no new one starts.
        Takes no lock (it runs in signal handlers, possibly while the lock is held)."""
        self._aborted = True
        for ex in _copy(self._live):
            self._killed += _kill_children(ex)

    def _wait_killed(self, deadline: float) -> None:
        """Until ``deadline``: wait for the children ``abort`` killed to be gone."""
        for pid in _copy(self._killed):
            while time.monotonic() < deadline:
                try:
                    os.kill(pid, 0)
                except OSError:
                    break
                if _is_zombie(pid):
                    break
                time.sleep(0.01)

    def _discard_partials(self) -> None:
        """Delete what the children of the parses under way left half-written in the cache."""
        if self.cache is not None:
            for fingerprint in _copy(self._inflight.values()):
                self.cache.discard(fingerprint, partial_only=True)

    def _stopped(self, root: str, fingerprint) -> LoadError:
        """After ``abort``: wait (briefly) until the killed children are gone, then delete the
        half-written cache entry of ``fingerprint``."""
        self._wait_killed(time.monotonic() + 5.0)
        if self.cache is not None:
            self.cache.discard(fingerprint, partial_only=True)
        return LoadError(root, "stopped before this profile was read")


    def parse(self, fmt: str, root: str, fingerprint, progress=None, retries: int = 1, side_jobs=()):
        """Parse in a child and return the Profile (blocking; call it from a worker thread).
        ``side_jobs``: per-side reductions (``engines.side_work``) the child computes after the
        parse; their values come back in the profile's derived-data cache."""
        prof, values = self._parse(fmt, root, fingerprint, progress, retries, tuple(side_jobs))
        if values:
            from ..engines import side_work
            side_work.seed(prof, _unspill(values, prof))
        return prof

    def _parse(self, fmt: str, root: str, fingerprint, progress, retries: int, side_jobs: tuple):
        cache_root = os.path.dirname(self.cache.root) if self.cache is not None else None
        if self._aborted:
            raise LoadError(root, "stopped before this profile was read")
        fd, ppath = tempfile.mkstemp(dir=self._progress_dir)
        os.close(fd)
        self._inflight[ppath] = fingerprint
        try:
            for attempt in range(retries + 1):
                while not self._slots.acquire(timeout=0.25):
                    if self._aborted:
                        raise LoadError(root, "stopped before this profile was read")
                ex = fut = share = kind = None
                try:
                    err_at = children_stderr_size()
                    share = self._open_share(ppath, attempt, side_jobs)
                    ex = self._executor(2 if share else 1)
                    fut = ex.submit(_child_parse, fmt, root, fingerprint, cache_root, ppath, self._progress_dir,
                                    side_jobs, share)
                    kind, prof, values = self._wait(fut, root, fingerprint, ppath, progress, attempt < retries,
                                                    err_at)
                    mark(f"pool: child answered ({kind})")
                    if kind is not None:
                        values = self._shared(share, side_jobs, values, root, fingerprint)
                finally:
                    helping = self._help_later(ex, fut, share, kind)    # the others' jobs, if any are left
                    self._close_share(share, keep=helping is not None)
                    if ex is not None and fut is not None and fut.done() and not self._aborted:
                        self._retire_later(ex, fut, helping)    # it answered: it is on its way out
                    else:
                        try:
                            if ex is not None:
                                self._retire(ex, fut)
                        finally:
                            self._slots.release()
                    if self._aborted and self.cache is not None:   # a child started as abort ran
                        self.cache.discard(fingerprint, partial_only=True)
                if kind is None:
                    continue
                if kind == "cache":
                    got = self.cache.get(fingerprint)
                    if got is not None:
                        return got, values
                    # removed from outside, or damaged on the way (get warned): once more, handed
                    # back without the cache (the profile, not the cache, is the answer)
                    if cache_root is None or attempt >= retries:
                        raise LoadError(root, "the parsed profile vanished from the cache")
                    cache_root = None
                    continue
                if kind == "handoff":
                    return self._take_handoff(root, ppath), values
                return prof, values
        finally:
            self._inflight.pop(ppath, None)
            self._drop_handoff(ppath)
            try:
                os.unlink(ppath)
            except OSError:
                pass

    def _wait(self, fut, root: str, fingerprint, ppath: str, progress, may_retry: bool, err_at: int):
        """The child's answer ``(kind, profile, values)``, reporting progress meanwhile;
        ``(None, None, None)`` when the child died and the parse may be retried."""
        while True:
            try:
                if self._aborted:
                    raise self._stopped(root, fingerprint)
                return fut.result(timeout=0.25)
            except TimeoutError:
                if progress is not None:
                    try:
                        with open(ppath) as f:
                            progress(float(f.read() or 0))
                    except (OSError, ValueError):
                        pass
            except BrokenProcessPool:
                if self._stopping():
                    raise self._stopped(root, fingerprint) from None
                if self.cache is not None:        # what the dead child left half-written
                    self.cache.discard(fingerprint, partial_only=True)
                if may_retry:
                    log.warning("profile_compare: parser process for %s died; retrying", root)
                    return None, None, None
                last = children_stderr_tail(err_at)
                raise LoadError(root, "the parser process died (killed, or out of memory?) "
                                      "while reading this profile" + (f" (its last words: {last})"
                                                                      if last else "")) from None

    def _stopping(self, grace: float = 0.5) -> bool:
        """After a child died: whether this process is being stopped.  A SIGTERM sent to the
        whole process group can kill the child before this process's own handler has run (it
        runs in the main thread, when that thread next gets the interpreter), so a death that
        is not yet explained waits up to ``grace`` seconds for ``abort``, or for the main thread
        to end (TensorBoard's SIGTERM handler exits it), before it counts as a real one."""
        deadline = time.monotonic() + grace
        while not (self._aborted or not threading.main_thread().is_alive()):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True

    def _open_share(self, ppath: str, attempt: int, side_jobs: tuple):
        """This parse attempt's share (``sharejobs``), or None: sharing off, or no job another
        parser process could take."""
        if not sharejobs.enabled() or not any(job[0] in sharejobs.TAKEN for job in side_jobs):
            return None
        share = sharejobs.share_name(self._progress_dir, ppath, attempt)
        with self._lock:
            self._share_over[share] = threading.Event()
            self._lent[share] = {}
        return share

    def _shared(self, share, side_jobs: tuple, values: dict, root: str, fingerprint) -> dict:
        """A child's answer ``values``, and, if some of its side's jobs are missing (taken by
        another parse's child: ``sharejobs``), what that child computed for them, once it is
        done (each helper announced on ``share`` is waited for)."""
        if share is None or values is None:
            return values
        from ..engines import side_work
        if all(side_work.key(*job) in values for job in side_jobs if job[0] in sharejobs.TAKEN):
            return values
        for helper in sharejobs.helpers_of(share):
            while not self._share_over.get(helper, _DONE).wait(0.05):
                if self._aborted:
                    raise self._stopped(root, fingerprint)
        with self._lock:
            values.update(self._lent.pop(share, {}))
        return values

    def _help_later(self, ex, fut, share, kind):
        """Once a child has answered: when another parse's jobs are still under way, the same
        child is given :func:`_child_help` (its answer goes to :meth:`_helped`); that future,
        or None."""
        if share is None or kind is None or self._aborted or ex is None or fut is None or not fut.done():
            return None
        if not sharejobs.handed_off_shares(share):
            return None
        try:
            helping = ex.submit(_child_help, share, self._progress_dir)
        except (RuntimeError, BrokenProcessPool):
            return None
        helping.add_done_callback(lambda done: self._helped(share, done))
        mark("pool: help asked")
        return helping

    def _helped(self, share: str, done) -> None:
        """A child's help is over: its values delivered to the parses they belong to, and the
        parses waiting for it go on (also when it failed, died or was stopped: nothing given)."""
        got = {}
        try:
            if not done.cancelled() and done.exception() is None:
                got = done.result() or {}
        except BaseException:  # noqa: BLE001 - a helper's failure costs only time
            got = {}
        _, lent = sharejobs.lent_values(got)
        with self._lock:
            for other, values in lent.items():
                if other in self._lent:
                    self._lent[other].update(values)
            over = self._share_over.pop(share, None)
            self._lent.pop(share, None)
        if over is not None:
            over.set()

    def _close_share(self, share, keep: bool = False) -> None:
        """The attempt is over (answered, died or stopped): its files go, and the parses waiting
        for it go on -- unless ``keep``: its child helps others (:meth:`_helped` ends that)."""
        if share is None:
            return
        sharejobs.remove(share)
        if keep:
            return
        with self._lock:
            over = self._share_over.pop(share, None)
            self._lent.pop(share, None)
        if over is not None:
            over.set()

    def _take_handoff(self, root: str, ppath: str):
        """Map the profile a child left in the hand-off folder (its files are deleted right
        after, by ``parse``; the mappings keep the data until the profile is dropped)."""
        got = handoff_cache(self._progress_dir).get(("handoff", ppath))
        if got is None:
            raise LoadError(root, "the parser process's result could not be read back")
        return got

    def _drop_handoff(self, ppath: str) -> None:
        """Delete this parse's hand-off entry, and the half-written one of a child that died."""
        handoff_cache(self._progress_dir).discard(("handoff", ppath))

    def release_fork_server(self) -> threading.Thread:
        """For a process that will parse nothing more (the CLI once both sides are in): on a
        thread, wait for the children that answered to be gone, then stop the fork server now
        (:func:`_stop_fork_server`) rather than at this process's exit: the ~170 MB it holds are
        not carried through the comparison's tail (where the workbook's forked writer adds its
        own).  Nothing is stopped while a parse is under way; a later parse starts a new one."""
        def run():
            deadline = time.monotonic() + 10.0
            for t in _copy(self._retiring):
                t.join(max(0.0, deadline - time.monotonic()))
            if not (self._live or self._retiring or self._aborted):
                _stop_fork_server()
        t = threading.Thread(target=run, name="tbc-forkserver-stop", daemon=True)
        t.start()
        return t

    def shutdown(self) -> None:
        """No more parses: the children that answered are waited for (they are exiting), the
        parses under way are stopped (their children killed)."""
        deadline = time.monotonic() + 10.0
        for t in _copy(self._retiring):
            t.join(max(0.0, deadline - time.monotonic()))
        if self._live:
            self.abort()
        shutil.rmtree(self._progress_dir, ignore_errors=True)
        _LIVE.discard(self)


def _stop_fork_server() -> None:
    """Stop multiprocessing's fork server, if it runs, as its own ``_stop`` does (its "alive" pipe
    closed: it exits; reaped here), without holding its lock while it exits."""
    from multiprocessing import forkserver, util
    fs = getattr(forkserver, "_forkserver", None)
    lock = getattr(fs, "_lock", None)
    if lock is None or not hasattr(fs, "_forkserver_alive_fd"):
        return
    with lock:
        pid, fd, address = fs._forkserver_pid, fs._forkserver_alive_fd, fs._forkserver_address
        if pid is None or fd is None:
            return
        fs._forkserver_pid = fs._forkserver_alive_fd = fs._forkserver_address = None
        os.close(fd)
    try:
        if address and not util.is_abstract_socket_namespace(address):
            os.unlink(address)
    except OSError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    mark("pool: fork server stopped")


_DONE = threading.Event()
_DONE.set()


def _kill_children(ex: ProcessPoolExecutor) -> list[int]:
    """SIGKILL the executor's children; their pids."""
    killed = []
    for pid in list(getattr(ex, "_processes", None) or {}):
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except (OSError, TypeError):
            pass
    return killed


def _is_zombie(pid: int) -> bool:
    """A killed child its parent (the fork server) has not reaped yet: it writes nothing more."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False
