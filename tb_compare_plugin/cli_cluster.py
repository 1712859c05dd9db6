"""`tb-compare cluster RUN [--against RUN]`: every rank of a run (and of a second run) from the
command line, over :func:`.service.cluster.cluster_json`.

``cli.main`` sends an argument list whose first word is ``cluster`` here: that word is always the
subcommand.  The pair comparison keeps its two positional paths; a profile folder literally named
``cluster`` is compared as ``./cluster`` (a path with a slash), and a ``cluster`` invocation given
two paths says so in its one error line.  Exit codes, one-line errors, ``warning: ...`` lines and
the progress bar (stderr, only on a terminal) follow the pair CLI (:mod:`.cli`, :mod:`.cli_common`).
"""
from __future__ import annotations

import argparse
import os
import sys

from .cli_common import EXIT_OK, CliError, Progress, write_output


def build_parser() -> argparse.ArgumentParser:
    from .service.dask_exec import add_cli_option
    p = argparse.ArgumentParser(
        prog="tb-compare cluster",
        description="Analyse every rank of a run (a folder holding two or more workers): per-rank "
                    "step split, slow ranks, slow links and parallel-strategy hints; with --against, "
                    "the run against another run.",
        epilog="A profile folder named 'cluster' is compared with the pair command as ./cluster.")
    p.add_argument("run", metavar="RUN", help="run folder holding the ranks' profiles (*_ascend_pt, "
                                              "*_ascend_ms, .db, trace .json per rank)")
    p.add_argument("extra", nargs="*", help=argparse.SUPPRESS)
    p.add_argument("--against", metavar="RUN", help="a second run (the target) compared with RUN "
                                                    "(the baseline), rank by rank and in aggregate")
    p.add_argument("--step", type=int, metavar="N", help="analyse only step N (of both runs)")
    p.add_argument("--json", metavar="FILE", help="write the cluster JSON (docs/cluster.md) to FILE "
                                                  "('-' for stdout)")
    p.add_argument("--xlsx", metavar="FILE", help="write the cluster workbook (the reference's cluster "
                                                  "sheets, then ours) to FILE")
    add_cli_option(p)
    p.add_argument("--all-ranks", action="store_true",
                   help="list every rank in the tables (default: at most 24, the telling ones)")
    p.add_argument("--wide", action="store_true", help="wider tables with whole column names")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--no-cache", action="store_true",
                   help="neither read nor write the summary cache (~/.cache/tb-compare)")
    p.add_argument("--quiet", "-q", action="store_true", help="do not print the tables")
    p.add_argument("--debug", action="store_true", help="show full tracebacks on failure")
    return p


def check_path(path: str, role: str) -> str:
    if not os.path.exists(path):
        raise CliError(f"{role} {path}: no such file or folder")
    return path


def check_size(d: dict, path: str, role: str) -> None:
    """CliError unless the run had two or more workers (analysed or left out)."""
    workers = [r.get("worker") for r in d.get("ranks") or []]
    workers = list(dict.fromkeys(workers)) + [e.get("worker") for e in d.get("errors") or []]
    if len(workers) < 2:
        have = ", ".join(str(w) for w in workers) or "none"
        raise CliError(f"{role} {path}: {len(workers)} worker(s) found ({have}); a cluster analysis "
                       "needs two or more ranks (compare two workers with tb-compare BASELINE TARGET)")


def write_json(target: str, data: dict) -> None:
    from .presenters.json_encode import encode
    write_output(target, encode(data))


def run(args) -> int:
    if args.extra:
        raise CliError(f"tb-compare cluster takes one RUN (and --against RUN); got {1 + len(args.extra)} "
                       "paths. To compare a profile folder named 'cluster' with another, write ./cluster")
    from .service.cluster import DEFAULT, cluster_json
    from .service.dask_exec import DaskUnavailable
    # paths, not discovered runs: an unchanged run is then answered from the result cache
    # without walking its ranks' files (1,024 ranks: ~1 s instead of ~10 s of discovery)
    base = check_path(args.run, "run")
    other = check_path(args.against, "--against") if args.against else None
    if args.xlsx and not os.path.isdir(os.path.dirname(os.path.abspath(args.xlsx))):
        raise CliError(f"cannot write {args.xlsx}: its folder does not exist")
    progress = Progress(not args.no_progress)
    progress.start("summarising the ranks")
    try:
        data = cluster_json(base, other, cache=None if args.no_cache else DEFAULT,
                            scheduler=args.dask_scheduler, progress=progress, step=args.step)
    except DaskUnavailable as e:
        raise CliError(str(e))
    finally:
        progress.done()
    check_size(data, base, "run")
    if other:
        check_size(data["against"], other, "--against")
    for side, path in ((data, base), (data.get("against") or {}, other)):
        for w in side.get("warnings") or []:     # what a reader dropped or guessed, and ranks left out
            w = " ".join(str(w).split())
            if not w.startswith(os.sep):        # the run's own (not one file's): name the run folder
                w = f"{path}: {w}"
            print(f"warning: {w}", file=sys.stderr)
    if args.json:
        write_json(args.json, data)
    if args.xlsx:
        from .presenters.xlsx_cluster import write_cluster_workbook
        try:
            write_cluster_workbook(data, os.path.abspath(args.xlsx))
        except OSError as e:
            raise CliError(f"cannot write {args.xlsx}: {e.strerror or e}")
    if not args.quiet and args.json != "-":
        from .presenters.cluster_text import cluster_text
        print(cluster_text(data, wide=args.wide, all_ranks=args.all_ranks))
    return EXIT_OK
