"""The CLI's workbook written by two processes at once (``tb-compare --xlsx``; never the plugin's).

After both sides are in, the CLI process is alone on the machine's cores; the workbook's
operator or module sheets (the biggest engine and the biggest sheet XML: ``ModuleCompare``,
``OperatorCompare``) are then made by a forked process while this one makes the JSON and the
other sheets.  The workbook is the same, cell for cell and style for style, as
:func:`.xlsx_workbook.write_workbook`'s:

* sheets keep ``ORDER``: this process writes the sheets before the operator group
  (``OverallMetrics``, ``CommunicationCompare``), then hands the style registry and the sheet
  count to the child (message A); the child writes its sheets as the next ones into a zip of
  its own (an unnamed temporary file) and hands back its sheet names, defined names, notes and
  the registry it left (message B); this process then writes the rest of the sheets with that
  registry, copies the child's deflated parts into the workbook as they are
  (``Workbook.adopt``), and closes it;
* the Summary's notes come in ``ENGINES`` order whichever process met them;
* operator sheets: the child is forked before the operator comparison is made; this process
  sends it the aligned op pairs (message M, right after the fork) and each process makes the
  rest of that comparison, the child cutting the top layer's kernel-detail cells meanwhile;
* module sheets with the JSON asked for: the child matches the op pairs and sends them here
  (message P: this process needs them only for its memory tables; "none" when the matching fails
  there, and this process matches them itself), then the operator statistics (message O: the
  ``operator`` analysis table, which the JSON's operator table and the ``Operators`` sheet
  read), so the operator comparison is made only there (this process is the longer of the two on
  a module pair); "no ops" when it fails there, and this process makes it.
* operator sheets with the JSON asked for: the child sends back the operator statistics it
  makes for its sheets anyway (message O, after M), as on a module pair, but the JSON takes them
  only when they are in already (``PAIRS_OPS_WAIT``), else makes them here as before;
* module sheets: the child then makes the memory peak, API and kernel comparisons (message E,
  after O; ``EXTRAS``, for the selected groups), which this process seeds into its comparison
  after its memory tables (waiting at most ``OPS_WAIT`` for them, else making them itself); one
  that fails there is left out of E and met here.

Only ``fork`` on Linux, from the CLI's main thread before its tail starts any thread of its own
(``cli._answer``).  The child restores the default SIGINT / SIGTERM, dies with its parent
(``PR_SET_PDEATHSIG``), and leaves with ``os._exit`` (no exit hooks: they are the parent's).
A failure in the child comes back as :class:`WriterFailed` (a ValueError as a ValueError, as
the one-process writer raises it); the target is written under a temporary name and renamed
only once everything is in, so a failure never leaves a half-written workbook.
"""
from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
import tempfile
import threading

from ..gcpause import gc_paused
from ..timing import mark
from . import xlsx_style as S
from .xlsx_style import StyleBook, write_sheet
from .xlsx_workbook import (ENGINES, ORDER, _both_have_modules, check_sheets, complete, labels, open_target,
                            plan_sheets)
from .xlsx_writer import Workbook

PREFIX = ("overall", "communication")          # this process, before the child's sheets
CHILD = ("operator",)                          # the child
REST = ("memory", "api", "kernel", "steps")    # this process, after them
_FIRST = (S.OVERALL.name, S.COMMUNICATION.name)     # the sheets written before the child's
ENV = "TB_COMPARE_XLSX_SPLIT"                  # "0": never split
OPS_WAIT = 0.05                                # s the JSON waits for the child's operator statistics
PAIRS_OPS_WAIT = 0.0                           # on operator sheets: taken only when already in (the
                                               # child makes them after message M; often not in time)
# results the child makes for this process on a module pair (message E), by sheet group: engines
# this process's later sheets read that need nothing the child lacks (the child is the shorter)
EXTRAS = (("memory_peak", "memory"), ("api", "api"), ("kernels", "kernel"))


class WriterFailed(Exception):
    """The workbook's child process failed (its one-line reason)."""


