"""Derived data of a profile (its op tree, where each allocation was placed, ...): built once per
(profile, name) by whoever asks first, while other threads asking for the same entry wait for
that build; kept here, outside the :class:`Profile`, which stays as its loader returned it.

Entries live as long as their profile: the store holds the profile weakly and drops its entries
when it is collected, so a value must not hold its profile strongly (``OpTree`` holds it weakly),
or the profile would never be collected.
"""
from __future__ import annotations

import threading
import weakref
from concurrent.futures import Future
from typing import Any, Callable


class DerivedCache:
    """Per-profile, thread-safe, build-once values keyed by (profile identity, name)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slots: dict[int, tuple] = {}          # id(profile) -> (weakref, {name: Future})

    def _slot(self, profile) -> dict:
        key = id(profile)
        slot = self._slots.get(key)
        if slot is None or slot[0]() is not profile:
            slots = self._slots

            def gone(ref, key=key):                 # lock-free: may run inside any allocation
                held = slots.get(key)
                if held is not None and held[0] is ref:
                    slots.pop(key, None)
            slot = self._slots[key] = (weakref.ref(profile, gone), {})
        return slot[1]

    def get(self, profile, name: str, build: Callable[[], Any]):
        """The value of ``name`` for ``profile``, building it with ``build()`` the first time.
        A failed build is remembered: every waiter and later caller gets the same exception."""
        with self._lock:
            entries = self._slot(profile)
            fut = entries.get(name)
            mine = fut is None
            if mine:
                fut = entries[name] = Future()
        if mine:
            try:
                fut.set_result(build())
            except BaseException as e:  # noqa: BLE001
                fut.set_exception(e)
        return fut.result()

    def peek(self, profile, name: str, default=None):
        """The value if it is built already (never waits, never builds)."""
        with self._lock:
            slot = self._slots.get(id(profile))
            fut = slot[1].get(name) if slot is not None and slot[0]() is profile else None
        if fut is None or not fut.done() or fut.exception() is not None:
            return default
        return fut.result()

    def put(self, profile, name: str, value) -> None:
        """Store ``value`` as ``name`` of ``profile`` unless that entry exists (built elsewhere:
        another process computed it on its copy of the same profile)."""
        with self._lock:
            entries = self._slot(profile)
            if name not in entries:
                fut = Future()
                fut.set_result(value)
                entries[name] = fut

    def built(self, profile) -> dict:
        """Every entry of ``profile`` built without error, by name."""
        with self._lock:
            slot = self._slots.get(id(profile))
            futs = dict(slot[1]) if slot is not None and slot[0]() is profile else {}
        return {name: f.result() for name, f in futs.items() if f.done() and f.exception() is None}

    def forget(self, profile, name: str | None = None) -> None:
        with self._lock:
            slot = self._slots.get(id(profile))
            if slot is None or slot[0]() is not profile:
                return
            if name is None:
                self._slots.pop(id(profile), None)
            else:
                slot[1].pop(name, None)

    def profiles(self) -> int:
        """How many live profiles hold entries (for tests)."""
        with self._lock:
            return sum(1 for ref, _ in self._slots.values() if ref() is not None)


DERIVED = DerivedCache()


def derived(profile, name: str, build: Callable[[], Any]):
    """``DERIVED.get``: the one derived-data store engines share."""
    return DERIVED.get(profile, name, build)
