"""Imported first by the parser processes' fork server (``parsepool._preload``): turns the cyclic
garbage collector off for the preload (importing numpy, pandas, the loaders and numba allocates a
few hundred thousand objects that form no garbage; the collections they trigger were ~10% of the
preload's CPU) and imports what every parser process needs: the libraries, the cache and every
format's loader (the registry's list is read here, in the fork server, so the CLI need not import
the registry before it starts the fork server).  :mod:`.forkserver_ready`, imported last, freezes
what was loaded and turns the collector back on.  When the CLI forks the fork server from its own
process (:mod:`.forkserver_fork`), the CLI imports this module before the fork (its marks then
come from the CLI's process) and the fork server imports the rest of the preload."""
from __future__ import annotations

import gc

from ..timing import mark

gc.disable()
mark("fork server: preload start")

import numpy  # noqa: E402,F401
import pandas  # noqa: E402,F401
import msgspec  # noqa: E402,F401

mark("fork server: libraries imported")
from .. import cache  # noqa: E402,F401
from ..formats import registry  # noqa: E402


def _load_formats() -> None:
    import importlib
    for name in registry.preload_modules():
        try:
            importlib.import_module(name)
        except ImportError:         # the parser process that needs it meets the error and says so
            pass


_load_formats()
mark("fork server: loaders imported")