def wanted(sheets, cmp=None) -> bool:
    """Whether the CLI splits its workbook: a fork-capable Linux and the operator group selected
    (``sheets``: the CLI's selection, None = all).  ``TB_COMPARE_XLSX_SPLIT``: "0" never.
    (``cmp``: unused, kept for callers.)  Operator sheets (GPU pairs) are split too since the
    parent gives the fork server back before the tail (``ParsePool.release_fork_server``) and
    forks before it reads the columns: gpu_1gb's tail then peaks at ~0.83 GiB summed, under the
    parse's ~0.96; it was ~1.2 GB when the fork server stayed and the operators were made first."""
    setting = os.environ.get(ENV)
    return (sys.platform.startswith("linux") and hasattr(os, "fork") and setting != "0"
            and (sheets is None or "operator" in sheets))


def _send(fd: int, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    data = struct.pack("<Q", len(data)) + data
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _recv(fd: int):
    """The next message, or None when the other end closed without one."""
    def read(n: int) -> bytes | None:
        parts, got = [], 0
        while got < n:
            b = os.read(fd, n - got)
            if not b:
                return None
            parts.append(b)
            got += len(b)
        return b"".join(parts)
    head = read(8)
    if head is None:
        return None
    body = read(struct.unpack("<Q", head)[0])
    return None if body is None else pickle.loads(body)


def _die_with_parent(parent: int) -> None:
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)      # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - best effort: the parent also kills it when it gives up
        pass
    if os.getppid() != parent:
        os._exit(1)


