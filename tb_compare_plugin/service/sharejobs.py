"""Per-side jobs shared between the parser processes of a pair (issue 19).

The two sides of a pair are parsed at once, each in a parser process that then runs that side's
jobs (``engines.side_work``) one after the other.  The sides differ in size, so one parser
process answers first; from then until the other answers, one core is idle.  So the process that
answered first is given a second task (``parsepool._child_help``): take the other side's
remaining jobs from the end of their list, while that side's own process works from the front:

- each job is claimed before it runs by creating a file of its own (``<share>.j<i>``,
  ``O_CREAT | O_EXCL``: exactly one process gets it); a side's own process claims its jobs in
  list order and skips one it could not claim (:func:`child_takes`); a helper claims from the
  end and stops at the first job someone else holds, or one it would not end sooner than that
  side's process, judged by its own durations of the same jobs (:func:`_worth_taking`);
- a side's process says where its profile is once it is complete (``<share>.in``, written by
  :func:`handed_off` after the hand-off folder or the cache entry is): a helper maps its own
  copy of the profile from there and computes the claimed jobs on it (a parser process has the
  numba kernels loaded; the CLI's own process has not); their values are the helper's answer
  (``("lent", share)`` entries, :func:`lent_values`), which the parent adds to that side's;
- a helper announces itself before it claims anything (``<share>.h.<helper's share>``): once a
  side has answered without some of its jobs' values, its parent waits for each helper
  announced on it (:func:`helpers_of`) to be done.  Parser processes never wait for each other;
- only the jobs whose values are small (:data:`TAKEN`) are taken; the op tree and the jobs that
  build it stay with the side's own process, whose answer sends them (spilled) as before.

Whatever goes wrong in a helper (a mapping that fails, a job that fails, a helper that dies)
leaves that job's value out, exactly like a job that failed in the side's own process: the
comparison computes it again and meets the same error itself.  ``TB_COMPARE_SHARE_JOBS=0``
turns the sharing off.  A share's files live in the pool's scratch folder (removed with it).
"""
from __future__ import annotations

import glob
import os
import pickle
import time

from ..envflags import switched_off
from ..timing import mark

TAKEN = frozenset({"breakdown", "steps", "api", "kernels"})    # small values, no op tree needed
ENV = "TB_COMPARE_SHARE_JOBS"       # "0": every job stays with its own parser process
LENT = "lent"                       # the key's first part of a helper's values for another share
SLOWER = 1.3                        # a helper's job against the side's own (fresh memory, mapped pages)
MAP_S = 0.02                        # mapping the other side's profile (~0.01 s on a 1 GB trace)
_STARTED: dict = {}                 # in a parser process: repr(job) -> when it started here
_OWN: dict = {}                     # repr(job) -> how long it took here (the other side's is about as long)


def enabled() -> bool:
    return not switched_off(ENV)


def share_name(folder: str, ppath: str, attempt: int) -> str:
    """The share of one parse attempt (a path prefix in the scratch folder; not ``tmp*``, the
    progress files' names)."""
    return os.path.join(folder, f"share-{os.path.basename(ppath)}-a{attempt}")


def _claim(path: str):
    """True: ours; False: someone else's; None: cannot tell (no folder)."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False
    except OSError:
        return None
    os.close(fd)
    return True


# -- in a side's own parser process ----------------------------------------------------------------
def handed_off(share: str | None, jobs: tuple, where: str, cache_root: str | None, fingerprint,
               handoff_key) -> None:
    """Once the profile is complete (``where``: "handoff" or "cache"): say where, for helpers
    (best effort; written whole, then renamed into place)."""
    if share is None:
        return
    tmp = f"{share}.in-tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(pickle.dumps((tuple(jobs), where, cache_root, fingerprint, handoff_key)))
        os.rename(tmp, f"{share}.in")
    except OSError:
        pass


def child_takes(share: str | None, jobs: tuple, i: int) -> bool:
    """Before job ``i``: whether to run it (False: a helper claimed it).  Without a share, or
    when the claim cannot be made, it runs here.  A job no helper takes is claimed too: its
    file's time says when this process started it (:func:`_worth_taking`)."""
    if share is None:
        return True
    mine = _claim(f"{share}.j{i}") is not False or jobs[i][0] not in TAKEN
    if mine:
        _STARTED[repr(jobs[i])] = time.monotonic()
    return mine


def ran(job) -> None:
    """After ``job`` ran here: its duration, for this process's decisions as a helper."""
    start = _STARTED.pop(repr(job), None)
    if start is not None:
        _OWN[repr(job)] = time.monotonic() - start


