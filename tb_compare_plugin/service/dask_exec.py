"""Per-rank work as Dask tasks: the cluster analysis beyond one machine, on an existing engine.

With a scheduler address (the CLI's ``--dask-scheduler ADDRESS``, the plugin's
``--profile_compare_dask_scheduler``, or ``$TB_COMPARE_DASK_SCHEDULER``), the per-rank function
``analyses.run.summarise.summarise_worker`` runs as Dask tasks
(``distributed.Client(address).map(...)``) on the cluster's workers, which must see the same
filesystem (the worker paths are sent, not the files) and have tb-compare installed.  Each task
summarises a chunk of ranks (:func:`summarise_chunk`, the same function the local process pool
runs) and sends back the RankSummary objects (small; Dask pickles them), or each failed rank's
error in one line; the caller caches and analyses them exactly as it does local results.

``distributed`` is an optional dependency (``pip install 'tb-compare-plugin[dask]'``), imported
only when an address is given; without it the caller gets :class:`DaskUnavailable` with one line
saying so.  Nothing here schedules anything itself.
"""
from __future__ import annotations

import os
from typing import Callable, Sequence

ENV = "TB_COMPARE_DASK_SCHEDULER"
CONNECT_TIMEOUT = "20s"


class DaskUnavailable(RuntimeError):
    """No usable Dask: the package is missing or the scheduler cannot be reached (one line)."""


def scheduler_address(explicit: str | None = None) -> str | None:
    """The scheduler to use: ``explicit`` (a CLI option or plugin flag) when given, else
    ``$TB_COMPARE_DASK_SCHEDULER``, else None (run on local cores)."""
    addr = (explicit or "").strip() or os.environ.get(ENV, "").strip()
    return addr or None


def add_cli_option(parser) -> None:
    """``--dask-scheduler ADDRESS`` on an argparse parser (``tb-compare cluster``); pass the value
    to :func:`scheduler_address` (it falls back to ``$TB_COMPARE_DASK_SCHEDULER``)."""
    parser.add_argument("--dask-scheduler", metavar="ADDRESS", default=None,
                        help="run the per-rank work as Dask tasks on the scheduler at ADDRESS "
                             "(tcp://HOST:8786; its workers must see the same files and have "
                             f"tb-compare-plugin[dask] installed). Default: ${ENV}, else this "
                             "machine's cores")


def _client(address: str):
    try:
        import distributed
    except ImportError:
        raise DaskUnavailable(f"--dask-scheduler {address}: the Python package 'distributed' is not "
                              "installed (pip install 'tb-compare-plugin[dask]')") from None
    try:
        return distributed.Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except Exception as e:  # noqa: BLE001 - OSError, TimeoutError, ValueError for a bad address
        raise DaskUnavailable(f"--dask-scheduler {address}: cannot reach the Dask scheduler "
                              f"({type(e).__name__}: {e})") from None


def summarise_chunk(specs: Sequence, options: dict | None = None) -> list:
    """``[("ok", RankSummary) | ("error", one line)]`` for each spec, in order: the unit of work
    of the local process pool and of a Dask task.  Module-level, so that Dask workers import it
    from the installed package."""
    from ..analyses.run.summarise import summarise_worker
    from .loading import user_message
    out = []
    for spec in specs:
        try:
            out.append(("ok", summarise_worker(spec, options)))
        except Exception as e:  # noqa: BLE001 - one rank's error, reported by name
            out.append(("error", user_message(e)))
    return out


def chunk_bounds(n: int, workers: int, most: int = 64) -> list:
    """``[(start, stop)]`` cutting ``n`` ranks into chunks: about four per worker (so a slow one
    does not hold the rest), at most ``most`` ranks each (so progress moves)."""
    size = max(1, min(most, n // max(1, workers * 4)))
    return [(i, min(n, i + size)) for i in range(0, n, size)]


def map_summaries(address: str, specs: Sequence, options: dict | None = None,
                  progress: Callable[[float], None] | None = None) -> list:
    """``summarise_chunk`` over ``specs`` on the Dask cluster at ``address``; one
    ``("ok", RankSummary) | ("error", line)`` per spec, in order.  Raises :class:`DaskUnavailable`."""
    if not specs:
        return []
    client = _client(address)
    try:
        try:
            workers = len(client.scheduler_info().get("workers", {})) or 1
        except Exception:  # noqa: BLE001 - only used to size the chunks
            workers = 1
        bounds = chunk_bounds(len(specs), workers)
        futures = client.map(summarise_chunk, [list(specs[a:b]) for a, b in bounds],
                             options=dict(options or {}), pure=False,
                             key=[f"tb-compare-summarise-{a}-{b}-{os.getpid()}-{id(specs)}" for a, b in bounds])
        out: list = [None] * len(specs)
        done = 0
        for fut, (a, b) in zip(futures, bounds):       # in order; each waits for its own task
            try:
                got = fut.result()
            except Exception as e:  # noqa: BLE001 - a worker lost, a task that could not run
                got = [("error", f"the Dask task failed ({type(e).__name__}: {e})")] * (b - a)
            out[a:b] = got
            done += b - a
            if progress is not None:
                progress(done / len(specs))
        return out
    finally:
        client.close()