class SplitWorkbook:
    """One workbook, two processes.  ``SplitWorkbook(cmp, target, sheets)`` forks the child at
    once; :meth:`prefix` writes the first sheets and lets the child go on (call it early);
    :meth:`finish` writes the rest and closes the workbook (the names of the sheets written);
    :meth:`abort` stops the child and removes what was written.  ``target``: a path."""

    def __init__(self, cmp, target: str, sheets=None, operator_table: bool = False) -> None:
        """``operator_table``: the caller will want :meth:`operator_table` (the JSON's)."""
        self.cmp, self.sheets = cmp, check_sheets(sheets)
        self._part = tempfile.TemporaryFile(prefix="tbc-xlsx-part-")
        self._fh, self._finish = open_target(os.fspath(target))
        self.book = self._sb = None
        self._notes_first: list = []
        self._by_name: dict = {}
        self._early: list = []          # a child's message read ahead of its turn (its failure)
        # operator sheets (no module sheets): the op pairs come from this process (message M,
        # right after the fork: ``match_ops`` is the part of the operator comparison both
        # processes read), the rest of the operator comparison is made in each
        self._pairs = not _both_have_modules(cmp)
        # module sheets: the child makes the operator statistics (message O: the JSON's operator
        # table and the Operators sheet read them) from the op pairs this process sends (message
        # M; this process needs them for the memory sheets): the parent is the longer of the two
        # processes on a module pair
        self._ops = bool(operator_table) and not self._pairs
        # module sheets: the child also makes the memory peak, API and kernel comparisons this
        # process's later sheets read (message E, after O), while this process makes the JSON
        # and the memory tables
        # (not on operator pairs: this process wants them right after the JSON, before the child's
        # could be in, and the child is not the shorter there by as much)
        self._extras = () if self._pairs else tuple(n for n, g in EXTRAS if self.sheets is None or g in self.sheets)
        # operator sheets with the JSON asked for: the child, which makes the operator comparison
        # for its sheets, sends back its operator statistics too (message O, after M)
        self._table = bool(operator_table)
        # the child's messages before B, in the order it sends them: on a module pair with the
        # JSON the child matches the op pairs itself and sends them here (message P: this process
        # needs them only for its memory tables), then O; then E
        self._due = (["pairs"] if self._ops else []) + (["ops"] if self._table else []) + \
            (["extras"] if self._extras else [])
        mark("xlsx: forking")
        self.pid = self._a = self._b = None
        a_r, a_w = os.pipe()
        b_r, b_w = os.pipe()
        if self._pairs or self._ops:    # message M / P (~150 KB on the 1 GB pair) sent without waiting for the reader
            try:
                import fcntl
                fcntl.fcntl(a_w if self._pairs else b_w, fcntl.F_SETPIPE_SZ, 1 << 20)
            except (ImportError, AttributeError, OSError):
                pass
        parent = os.getpid()
        # a stop signal's handler must not run inside os.fork's exit hooks (logging's: Python
        # ignores what they raise, so the stop would be lost): blocked until the child is known
        stops = {signal.SIGINT, signal.SIGTERM}
        was = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
        try:
            pid = os.fork()
            if pid == 0:                                        # the child: never returns
                os.close(a_w)
                os.close(b_r)
                _child(cmp, self.sheets, self._part, a_r, b_w, parent, was, self._pairs, self._ops, self._extras,
                       self._table)
            self.pid, self._a, self._b = pid, a_w, b_r
            _LIVE.add(self)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, was)
        try:
            os.close(a_r)
            os.close(b_w)
            if self._pairs:
                self._send_pairs()
        except BaseException:
            self.abort()
            raise

    def _send_pairs(self) -> None:
        """Message M: the aligned op pairs (``Comparison.matched``'s node arrays), or "none" when
        they fail here (the child then meets the failure itself, as the one-process writer does)."""
        try:
            m = self.cmp.matched()
            msg = ("pairs", m.b_nodes, m.t_nodes, m.segment, m.bwd)
        except Exception:  # noqa: BLE001 - reported where the sheets are planned
            msg = ("none",)
        try:
            _send(self._a, msg)
        except BrokenPipeError:                 # the child is gone: its own reason, if it gave one
            self._answer()
            raise WriterFailed("the workbook's second process stopped early")
        mark("xlsx: pairs sent")

    def prefix(self) -> None:
        """The sheets before the child's, then message A (the child waits for it)."""
        try:
            with gc_paused():
                planned = plan_sheets(self.cmp, self.sheets, self._notes_first, PREFIX)
                self._by_name = {d.layout.name: d for d in planned}
                self.book = Workbook(self._fh, compresslevel=6)
                self._sb = StyleBook(self.book.styles)
                base_label, target_label = labels(self.cmp)
                for name in _FIRST:
                    d = self._by_name.get(name)
                    if d is not None and (d.rows or d.blocks):
                        write_sheet(self.book, self._sb, d, base_label, target_label)
                self.book.close_sheet()
            try:
                _send(self._a, (self.book.styles, self._sb._cache, list(self.book.sheet_names)))
            except BrokenPipeError:             # the child is gone: its own reason, if it gave one
                self._answer()
                raise WriterFailed("the workbook's second process stopped early")
            mark("xlsx: first sheets written")
        except BaseException:
            self.abort()
            raise
        finally:
            if self._a is not None:
                os.close(self._a)
                self._a = None

    def finish(self) -> list[str]:
        try:
            with gc_paused():
                return self._finish_book()
        except BaseException:
            self.abort()
            raise

    def _finish_book(self) -> list[str]:
        if self._a is not None:
            self.prefix()
        cmp, book, sb = self.cmp, self.book, self._sb
        notes_rest: list = []
        self._take("pairs", OPS_WAIT)           # (not in: the memory engine matches them here)
        planned = plan_sheets(cmp, self.sheets, notes_rest, ("memory:tables",))
        failed = bool(notes_rest)               # (the memory group fails whole, as plan_sheets' "memory")
        if "extras" in self._due:
            mark("xlsx: extras in" if self._take("extras", OPS_WAIT) else "xlsx: extras made here")
        planned += plan_sheets(cmp, self.sheets, notes_rest, REST[1:] if failed else ("memory:extras", *REST[1:]))
        msg = self._answer()
        _, names, styles, cache, notes_child, planned_child, rows_child = msg
        any_child = rows_child > 0
        if rows_child + sum(len(d.rows) for d in planned) > 50_000:   # the one-process writer's rule:
            book.compresslevel = book.big_level = 1                   # the quicker deflate from here on
        mark("xlsx: child's sheets counted")
        book.styles = sb.styles = styles
        sb._cache = cache
        first = len(book.sheet_names)
        at = book.reserve(names)
        by_name = dict(self._by_name)
        by_name.update({d.layout.name: d for d in planned})
        by_name.update({name: None for name in planned_child})     # the child's: written there
        notes = self._notes_first + notes_child + notes_rest
        extra = complete(cmp, self.sheets, by_name, notes,
                         any_child or any(d is not None and d.rows for d in by_name.values()))
        base_label, target_label = labels(cmp)
        written = set(_FIRST)
        for d in [by_name.get(name) for name in ORDER if name not in written] + extra:
            if d is not None and (d.rows or d.blocks):
                write_sheet(book, sb, d, base_label, target_label)
        book.close_sheet()
        _, defined = self._answer()
        mark("xlsx: child's sheets in")
        book.adopt(self._part, [f"xl/worksheets/sheet{i}.xml" for i in range(first + 1, first + len(names) + 1)],
                   defined, at)
        book.close()
        self._reap(wait=False)          # its parts are in: its exit need not hold this one up
        self._part.close()
        self._finish(True)
        _LIVE.discard(self)
        return list(book.sheet_names)

    def operator_table(self, compute, wait: float | None = None):
        """``compute()`` (the JSON's operator table) with the child's operator statistics
        (message O: the ``operator`` analysis table, ``cmp.operators().stats``) seeded into the
        comparison when it made them, so that neither this table nor the ``Operators`` sheet
        makes the operator comparison here; when it could not, this process makes it (and meets
        any failure itself).  Message O not in within ``wait`` s (``OPS_WAIT``; a busy machine:
        the child is waiting for a core): this process makes them too rather than wait (message O
        is then read and dropped before message B)."""
        if "ops" not in self._due:
            return compute()
        if wait is None:
            wait = PAIRS_OPS_WAIT if self._pairs else OPS_WAIT
        if self._take("ops", wait):
            mark("xlsx: operator table in")
        else:
            mark("xlsx: operator table made here")
        return compute()

    def _take(self, upto: str, wait: float | None) -> bool:
        """Read the child's messages before B (``_due``) in order up to ``upto`` (each seeded into
        the comparison, or noted when it says the child could not make it); False when one is
        not in within ``wait`` s (None: wait for it) or the child failed (its failure is raised
        where the sheets are written)."""
        import select
        while upto in self._due:
            if self._early or self._b is None:   # a failure is queued: nothing comes before it
                self._due.clear()
                return False
            if wait is not None:                # poll, not select: any descriptor number (a
                ready = select.poll()           # process with 1024+ files open, as a test run is)
                ready.register(self._b, select.POLLIN)
                if not ready.poll(max(0, int(wait * 1000))):
                    return False
            kind, msg = self._due.pop(0), _recv(self._b)
            if msg is None or msg[0] == "error":
                self._early.append(msg)
                self._due.clear()
                return False
            if msg[0] == "pairs":
                from ..engines.operator import Matched
                trees = self.cmp.trees()
                self.cmp._memo("matched", lambda: Matched(trees[0], trees[1], *msg[1:]))
            elif msg[0] == "ops":
                self.cmp._memo("analysis:operator", lambda: msg[1])
            elif msg[0] == "extras":
                for name, value in msg[1].items():
                    self.cmp._memo(name, lambda v=value: v)
            elif kind == upto:                  # "none" / "no ops": this process makes it
                return False
        return True

    def _answer(self) -> tuple:
        """The child's next message; its failure raised (a ValueError as a ValueError)."""
        if self._due:                           # messages P, O, E not read: they come first
            self._take(self._due[-1], None)
        msg = self._early.pop(0) if self._early else _recv(self._b)
        if msg is None or msg[0] == "error":
            self._reap()
        if msg is None:
            raise WriterFailed("the workbook's second process ended without an answer")
        if msg[0] == "error":
            kind, text = msg[1], msg[2]
            if kind == "ValueError":
                raise ValueError(text)
            raise WriterFailed(f"{kind}: {text}" if text else kind)
        return msg

    def _reap(self, wait: bool = True) -> None:
        """Wait for the child; a death by signal is a failure.  ``wait`` False: once its answer is
        complete; it is collected now if it is gone, else by a thread when it is."""
        if self.pid is None:
            return
        pid, self.pid = self.pid, None
        if not wait:
            if os.waitpid(pid, os.WNOHANG)[0] == 0:
                threading.Thread(target=os.waitpid, args=(pid, 0), name="xlsx-reap", daemon=True).start()
            return
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            raise WriterFailed(f"the workbook's second process was killed by signal {os.WTERMSIG(status)}")

    def abort(self) -> None:
        """Stop the child (if still there) and remove what was written."""
        if self.pid is not None:
            pid, self.pid = self.pid, None
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
        for fd in (self._a, self._b):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._a = self._b = None
        if self.book is not None:
            self.book.discard()
        else:
            try:
                if not isinstance(self._fh, str):
                    self._fh.close()
            except OSError:
                pass
        self._finish(False)
        try:
            self._part.close()
        except OSError:
            pass
        _LIVE.discard(self)

    def kill(self) -> None:
        """For a process about to ``os._exit``: the child killed, the temporary workbook removed
        (no lock taken, nothing waited for)."""
        pid = self.pid
        if pid is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self._finish(False)


