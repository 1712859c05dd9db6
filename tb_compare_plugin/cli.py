"""`tb-compare BASELINE TARGET`: compare two profiles from the command line
(`tb-compare cluster RUN ...`: the ranks of a run, :mod:`.cli_cluster`).

Prints the overview table, optionally writes the whole result as JSON (`--json`), and
exits 0 on success, non-zero with one line on stderr on any failure (no traceback
unless --debug), so CI can rely on it.  SIGTERM or SIGINT, at any moment, stops it within two
seconds with exit 128 + the signal's number and one line, leaving no parser process, scratch
folder, semaphore or half-written cache entry (docs/files.md).
"""
from __future__ import annotations

import os
import signal
import sys


def _stopped_early(signum, frame) -> None:
    """SIGINT / SIGTERM before ``main`` took over (while Python imports what it needs): nothing
    is started yet, so there is nothing to clean up."""
    os.write(2, f"tb-compare: interrupted ({signal.Signals(signum).name})\n".encode())
    os._exit(128 + signum)


if __name__ == "__main__" or os.path.basename(sys.argv[0] or "") == "tb-compare":  # the program itself
    for _sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(_sig, _stopped_early)
    # numpy's OpenBLAS starts a thread per core when numpy is imported and waits for them (~0.06 s
    # of wall on the way to the first parse on a 2-core machine); nothing here calls BLAS, and the
    # parser processes fill the cores.  Before numpy's import; a value the user set is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from .timing import mark  # noqa: E402
mark("cli: start")
import argparse  # noqa: E402 - after the early handlers: a Ctrl-C while importing is a clean stop
import json  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

from .cli_common import EXIT_FAIL, EXIT_OK, EXIT_USAGE, CliError, Progress  # noqa: F401 - shared with cli_cluster
from .cli_common import write_output


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tb-compare",
        description="Compare a baseline and a target performance profile (PyTorch Profiler GPU traces, "
                    "Ascend PyTorch Profiler text/db exports, MindSpore) and show where the target "
                    "loses time and memory.",
        epilog="tb-compare cluster RUN [--against RUN]: every rank of a run (tb-compare cluster -h). "
               "A profile folder named 'cluster' is compared here as ./cluster.")
    p.add_argument("baseline", help="baseline profile: a trace .json/.json.gz, an *_ascend_pt/*_ascend_ms "
                                    "folder, an ASCEND_PROFILER_OUTPUT folder, a profiler .db, or a run "
                                    "folder holding several workers (then pick one with --base-rank)")
    p.add_argument("target", help="target profile (same forms as BASELINE)")
    p.add_argument("--base-rank", type=int, help="rank to use when BASELINE holds several workers")
    p.add_argument("--target-rank", type=int, help="rank to use when TARGET holds several workers")
    p.add_argument("--base-step", type=int, help="compare only this step of the baseline")
    p.add_argument("--target-step", type=int, help="compare only this step of the target")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--per-step", dest="per_step", action="store_const", const=True, default=None,
                   help="divide each side by its number of steps (automatic when the step counts differ)")
    g.add_argument("--raw", dest="per_step", action="store_const", const=False,
                   help="never divide by the step count (the reference's figures)")
    p.add_argument("--reference-compat", action="store_true",
                   help="overall figures as msprof-analyze compare computes them, its known errors included "
                        "(docs/deviations.md); raw figures unless --per-step is given")
    p.add_argument("--json", metavar="FILE", help="write the whole result as JSON to FILE ('-' for stdout)")
    p.add_argument("--xlsx", metavar="FILE", help="write the comparison workbook (the reference's sheets, "
                                                  "then ours) to FILE")
    e = p.add_argument_group("workbook contents (like msprof-analyze compare; none given = all)")
    for name, what in (("profiling", "overall time split (OverallMetrics)"),
                       ("operator", "operator / module comparison"), ("memory", "memory comparison"),
                       ("communication", "communication comparison"), ("api", "API comparison"),
                       ("kernel", "kernel comparison"),
                       ("steps", "step comparison (StepCompare, Efficiency; not in msprof-analyze)")):
        e.add_argument(f"--enable-{name}-compare", action="store_true", help=f"include the {what}")
    e.add_argument("--disable-details", action="store_true",
                   help="no detail sheets (OperatorCompare, ModuleCompare, MemoryCompare) and no op matching")
    e.add_argument("--disable-module", action="store_true",
                   help="operator sheets even when both sides have nn.Module data")
    m = p.add_argument_group("operator matching")
    m.add_argument("--op-name-map", metavar="MAP",
                   help="rename ops before matching: a JSON/YAML file or an inline dict, e.g. "
                        "\"{'aten::npu_linear': 'aten::linear'}\" (applies to module names too)")
    m.add_argument("--use-input-shape", action="store_true", help="match ops by name and input shapes")
    m.add_argument("--max-kernel-num", type=int, metavar="N",
                   help="compare the children of matched ops that launch more than N kernels (N > 3)")
    p.add_argument("--steps", action="store_true",
                   help="also print the step comparison: per step-level metric both sides' mean ± stdev "
                        "over the steps, the difference and whether it is within step-to-step noise")
    p.add_argument("--wide", action="store_true", help="wider table with counts and group names")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--max-expanded-mb", type=float, metavar="MB",
                   help="refuse a trace that is, or decompresses to, more than MB megabytes "
                        "(default: $TB_COMPARE_MAX_EXPANDED_MB, else 8192)")
    p.add_argument("--no-cache", action="store_true",
                   help="neither read nor write the parsed-profile cache (~/.cache/tb-compare)")
    p.add_argument("--quiet", "-q", action="store_true", help="do not print the overview table")
    p.add_argument("--debug", action="store_true", help="show full tracebacks on failure")
    return p


