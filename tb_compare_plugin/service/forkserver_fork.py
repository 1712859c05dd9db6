"""The parser processes' fork server started as a fork of the CLI process (``tb-compare`` only).

multiprocessing starts its fork server as a fresh interpreter, which then imports numpy, pandas,
msgspec and every format's loader (:mod:`.forkserver_preload`, ~0.45 s of CPU) while the CLI
process imports the same libraries for itself: the same work twice at start-up, on the machine's
two cores, plus the fork server's own interpreter start-up on the way to the first parse.  Here
the CLI process imports :mod:`.forkserver_preload` once (it needs those modules too), then forks
the fork server, which imports the rest of its preload (numba and the compiled scanners,
:mod:`..loaders.jit_preload`, then :mod:`.forkserver_ready`) and serves multiprocessing's fork
requests exactly as the usual one does (``multiprocessing.forkserver.main``); the pool uses it
through the standard ``forkserver`` context.

Only where this is safe and reproduces the standard start: a process with no other thread
(never inside TensorBoard's server), on the Python whose fork server internals it mirrors
(3.11); :func:`start` returns False otherwise and the caller starts the fork server the usual way.
The fork server leaves the CLI's state behind: the caller's signal handlers are reset to the
defaults (SIGINT stays blocked, as the caller blocked it for the start), it never runs the
caller's exit handlers (it ends with ``os._exit``), and it closes its copy of the write end of
its "alive" pipe, so it ends when the CLI process and the parsers are gone, as the usual one does.
"""
from __future__ import annotations

import gc
import importlib
import os
import signal
import socket
import sys
import threading


def possible() -> bool:
    """Whether :func:`start` may fork the fork server from this process now."""
    if sys.version_info[:2] != (3, 11) or threading.active_count() != 1 or not hasattr(os, "fork"):
        return False
    from multiprocessing import forkserver
    fs = getattr(forkserver, "_forkserver", None)
    return (fs is not None and getattr(fs, "_forkserver_pid", 0) is None and hasattr(forkserver, "main")
            and all(hasattr(fs, a) for a in ("_forkserver_address", "_forkserver_alive_fd", "_preload_modules")))


def import_shared(module: str) -> bool:
    """Import the fork server's first preload module here (with the garbage collector off while
    it imports, as in the fork server; its state here is restored after).  False when it fails.

    What the import made (a few hundred thousand objects: numpy, pandas, the loaders; no garbage
    to speak of) is frozen (``gc.freeze``) before the collector is on again: else the first
    allocation after that runs a collection that walks all of it (~0.05 s of CPU, measured
    between the preload's end and the fork, so on the way to the first parse), and every later
    full collection here would walk it again and write into pages the fork server shares."""
    was = gc.isenabled()
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    finally:
        if was:
            gc.freeze()
            gc.enable()
    return True


def flush_std_streams() -> None:
    """Flush ``sys.stdout`` and ``sys.stderr`` (before the fork, while fd 2 is still the caller's):
    a process forked from here flushes what their buffers hold when it exits."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass


def start() -> bool:
    """Fork the fork server from this process (after :func:`possible` and :func:`import_shared`);
    False when it could not be started (nothing left behind)."""
    from multiprocessing import connection, forkserver, util
    fs = forkserver._forkserver
    preload = list(fs._preload_modules)
    listener = socket.socket(socket.AF_UNIX)
    try:
        address = connection.arbitrary_address("AF_UNIX")
        listener.bind(address)
        if not util.is_abstract_socket_namespace(address):
            os.chmod(address, 0o600)
        listener.listen()
        alive_r, alive_w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(alive_r)
            os.close(alive_w)
            return False
        if pid == 0:
            _serve(listener.fileno(), alive_r, alive_w, preload)
        os.close(alive_r)
    finally:
        listener.close()
    fs._forkserver_address = address
    fs._forkserver_alive_fd = alive_w
    fs._forkserver_pid = pid
    return True


def _serve(listener_fd: int, alive_r: int, alive_w: int, preload: list) -> None:
    """The forked fork server: never returns.  The collector is off until the preload's end
    (:mod:`.forkserver_ready` freezes what was loaded and turns it back on)."""
    code = 1
    try:
        gc.disable()
        os.close(alive_w)
        for s in signal.valid_signals():            # the caller's handlers are not the fork server's
            try:
                if callable(signal.getsignal(s)):
                    signal.signal(s, signal.SIG_DFL)
            except (OSError, RuntimeError, ValueError):
                pass
        from multiprocessing import forkserver
        forkserver.main(listener_fd, alive_r, preload)
        code = 0
    except SystemExit as e:                          # how it ends: no client left
        code = e.code if isinstance(e.code, int) else 0
    except BaseException:  # noqa: BLE001 - said on its stderr (the children's file), then gone
        try:
            import traceback
            traceback.print_exc()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001
            pass
    finally:
        os._exit(code)