_LIVE: set = set()          # the split workbooks of this process under way


def abort_all() -> None:
    """Kill every split workbook's child and remove its temporary file (the CLI's way out after
    a stop that its orderly unwinding did not finish in time)."""
    for w in list(_LIVE):
        try:
            w.kill()
        except Exception:  # noqa: BLE001 - best effort on the way out
            pass


class _DrySheet:
    def row(self, *_a) -> None:
        pass

    rows = row


class _DryBook:
    """What ``write_sheet`` needs of a workbook, writing nothing: the styles its sheets register."""

    def __init__(self) -> None:
        self.sheet_names: list = []

    def add_sheet(self, name, *_a, **_k) -> _DrySheet:
        self.sheet_names.append(name)
        return _DrySheet()


def _take_pairs(cmp, a_r: int) -> bool:
    """In the child, while this process matches the op pairs: OperatorCompare's kernel-detail
    cells of every top-layer op of both sides (the pairs are among them, unless ``max_kernel_num``
    drills into children: those are cut when asked), then message M's pairs as the comparison's
    ``matched``."""
    from .xlsx_cells import MAX_CELL_CHARS
    try:
        trees = cmp.trees()
    except Exception:  # noqa: BLE001 - met again (and noted) where the sheets are planned
        trees = None
    if trees is not None and not getattr(cmp.options, "disable_details", False):
        for tree, step in zip(trees, (cmp.options.base_step, cmp.options.target_step)):
            try:
                tree.keep_details(tree.top_layer(step), MAX_CELL_CHARS)
            except Exception:  # noqa: BLE001 - (a bad step: the matching says so)
                pass
    return _pairs_in(cmp, a_r, trees)


