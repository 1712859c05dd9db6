"""What the parser processes' machinery leaves in /dev/shm, named after its owner, and the sweep
that removes what a killed owner left.

Two kinds of entries, both named after the pid of the process that made them (the CLI, or
TensorBoard), so any later process can tell whose they are:

* ``tbc-pool-<pid>-<random>/`` -- a parse pool's scratch folder (progress files, hand-offs), in
  ``$TB_COMPARE_SCRATCH_DIR`` when set, else /dev/shm, else the system temp folder;
* ``sem.mp-tbc<pid>-<random>`` -- the named semaphores of the pools' multiprocessing queues
  (glibc keeps them in /dev/shm): :func:`own_semaphore_names` sets multiprocessing's name
  prefix for this process.

A stopped run (SIGINT, SIGTERM) removes its own on the way out.  A killed one (SIGKILL, a crash)
cannot; :func:`sweep` -- run when a process makes its first pool -- removes entries whose owner
no longer exists, and only those: an entry named for a live process (whatever its user) stays,
and so does anything not named this way.
"""
from __future__ import annotations

import glob
import logging
import os
import re
import shutil

log = logging.getLogger(__name__)

SHM = "/dev/shm"
POOL_PREFIX = "tbc-pool-"
SEM_PREFIX = "mp-tbc"                 # multiprocessing's semprefix is "/mp"; glibc adds "sem."
_OWNED = re.compile(r"^(?:tbc-pool-|sem\.mp-tbc)(\d+)-")


def pool_prefix(pid: int | None = None) -> str:
    """The name prefix of a scratch folder made by ``pid`` (this process by default)."""
    return f"{POOL_PREFIX}{os.getpid() if pid is None else pid}-"


def own_semaphore_names() -> None:
    """Name every semaphore multiprocessing makes from now on in this process after its pid:
    ``/dev/shm/sem.mp-tbc<pid>-<random>``.  Called before each process pool is made (a forked
    child that makes one names it after itself)."""
    try:
        import multiprocessing as mp
        mp.current_process()._config["semprefix"] = f"/{SEM_PREFIX}{os.getpid()}"
    except (AttributeError, TypeError, KeyError):      # a Python whose multiprocessing differs
        pass


def owner_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (a zombie counts as gone: it runs no more code).  Another
    user's process counts as alive: its entries are not ours to judge."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:                   # EPERM: it exists, under another user
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def _remove(path: str) -> bool:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False


def sweep(folders=()) -> list[str]:
    """Remove the scratch folders and semaphores, in /dev/shm and ``folders``, whose owner
    process no longer exists; the paths removed."""
    removed = []
    seen = set()
    for folder in (SHM, *folders):
        if not folder or folder in seen:
            continue
        seen.add(folder)
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            m = _OWNED.match(name)
            if m is None or owner_alive(int(m.group(1))):
                continue
            path = os.path.join(folder, name)
            if _remove(path):
                removed.append(path)
    if removed:
        log.debug("profile_compare: removed %d leftover(s) of killed runs: %s", len(removed),
                  ", ".join(removed[:10]))
    return removed


def remove_own(folders=(), semaphores: bool = False) -> None:
    """Remove this process's own scratch folders (in /dev/shm and ``folders``) and, with
    ``semaphores``, its semaphores: only when it is about to exit without running its
    finalizers (``os._exit``), which would otherwise unlink them."""
    pid = os.getpid()
    for folder in {SHM, *folders}:
        for path in glob.glob(os.path.join(glob.escape(folder), pool_prefix(pid) + "*")):
            _remove(path)
        if semaphores:
            for path in glob.glob(os.path.join(glob.escape(folder), f"sem.{SEM_PREFIX}{pid}-*")):
                _remove(path)