# -- resolving paths to workers -----------------------------------------------------------
def resolve(path: str, rank: int | None, role: str):
    from .discovery import classify_path
    try:
        workers = classify_path(path)
    except FileNotFoundError:
        raise CliError(f"{role} {path}: no such file or folder")
    except (ValueError, OSError) as e:
        raise CliError(f"{role} {e}")
    if not workers:
        from .formats.registry import extra_hints
        raise CliError(f"{role} {path}: no profile found there (expected a PyTorch Profiler trace, an "
                       "Ascend *_ascend_pt / *_ascend_ms folder, ASCEND_PROFILER_OUTPUT, or a profiler "
                       f".db{extra_hints()})")
    if len(workers) > 1 and any(w.error for w in workers) and not all(w.error for w in workers):
        for w in workers:               # a file that cannot be read is its own problem: say so, go on
            if w.error:
                print(f"warning: {' '.join(w.error.split())} (skipped)", file=sys.stderr)
        workers = [w for w in workers if not w.error]
    if rank is not None:
        chosen = [w for w in workers if w.rank == rank]
        if not chosen:
            have = ", ".join(f"{w.name} (rank {w.rank})" for w in workers)
            raise CliError(f"{role} {path}: no worker with rank {rank}; found {have}")
        workers = chosen
    if len(workers) > 1:
        have = ", ".join(f"{w.name} (rank {w.rank})" for w in workers)
        flag = "--base-rank" if role == "baseline" else "--target-rank"
        raise CliError(f"{role} {path} holds {len(workers)} workers ({have}): pick one with {flag}")
    w = workers[0]
    if w.run in (".", ""):              # PATH is the run folder itself: it names the run
        import dataclasses
        w = dataclasses.replace(w, run=os.path.basename(os.path.abspath(path).rstrip(os.sep)) or w.run)
    return w


def make_options(args):
    from .comparison import Options
    from .name_map_input import parse_name_map
    if args.max_kernel_num is not None and args.max_kernel_num <= 3:
        raise CliError("--max-kernel-num must be greater than 3")
    try:
        name_map = parse_name_map(args.op_name_map) if args.op_name_map else ()
    except Exception as e:  # noqa: BLE001 - YAML/JSON parser errors of any kind
        raise CliError(f"--op-name-map: not a valid name map ({' '.join(str(e).split())[:200]})")
    return Options(base_step=args.base_step, target_step=args.target_step, per_step=args.per_step,
                   op_name_map=name_map, use_input_shape=args.use_input_shape,
                   max_kernel_num=args.max_kernel_num,
                   disable_details=args.disable_details, disable_module=args.disable_module,
                   reference_compat=args.reference_compat)