def _pairs_in(cmp, a_r: int, trees) -> bool:
    """In the child: message M's op pairs as the comparison's ``matched`` (False when it holds
    none: the matching failed in this process, or ``trees`` could not be made); the child exits
    when the parent gave up."""
    from ..engines.operator import Matched
    got = _recv(a_r)
    if got is None:                             # the parent gave up
        os._exit(1)
    if got[0] != "pairs" or trees is None:
        return False
    cmp._memo("matched", lambda: Matched(trees[0], trees[1], *got[1:]))
    return True


def _operator_table(cmp, b_w: int) -> None:
    """In the child (module sheets): the op pairs matched here and sent to the parent (message P,
    "none" when the matching fails: the parent then meets the failure itself), then message O,
    the ``operator`` analysis table (the per-name operator statistics the JSON's operator table
    and the ``Operators`` sheet read; "no ops" when the pairs or the statistics fail here: the
    parent then makes them itself and meets the failure)."""
    try:
        m = cmp.matched()
        _send(b_w, ("pairs", m.b_nodes, m.t_nodes, m.segment, m.bwd))
    except Exception:  # noqa: BLE001 - the parent matches them again and reports it
        m = None
        _send(b_w, ("none",))
    mark("xlsx child: pairs sent")
    _operator_stats_out(cmp, m is not None, b_w)


