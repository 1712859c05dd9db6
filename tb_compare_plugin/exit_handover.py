"""The program's last step (``cli._leave_now``): its memory's teardown handed to a process that
outlives it, so the one who waits for ``tb-compare`` (a shell, a script, the bench) does not wait
for the kernel to free it.

A process's exit is over for its waiter only once the kernel has torn down its address space:
every anonymous page freed, and the hand-off files of the parsed profiles (unlinked tmpfs files,
each still open through its ``mmap``) truncated page by page when their last descriptor closes.
On the npu_500mb pair that was ~0.04-0.1 s between ``os._exit`` and the exit (perf: ~half
``exit_mmap``, half ``shmem_evict_inode``), after the answer was out.

:func:`hand_over` (Linux, glibc, x86-64 / aarch64 only; anything else, or any failure: nothing
happens) first closes every descriptor but those of unlinked regular files (the pipes, sockets
and terminals: a reader of our stdout sees its end of file now, the fork server and the resource
tracker their end; a file still named elsewhere keeps no lock alive), then starts a process that
shares this address space (``clone(CLONE_VM)``, no copy: no page table is duplicated) and holds
its own copy of the remaining descriptors, with every signal blocked, that runs one C call
(``usleep``) and exits.  This process then exits at once (the address space and the files are not
its last reference); the other one, reparented to init, frees them when it ends.  It runs no
Python code, sees no Python object and inherits no handler that could run one."""
from __future__ import annotations

import os
import stat
import sys

LINGER_US = 100_000
"""How long the process that takes over the teardown waits before it exits (microseconds): long
enough for this process to be gone first, so that it is the last to hold the memory."""

_STACK = 64 << 10


def _close_all_but_unlinked_files() -> None:
    try:
        fds = [int(fd) for fd in os.listdir("/proc/self/fd")]
    except OSError:
        return
    for fd in fds:
        try:
            st = os.fstat(fd)
        except OSError:                 # the listing's own descriptor, already gone
            continue
        if stat.S_ISREG(st.st_mode) and st.st_nlink == 0:
            continue                    # its last close would free its pages here: the other one's
        try:
            os.close(fd)
        except OSError:
            pass


def hand_over() -> bool:
    """Hand this process's teardown to a process that outlives it (see the module); call right
    before ``os._exit``, with everything flushed and the exit hooks run: the standard streams
    and every pipe are closed here.  True when it was handed over."""
    if not sys.platform.startswith("linux") or os.uname().machine not in ("x86_64", "aarch64"):
        return False
    try:
        import ctypes
        import signal
        libc = ctypes.CDLL(None, use_errno=True)
        clone, usleep = libc.clone, libc.usleep
        clone.restype = ctypes.c_int
        clone.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
        stack = ctypes.create_string_buffer(_STACK)
        top = (ctypes.addressof(stack) + _STACK - 64) & ~0xF
        fn = ctypes.cast(usleep, ctypes.c_void_p).value
    except (OSError, AttributeError, ValueError, TypeError):
        return False
    _close_all_but_unlinked_files()
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    except (OSError, ValueError):
        return False
    pid = clone(fn, top, 0x100 | signal.SIGCHLD, LINGER_US)    # CLONE_VM
    _HELD.append(stack)
    return pid > 0


_HELD: list = []                        # the other process's stack: never freed by this one