def selected_sheets(args):
    chosen = {eng for flag, eng in (("profiling", "overall"), ("operator", "operator"), ("memory", "memory"),
                                    ("communication", "communication"), ("api", "api"), ("kernel", "kernel"),
                                    ("steps", "steps"))
              if getattr(args, f"enable_{flag}_compare")}
    return chosen or None


def start_backends(no_cache: bool = False, paths=()):
    """(cache, pool) for this run; the parser processes' fork server starts at once, so its
    imports overlap the resolving of both paths.  When ``paths`` hold a trace the numba scanners
    will read, the fork server loads those scanners before it forks the parsers
    (``loaders.jit_warm.parts``).
    Run as the program, the fork server is a fork of this process after the libraries both need
    are imported here (``service.forkserver_fork``; ``TB_COMPARE_FORKED_SERVER=0``: a fresh
    interpreter, as in-process runs and the plugin always start it)."""
    from .loaders.jit_warm import parts
    from .service.loading import make_backends
    if no_cache:
        os.environ["TB_COMPARE_CACHE"] = "0"
    fork_here = _STATE["program"] and os.environ.get("TB_COMPARE_FORKED_SERVER", "1").strip().lower() not in (
        "0", "false", "no", "off")
    return make_backends(workers=2, start=True, warm_jit=parts(paths), fork_here=fork_here)


def load_sides(base_spec, target_spec, progress: Progress, backends, warm=None, side_jobs=((), ())):
    """Both sides, parsed in two processes at once (``service.loading.load_pair``), with the
    progress bar; on failure the parser processes are stopped, else the caller shuts the pool
    down once it has used the profiles (the children that answered exit meanwhile)."""
    from .service.loading import load_pair
    pool = backends[1]
    progress.start(f"loading {base_spec.name} and {target_spec.name}")
    try:
        return load_pair(base_spec, target_spec, progress, backends, warm, side_jobs)
    except BaseException:
        if pool is not None:
            pool.shutdown()
        raise
    finally:
        progress.done()


def _side_jobs(args, opts) -> tuple:
    """(baseline's, target's) per-side reductions (``engines.side_work``) this run's answers
    read, for each side's parser process to compute right after its parse (or, for a side read
    from the cache, a thread here as soon as it is in): the overview's time split always; the
    module forests when the module sheets may be written and the allocations' places in the op
    tree when the memory sheets may be (first: they build the op tree); the op
    tree when the JSON's operator table or the operator / module / memory sheets need it; the
    steps when the JSON, the step table or the step sheets need them; the API and kernel
    statistics when the workbook has those sheets."""
    sheets = selected_sheets(args)
    out = []
    for step in (opts.base_step, opts.target_step):
        jobs = []                       # the tree early: it leaves the child's memory before the rest
        if args.xlsx and (sheets is None or "operator" in sheets) and not opts.disable_module:
            jobs.append(("modules", (step,)))       # (builds the tree the next job sends on)
        if args.xlsx and (sheets is None or "memory" in sheets):
            jobs.append(("placement", ()))          # (so does this one)
        if args.json or (args.xlsx and (sheets is None or sheets & {"operator", "memory"})):
            jobs.append(("tree", ()))
        jobs.append(("breakdown", (step, bool(opts.reference_compat))))
        if args.json or args.steps or (args.xlsx and (sheets is None or "steps" in sheets)):
            jobs.append(("steps", ()))
        if args.xlsx and (sheets is None or "api" in sheets):
            jobs.append(("api", (step,)))
        if args.xlsx and (sheets is None or "kernel" in sheets):
            jobs.append(("kernels", (step,)))
        out.append(tuple(jobs))
    return tuple(out)