def _extras_out(cmp, names: tuple, b_w: int) -> None:
    """In the child: message E, the comparison results ``names`` (``EXTRAS``) it could make
    (one that fails here is left out: the parent makes it and meets the failure itself)."""
    got = {}
    for name in names:
        try:
            value = getattr(cmp, name)()
            pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            got[name] = value
        except Exception:  # noqa: BLE001 - made again (and reported) by the parent
            pass
    _send(b_w, ("extras", got))
    mark("xlsx child: extras sent")


def _operator_stats_out(cmp, got_pairs: bool, b_w: int) -> None:
    """In the child (operator sheets): message O, the ``operator`` analysis table made from message
    M's pairs ("no ops" when they did not come or the table fails here: the parent makes it)."""
    table = None
    if got_pairs:
        try:
            table = ("ops", cmp.analysis("operator"))
        except Exception:  # noqa: BLE001 - the parent computes it again and reports it
            table = None
    _send(b_w, table or ("no ops",))
    mark("xlsx child: operator table sent")


def _child(cmp, sheets, part, a_r: int, b_w: int, parent: int, mask, pairs: bool = False,
           ops: bool = False, extras: tuple = (), table: bool = False) -> None:
    """The forked process: the operator group's sheets into ``part``, between messages A and B
    (``pairs``: message M first, :func:`_take_pairs`, then with ``table`` the JSON's operator
    table back, :func:`_operator_stats_out`; ``ops``: message P, then the JSON's operator table
    back, :func:`_operator_table`; ``extras``: message E, :func:`_extras_out`)."""
    code = 1
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        _die_with_parent(parent)
        with gc_paused():
            if pairs:
                got_pairs = _take_pairs(cmp, a_r)
                mark("xlsx child: pairs in")
                if table:
                    _operator_stats_out(cmp, got_pairs, b_w)
            elif ops:
                _operator_table(cmp, b_w)
            if extras:
                _extras_out(cmp, extras, b_w)
            notes: list = []
            planned = plan_sheets(cmp, sheets, notes, CHILD)
            mark("xlsx child: rows built")
            got = _recv(a_r)
            if got is None:                     # the parent gave up
                os._exit(1)
            styles, cache, names = got
            book = Workbook(part, compresslevel=1 if sum(len(d.rows) for d in planned) > 50_000 else 6)
            book.styles = styles
            book.sheet_names = list(names)
            sb = StyleBook(styles)
            sb._cache = cache
            base_label, target_label = labels(cmp)
            order = {name: i for i, name in enumerate(ORDER)}
            mine = [d for d in sorted(planned, key=lambda d: order.get(d.layout.name, len(order)))
                    if d.rows or d.blocks]
            dry = _DryBook()
            for d in mine:                      # the styles the sheets register, in order (no XML)
                write_sheet(dry, sb, d, base_label, target_label)
            _send(b_w, ("ok", dry.sheet_names, book.styles, sb._cache, notes,
                        [d.layout.name for d in planned], sum(len(d.rows) for d in planned)))
            mark("xlsx child: sheets counted")
            for d in mine:
                write_sheet(book, sb, d, base_label, target_label)
            if mine:
                book.close()
            else:
                book.discard()
            part.flush()
            _send(b_w, ("ok", list(book._defined)))
            mark("xlsx child: sheets written")
        code = 0
    except BaseException as e:  # noqa: BLE001 - every failure goes back as one line
        try:
            _send(b_w, ("error", type(e).__name__, " ".join(str(e).split())))
        except BaseException:  # noqa: BLE001
            pass
    finally:
        os._exit(code)


__all__ = ["ENGINES", "SplitWorkbook", "WriterFailed", "wanted"]
