"""Background logdir scanner: rescans every few seconds on its own daemon thread and
publishes an immutable snapshot; request handlers only read the latest snapshot.

One :class:`~.walk.Walker` serves every rescan, so a rescan re-lists only folders that changed
and the walk is bounded (see ``walk``); what the walk left out is logged once per change and kept
in the snapshot's ``notes``.  A scan that fails keeps the previous runs."""
from __future__ import annotations

import logging
import threading
import time

from .walk import Walker

log = logging.getLogger(__name__)


class Snapshot:
    """Runs and a worker-id index, as of one scan."""

    def __init__(self, runs=(), scanned_at: float = 0.0, error: str | None = None,
                 notes=()) -> None:
        self.runs = list(runs)
        self.workers = {w.id: w for r in self.runs for w in r.workers}
        self.scanned_at = scanned_at
        self.error = error
        self.notes = list(notes)       # what the walk left out (links to / ..., budget)


class Scanner:
    def __init__(self, logdir: str, interval: float = 5.0) -> None:
        self.logdir = logdir
        self.interval = max(0.5, float(interval))
        self._snapshot = Snapshot()
        self._started = False
        self._lock = threading.Lock()
        self._first = threading.Event()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._walker = Walker(logdir) if logdir else None
        self._logged_notes: list = []

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    @property
    def active(self) -> bool:
        return bool(self._snapshot.workers)

    def start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._loop, name="tbc-scanner", daemon=True).start()

    def wait_first_scan(self, timeout: float) -> bool:
        return self._first.wait(timeout)

    def rescan_soon(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def scan_once(self) -> Snapshot:
        if not self.logdir:
            snap = Snapshot((), time.time(), "TensorBoard was started without --logdir")
        else:
            try:
                runs = self._walker.runs()
                snap = Snapshot(runs, time.time(), notes=self._walker.notes)
                if snap.notes != self._logged_notes:
                    for n in snap.notes:
                        if n not in self._logged_notes:
                            log.warning("profile_compare: %s", n)
                    self._logged_notes = snap.notes
            except Exception as e:  # never let a scan kill the thread
                log.exception("profile_compare: scanning %s failed", self.logdir)
                snap = Snapshot(self._snapshot.runs, time.time(), f"{self.logdir}: scan failed: {e}")
        self._snapshot = snap
        self._first.set()
        return snap

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.scan_once()
            self._wake.wait(self.interval)
            self._wake.clear()