def run(args) -> int:
    if args.max_expanded_mb is not None:            # before the parser processes start: they inherit it
        if not 0 < args.max_expanded_mb < float("inf"):
            raise CliError("--max-expanded-mb must be a positive number of megabytes")
        os.environ["TB_COMPARE_MAX_EXPANDED_MB"] = repr(args.max_expanded_mb)
    backends = start_backends(args.no_cache, (args.baseline, args.target))  # first: its imports overlap ours
    mark("cli: backends started")
    try:
        opts = make_options(args)
        base_spec = resolve(args.baseline, args.base_rank, "baseline")
        target_spec = resolve(args.target, args.target_rank, "target")
    except BaseException:
        if backends[1] is not None:
            backends[1].shutdown()
        raise
    # what the answers use, imported here before the import thread starts (one thread compiles at a time)
    from .service import compare  # noqa: F401
    from .presenters import overall_json, cli_text, json_encode  # noqa: F401
    from .service import errors  # noqa: F401

    progress = Progress(not args.no_progress)
    imports = _import_beside()
    mark("cli: sides resolved")
    early = _FirstSide(args)
    base, target = load_sides(base_spec, target_spec, progress, backends, early, _side_jobs(args, opts))
    mark("cli: both sides in")
    if _STATE["program"] and backends[1] is not None and os.environ.get("TB_COMPARE_KEEP_FORK_SERVER") != "1":
        # nothing more to parse: its memory goes meanwhile (joined before the workbook's fork)
        _STATE["fork server stop"] = backends[1].release_fork_server()
    early.close()
    try:
        return _answer(args, opts, base, target, base_spec, target_spec, imports)
    finally:
        if backends[1] is not None:     # the parser processes, gone by now (they exited as we went on)
            backends[1].shutdown()


def _answer(args, opts, base, target, base_spec, target_spec, imports) -> int:
    """The answers of a loaded pair: warnings, the JSON, the workbook, the tables."""
    imports.join()
    from .service import compare as service
    from .presenters.overall_json import load_warnings
    from .presenters.cli_text import overview_table, steps_table
    from .service.errors import Unusable
    from .presenters.json_encode import encode
    cmp = service.make_comparison(base, target, opts, base_spec, target_spec)
    mark("cli: comparison made")
    if _STATE["program"]:               # short-lived, left with os._exit: no collections from here on,
        import gc                       # and what there is now stays unwritten (fewer pages to copy
        gc.disable()                    # after the workbook's fork)
        gc.freeze()
    _fork_server_gone(0.3)
    split = _split_workbook(args, cmp)          # before this tail starts a thread: it forks
    try:
        for _who, path, w in load_warnings(cmp):      # what a loader dropped or guessed: one line each
            print(f"warning: {path}: {' '.join(w.split())}", file=sys.stderr)
        if split is not None:
            with _xlsx_errors(args):
                split.prefix()
        steps_job = _steps_beside(service, cmp, args)  # numpy-heavy: overlaps the overview
        payload = service.overview(cmp)
        steps = None
        if steps_job is not None and (args.json or args.steps):
            try:
                steps = steps_job.result()
            except Unusable as e:
                raise CliError(e.message)
        if args.json:
            from .presenters.views import operator_table
            ops = split.operator_table(lambda: operator_table(cmp)) if split is not None else operator_table(cmp)
            payload = {**payload, "steps": steps, "operators": ops}
            write_output(args.json, encode(payload))
            mark("cli: json written")
        if args.xlsx:
            with _xlsx_errors(args):
                if split is not None:
                    split.finish()
                else:
                    service.write_workbook(cmp, os.path.abspath(args.xlsx), sheets=selected_sheets(args))
            mark("cli: xlsx written")
    except BaseException:
        if split is not None:
            split.abort()
        raise
    if not args.quiet and args.json != "-":
        print(overview_table(payload, wide=args.wide, color=sys.stdout.isatty()))
    if args.steps and args.json != "-":
        if not args.quiet:
            print()
        print(steps_table(steps, wide=args.wide, color=sys.stdout.isatty()))
    if _STATE["program"]:               # the program leaves without freeing any of it (main)
        _STATE["kept"] = (base, target, cmp, payload, steps)
    return EXIT_OK