# -- in the parser process that answered first --------------------------------------------------------
def handed_off_shares(own: str) -> list[str]:
    """The other shares of ``own``'s folder whose profile is complete (their ``.in`` files)."""
    return [m for m in sorted(glob.glob(os.path.join(os.path.dirname(own), "share-*.in"))) if m[:-3] != own]


def help_others(own: str | None, handoff_root: str | None) -> dict:
    """In a parser process that has answered for its own share ``own``: take the other shares'
    remaining jobs from the end of their lists; their values by ``(LENT, share)``."""
    out = {}
    if own is None or not enabled():
        return out
    for marker in handed_off_shares(own):
        other = marker[:-3]
        try:
            with open(marker, "rb") as f:
                jobs, where, cache_root, fingerprint, handoff_key = pickle.loads(f.read())
        except Exception:  # noqa: BLE001 - gone (its parse is over) or unreadable: not ours to judge
            continue
        last = len(jobs) - 1
        if last < 0 or jobs[last][0] not in TAKEN or os.path.exists(f"{other}.j{last}"):
            continue                        # nothing left to take there
        try:
            os.close(os.open(f"{other}.h.{os.path.basename(own)}", os.O_CREAT | os.O_WRONLY, 0o600))
        except OSError:
            continue
        got = _take_from(other, jobs, where, cache_root, fingerprint, handoff_key, handoff_root)
        if got:
            out[(LENT, other)] = got
    return out


def _take_from(other, jobs, where, cache_root, fingerprint, handoff_key, handoff_root) -> dict:
    from ..engines import side_work
    profile = None
    values = {}
    for i in range(len(jobs) - 1, -1, -1):
        if jobs[i][0] not in TAKEN or not _worth_taking(other, jobs, i, profile is not None):
            break
        if _claim(f"{other}.j{i}") is not True:
            break                           # the side's own process is there: it has the rest
        if profile is None:
            profile = _map(where, cache_root, fingerprint, handoff_key, handoff_root)
            if profile is None:
                break                       # claimed, not computed: the parent computes it
        values.update(side_work.compute(profile, (jobs[i],)))
        mark(f"child: took job {jobs[i][0]} of the other side")
    return values


def _worth_taking(other: str, jobs: tuple, i: int, mapped: bool) -> bool:
    """Whether job ``i`` would be done sooner here than by the side's own process.  Yes when
    that process has not started job ``i - 1`` yet; when it has (at its claim file's time), by
    this process's own durations of the same jobs: it ends job ``i`` at start + both durations,
    this one at now + ``SLOWER`` x its duration (+ the mapping).  Yes without durations."""
    if i == 0:
        return True
    try:
        started = os.stat(f"{other}.j{i - 1}").st_mtime
    except OSError:
        return True
    prev, this = _OWN.get(repr(jobs[i - 1])), _OWN.get(repr(jobs[i]))
    if prev is None or this is None:
        return True
    return time.time() + SLOWER * this + (0.0 if mapped else MAP_S) < started + prev + this


def _map(where, cache_root, fingerprint, handoff_key, handoff_root):
    """This process's copy of the other side's profile (None when it cannot be read)."""
    from ..cache import ProfileCache
    try:
        if where == "cache" and cache_root is not None:
            cache = ProfileCache(cache_root)
            cache.check_columns = False     # just written; the parent checks them when it maps them
            return cache.get(fingerprint)
        if where == "handoff" and handoff_root is not None:
            from .handoff import handoff_cache
            return handoff_cache(handoff_root).get(handoff_key)
    except Exception:  # noqa: BLE001 - a helper's failure costs only time
        return None
    return None


# -- in the parent ----------------------------------------------------------------------------------------
def lent_values(values: dict) -> tuple[dict, dict]:
    """A child's values split: (its own side's, {share: values it computed for that share})."""
    own, lent = {}, {}
    for key, value in values.items():
        if isinstance(key, tuple) and len(key) == 2 and key[0] == LENT:
            lent[key[1]] = value
        else:
            own[key] = value
    return own, lent


def helpers_of(share: str) -> list[str]:
    """The shares of the helpers announced on ``share``."""
    head = f"{share}.h."
    return [os.path.join(os.path.dirname(share), p[len(head):]) for p in glob.glob(glob.escape(head) + "*")]


def remove(share: str) -> None:
    """The share's files (its parse attempt is over)."""
    for path in glob.glob(glob.escape(share) + ".*"):
        try:
            os.unlink(path)
        except OSError:
            pass
