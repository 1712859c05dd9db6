"""``summarise_worker``: one worker's files -> its :class:`RankSummary`.

The one per-rank function of a cluster analysis: a pure function of one worker's files, run in a
process pool here or as a Dask task elsewhere.  It reads the lightest files that hold the figures
(Ascend text: ``step_trace_time.csv``, ``communication.json``, ``communication_matrix.json``;
Ascend db: the STEP_TIME / communication tables) through the small readers of ``loaders/``, and
falls back to a full parse reduced by :mod:`.reduce_profile` only when no light file holds them
(GPU traces).  Reading is the loaders' job; this module only chooses and assembles.
"""
from __future__ import annotations

import os
from typing import Mapping

from ...model.rank_summary import RankSummary, make_table


def _spec_of(spec_or_path):
    if isinstance(spec_or_path, (str, os.PathLike)):
        from ...formats import registry
        path = os.fspath(spec_or_path)
        spec = registry.recognise(path)
        if spec is None:
            raise ValueError(f"{path}: not a profile tb-compare can read")
        return spec
    return spec_or_path


def summarise_worker(spec_or_path, options: Mapping | None = None) -> RankSummary:
    """The summary of one worker (a :class:`WorkerSpec`, or a path the user named).

    ``options``: ``rank`` overrides the rank (a worker whose files do not say it);
    ``full_parse=True`` forces the full parse + reduction even where light files exist."""
    options = dict(options or {})
    spec = _spec_of(spec_or_path)
    if spec.error:
        raise ValueError(spec.error)
    rank = options.get("rank", spec.rank)
    fmt = spec.format
    light = not options.get("full_parse")
    if light and fmt.endswith("-text") and fmt.split("-")[0] in ("ascend", "mindspore"):
        from . import summarise_ascend
        summary = summarise_ascend.from_text(spec.root, rank)
    elif light and fmt.endswith("-db") and fmt.split("-")[0] in ("ascend", "mindspore"):
        from . import summarise_ascend
        summary = summarise_ascend.from_db(spec.root, rank)
    else:
        from . import reduce_profile
        from ...loaders import load
        profile = load(fmt, spec.root, None, options.get("load_options"))
        summary = reduce_profile.summarise_profile(profile, rank)
    summary.worker = spec.name
    summary.path = spec.root
    summary.format = fmt
    summary.device = spec.device
    if summary.rank < 0 and rank is not None:
        summary.rank = int(rank)
    return summary


__all__ = ["summarise_worker", "RankSummary", "make_table"]