class _FirstSide:
    """The ``warm`` of ``load_pair``: the per-side parts of the tail's work (the op tree's op
    starts and names, its kernel detail lines and their offsets, the memory curves) computed for
    the side that is in first, on the core its parser process left, while the other side still
    parses.  :meth:`close` waits until both
    sides' warm-up (``load_pair`` calls this after each side's ``side_work``) is over, so
    nothing runs on another thread when the tail forks."""

    def __init__(self, args) -> None:
        self.wanted = bool(args.json or args.xlsx)
        self._cond = threading.Condition()
        self._calls = self._done = 0

    def __call__(self, prof) -> None:
        with self._cond:
            self._calls += 1
            first = self._calls == 1
        try:
            if first and self.wanted:
                from .comparison import side_memory_curves
                from .engines.optree import tree_of
                from .engines.scope_tree import op_view
                tree = tree_of(op_view(prof))
                tree.start, tree.name                   # what the op matching reads first (both processes)
                tree.kernel_line_offsets                # (its kernel_line_table first)
                side_memory_curves(prof)
                mark("cli: first side's tail work done")
        except Exception:  # noqa: BLE001 - kept as the value's failure; the tail reports it
            pass
        finally:
            with self._cond:
                self._done += 1
                self._cond.notify_all()

    def close(self, timeout: float = 60.0) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._done >= 2, timeout)


class _xlsx_errors:
    """A workbook failure as the CLI's one line: "cannot write FILE: why"."""

    def __init__(self, args) -> None:
        self.path = args.xlsx

    def __enter__(self):
        return self

    def __exit__(self, kind, e, tb) -> bool:
        if e is None:
            return False
        from .presenters.xlsx_split import WriterFailed
        if isinstance(e, OSError):
            raise CliError(f"cannot write {self.path}: {e.strerror or e}") from e
        if isinstance(e, WriterFailed):
            raise CliError(f"cannot write {self.path}: {e}") from e
        return False


def _fork_server_gone(timeout: float) -> None:
    """Wait up to ``timeout`` s for the fork server's stop (``release_fork_server``; it waits for
    the last parser child's exit, usually over by now: ~0.02 s).  A process forked while the
    server runs inherits the pipe end that keeps it alive: the workbook's writer would hold its
    ~150 MB through the whole tail (summed peak 1.09 GB on the 1 GB pair instead of 0.95)."""
    stopper = _STATE.pop("fork server stop", None)
    if stopper is not None:
        stopper.join(timeout)


def _split_workbook(args, cmp):
    """The workbook made by this process and a forked one at once (``presenters.xlsx_split``),
    or None: only the program itself (``main`` with its own arguments; ``TB_COMPARE_XLSX_SPLIT=1``
    lets tests call it in-process), from the main thread, when a fork is possible and the operator
    group is selected.  A fork that fails leaves the one-process writer."""
    if not args.xlsx or threading.current_thread() is not threading.main_thread():
        return None
    from .presenters import xlsx_split
    if not (_STATE["program"] or os.environ.get(xlsx_split.ENV) == "1"):
        return None
    sheets = selected_sheets(args)
    if not xlsx_split.wanted(sheets, cmp):
        return None
    try:
        return xlsx_split.SplitWorkbook(cmp, os.path.abspath(args.xlsx), sheets, operator_table=bool(args.json))
    except OSError:
        return None


def _import_beside() -> threading.Thread:
    """Import the engines and presenters the answers need on a thread while the parser
    processes work (~0.5 s of CPU otherwise spent after both sides are in).  Under the cache's
    .npy header lock: CPython 3.11's AST constructor must not run on two threads at once (a
    module compiled from source here, a column's header parsed there)."""
    def run():
        from .cache import _NPY_HEADER_LOCK
        from .service.compare import warm_imports
        with _NPY_HEADER_LOCK:
            try:
                warm_imports()
                mark("cli: engines imported")
            except Exception:  # noqa: BLE001 - the answer imports them again and reports it
                pass
    t = threading.Thread(target=run, name="tb-compare-imports", daemon=True)
    t.start()
    return t


def _steps_beside(service, cmp, args):
    """The steps answer started on a thread of its own when the JSON, the table or the
    workbook needs it (a Future, None when not needed), so it is computed while the overview
    is; the workbook's step sheets then wait for it (``Comparison._memo``)."""
    sheets = selected_sheets(args)
    if not (args.json or args.steps or (args.xlsx and (sheets is None or "steps" in sheets))):
        return None
    from concurrent.futures import ThreadPoolExecutor
    pool = ThreadPoolExecutor(1, thread_name_prefix="tb-compare-steps")
    try:
        return pool.submit(service.steps, cmp)
    finally:
        pool.shutdown(wait=False)


def _quiet_stderr(debug: bool) -> None:
    """stderr carries only our own lines: Python warnings are not shown (what matters about the
    input is in the loaders' warnings), log records print as one ``warning:`` line each, and
    the parser processes write to a file of their own (parsepool) unless ``--debug``."""
    if debug:
        os.environ["TB_COMPARE_DEBUG"] = "1"
        return
    sys.unraisablehook = _unraisable_to_log
    import logging
    import warnings
    warnings.simplefilter("ignore")
    log = logging.getLogger("tb_compare_plugin")
    if not any(getattr(h, "tbc_cli", False) for h in log.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("warning: %(message)s"))
        handler.tbc_cli = True
        log.addHandler(handler)
    log.setLevel(logging.WARNING)
    log.propagate = False


def _unraisable_to_log(unraisable) -> None:
    """"Exception ignored in ..." (an error in a finaliser or an exit hook, after our answer is
    out) goes to the debug log, not to stderr as a traceback; --debug shows it.  Seen: CPython
    3.11's process-pool exit hook writes to its wake-up pipe while the pool's manager thread,
    left to finish after ``shutdown(wait=False)``, closes it (OSError: Bad file descriptor).
    Joining that thread instead is worse: 3.11's manager thread then reads the ``_processes``
    that ``shutdown`` has set to None, dies, and leaves the children to hang the exit."""
    import logging
    logging.getLogger("tb_compare_plugin.exit").debug(
        "ignored at exit in %r: %s: %s", unraisable.object, type(unraisable.exc_value).__name__,
        unraisable.exc_value)


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGINT arrived: the parser processes are being stopped."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


STOP_GRACE_SECONDS = 1.5     # after a stop signal, the most the orderly way out may take
# "signum": the stop signal received (None: none yet); "said": its line is printed; "raise": the
# main thread is inside the run (a stop unwinds it); "over": the program's run is over and Python
# is tearing down (a stop leaves at once); "program": main runs as the program (not called in-process);
# "kept": what a program's answered comparison holds, left for the exit to drop (``_leave_now``)
_STATE: dict = {"signum": None, "said": False, "raise": False, "over": False, "program": False, "kept": None}


def _say_stopped(signum: int) -> None:
    """The one line a stop prints (once, whoever gets there first)."""
    if not _STATE["said"]:
        _STATE["said"] = True
        try:
            os.write(2, f"tb-compare: interrupted ({signal.Signals(signum).name})\n".encode())
        except OSError:
            pass


def _on_stop(signum, frame) -> None:
    """SIGTERM / SIGINT: kill the parser processes at once (their waiting threads then delete
    what the children left half-written), and unwind the main thread.  Further signals are
    ignored while that cleanup runs; it takes well under a second.  Should it not end within
    ``STOP_GRACE_SECONDS`` (the exception swallowed somewhere, a thread that will not end), a
    watchdog does the cleanup itself and exits."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    first = _STATE["signum"] is None
    if first:
        _STATE["signum"] = signum
    pp = sys.modules.get("tb_compare_plugin.service.parsepool")     # no import in a signal handler
    abort_all = getattr(pp, "abort_all", None)                      # (None while it is imported)
    if abort_all is not None:
        abort_all()
    if _STATE["over"]:
        _exit_now(_STATE["signum"])
    if first:
        threading.Thread(target=_watchdog, name="tb-compare-stop", daemon=True).start()
    if _STATE["raise"]:
        raise Stopped(_STATE["signum"])


def _watchdog() -> None:
    time.sleep(STOP_GRACE_SECONDS)
    _exit_now(_STATE["signum"])


def _exit_now(signum: int) -> None:
    """Leave now: kill the parser processes, delete what they left half-written, remove this
    process's scratch folders and semaphores, print the line, exit 128 + ``signum``."""
    pp = sys.modules.get("tb_compare_plugin.service.parsepool")
    xs = sys.modules.get("tb_compare_plugin.presenters.xlsx_split")
    try:
        if getattr(xs, "abort_all", None) is not None:
            xs.abort_all()              # the workbook's child and temporary file
        if getattr(pp, "stop_now", None) is not None:
            pp.stop_now()
    finally:
        _say_stopped(signum)
        os._exit(128 + signum)


def _install_stop_handlers() -> dict:
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, _on_stop) for sig in (signal.SIGTERM, signal.SIGINT)}


def main(argv=None) -> int:
    """The command.  ``argv`` None: the program's own arguments; then the stop handlers stay
    installed after the run, so a stop signal while Python tears down exits at once too."""
    program = argv is None
    _STATE.update(signum=None, said=False, over=False, program=program, kept=None)
    previous = _install_stop_handlers()         # first: a Ctrl-C from here on is a clean stop
    code = None
    try:
        code = _main(sys.argv[1:] if argv is None else list(argv))
    finally:
        if _STATE["signum"] is not None:        # stopped, whatever the run answered
            _say_stopped(_STATE["signum"])
            code = 128 + _STATE["signum"]
            if program:
                _leave(code)
        if program and code is not None:
            _STATE["over"] = True
            if _STATE["kept"] is not None:  # a comparison answered: leave without tearing it down
                _leave_now(code)
        else:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    return code


def _leave(code: int) -> None:
    """After a stop, the program's way out: wait (briefly) for the threads still stopping, run
    the exit hooks (they remove the scratch folders and unlink the semaphores), and exit without
    Python's teardown of every module it imported: 0.1 s on an idle machine, most of a second on
    a busy one, for nothing.  Signals stay ignored: a second Ctrl-C never interrupts this."""
    deadline = time.monotonic() + 0.5
    for t in threading.enumerate():
        if t is not threading.current_thread() and not t.daemon:
            t.join(max(0.0, deadline - time.monotonic()))
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    import atexit
    try:
        atexit._run_exitfuncs()
    finally:
        os._exit(code)


def _leave_now(code: int) -> None:
    """The program's way out after a comparison it answered: flush the output, run the exit
    hooks (they remove the scratch folders and unlink the semaphores), and exit without freeing
    the profiles, the comparison and every module Python imported one object at a time (``run``
    keeps them referenced until here): on the 1 GB pair that teardown was ~0.3 s of CPU, and
    most of a second on a busy machine, after the answer was out."""
    status = code
    mark("cli: leaving")
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            if stream is sys.stdout and status == EXIT_OK:
                status = 120            # what Python's own exit returns when stdout cannot be flushed
    import atexit
    try:
        atexit._run_exitfuncs()
    finally:
        os._exit(status)


def _main(argv: list) -> int:
    args = None
    limit_env = os.environ.get("TB_COMPARE_MAX_EXPANDED_MB")    # run() may set it for its children
    try:
        _STATE["raise"] = True          # from here, a stop signal unwinds this thread ...
        try:
            runner = run
            if argv[:1] == ["cluster"]:       # the subcommand (a folder named cluster: ./cluster)
                from . import cli_cluster
                args = cli_cluster.build_parser().parse_args(argv[1:])
                runner = cli_cluster.run
            else:
                args = build_parser().parse_args(argv)
            _quiet_stderr(args.debug)
            return runner(args)
        finally:
            _STATE["raise"] = False     # ... up to here (main then sees it was stopped)
    except KeyboardInterrupt as e:      # main prints the line
        if _STATE["signum"] is None:    # not through our handler (main called off the main thread)
            _STATE["signum"] = getattr(e, "signum", signal.SIGINT)
        return 128 + _STATE["signum"]
    except Exception as e:  # noqa: BLE001 - one line, never a traceback
        if _STATE["signum"] is not None:      # the stop made it fail ("stopped before ..."): main says so
            return EXIT_FAIL
        if args is not None and args.debug:
            raise
        from .service.loading import user_message
        msg = str(e) if isinstance(e, CliError) else user_message(e)
        print(f"tb-compare: error: {' '.join(msg.split())}", file=sys.stderr)
        return EXIT_FAIL
    finally:
        if limit_env is None:           # main() called in-process (tests, scripts) leaves no limit behind
            os.environ.pop("TB_COMPARE_MAX_EXPANDED_MB", None)
        else:
            os.environ["TB_COMPARE_MAX_EXPANDED_MB"] = limit_env


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
