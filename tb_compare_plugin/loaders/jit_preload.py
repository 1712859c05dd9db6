"""Imported by the parser processes' fork server when the inputs are big (:mod:`.jit_warm`):
loads numba and the compiled scanners once, so every forked parser starts with them.

When every part the load wants has a valid bundle (:mod:`..model.jit_bundle`), numba is not
imported at all: the bundles' object code is linked with llvmlite alone (~0.05 s of CPU instead
of ~0.2 s).  Otherwise numba is loaded as below, and the modules it loads write their bundles for
the next load.

numba's cache load (``numba.core.caching.Cache.load_overload``) first "refreshes" the CPU target:
it imports and registers the implementations of everything numba can compile (numpy functions,
typed containers, random, linear algebra, ...), ~0.15 s of CPU, the largest part of loading the
compiled functions from the JIT cache.  Code read back from the cache needs none of that, only
numba's runtime (NRT) initialised; a compile runs the refresh itself (``CompilerBase``).  So while
the preload loads the compiled functions, a cache load initialises the runtime only
(:func:`_cache_loads_without_refresh`); any failure there takes numba's own path, and after the
preload numba's own load is back (a parser that compiles or loads something else pays the refresh
then, as before).

numba compiles its runtime's own LLVM functions (NRT) in every process, ~0.035 s of CPU with LLVM;
the preload reads them back from their object code in the JIT cache folder instead
(:func:`_runtime_from_cache`, written by the first preload that compiles them), as numba does
for the compiled functions themselves.

A compiled function read back from numba's cache is its object code plus the bitcode of the module
other libraries link it into; numba parses that bitcode and walks it for the symbols it defines on
every load (~40 % of a cached function's load, and the parsed modules stay in memory).  During the
preload the bitcode stays unparsed until something links against it, and the symbols come from an
index in the JIT cache folder keyed by the bitcode's SHA-1 (:func:`_libraries_with_known_symbols`).
"""
from __future__ import annotations

import contextlib
import os
import sys

from ..timing import mark


def _import_numba() -> None:
    """Import numba (without yaml when no ``.numba_config.yaml`` is there to read); an import that
    fails is left for the loaders to meet and report."""
    hide = "yaml" not in sys.modules and not os.path.exists(".numba_config.yaml")
    if hide:
        sys.modules["yaml"] = None          # numba's config: "import yaml" fails, _HAVE_YAML False
    try:
        import numba  # noqa: F401
    except Exception:  # noqa: BLE001 - the scanners' own import says what fails
        pass
    finally:
        if hide and sys.modules.get("yaml", 0) is None:
            del sys.modules["yaml"]


@contextlib.contextmanager
def _cache_loads_without_refresh():
    """While inside: numba's cache loads skip the target's refresh (the runtime is initialised
    instead); numba's own method is used when anything about this is not as expected."""
    try:
        from numba.core.caching import Cache
        from numba.core.runtime import rtsys
        own = Cache.__dict__["load_overload"]
    except Exception:  # noqa: BLE001 - another numba (or none): its own loads, unchanged
        yield
        return

    def load_overload(self, sig, target_context):
        try:
            rtsys.initialize(target_context)
            return self._load_overload(sig, target_context)
        except Exception:  # noqa: BLE001 - numba's own load (refresh first), which says what fails
            return own(self, sig, target_context)

    Cache.load_overload = load_overload
    try:
        yield
    finally:
        Cache.load_overload = own


def _nrt_key(ctx) -> str:
    """The name of the runtime's cached object code for this numba, llvmlite, CPU and settings."""
    import hashlib

    import llvmlite
    import numba
    from numba.core import config
    what = (numba.__version__, llvmlite.__version__, ctx.codegen().magic_tuple(), config.OPT,
            config.DEBUGINFO_DEFAULT, sys.version_info[:2])
    return "tbc-nrt-" + hashlib.sha1(repr(what).encode()).hexdigest()[:20] + ".bin"


def _save_pickle(path: str, value) -> None:
    """``value`` pickled to ``path`` through a temporary file and a rename (a reader never sees half
    a file); a folder that cannot be written is left as it is."""
    import pickle
    try:
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError:
        pass


@contextlib.contextmanager
def _runtime_from_cache(folder: str):
    """While inside: numba's runtime (NRT, its LLVM functions: ~0.035 s of CPU to compile, in every
    process that loads a compiled function) is read from its object code in ``folder`` when that
    is there (~0.005 s), and written there after a compile when not; anything unexpected (another
    numba, an unreadable or stale file) takes numba's own compile."""
    try:
        import pickle

        from numba.core.runtime import nrtdynmod
        own = nrtdynmod.__dict__["compile_nrt_functions"]
    except Exception:  # noqa: BLE001 - another numba: its own compile, unchanged
        own = None
    if own is None or not folder:
        yield
        return

    def compile_nrt_functions(ctx):
        try:
            path = os.path.join(folder, _nrt_key(ctx))
        except Exception:  # noqa: BLE001
            return own(ctx)
        try:
            with open(path, "rb") as f:
                state = pickle.load(f)
            if not (isinstance(state, tuple) and len(state) == 3 and state[:2] == ("nrt", "object")):
                raise ValueError("not the runtime's object code")
            return ctx.codegen().unserialize_library(state)
        except Exception:  # noqa: BLE001 - compiled below (and the file written again)
            pass
        try:
            ir_mod, library = nrtdynmod.create_nrt_module(ctx)
            library.enable_object_caching()
            library.add_ir_module(ir_mod)
            library.finalize()
            state = library.serialize_using_object_code()
        except Exception:  # noqa: BLE001
            return own(ctx)
        _save_pickle(path, state)
        return library

    nrtdynmod.compile_nrt_functions = compile_nrt_functions
    try:
        yield
    finally:
        nrtdynmod.compile_nrt_functions = own


def _symbols_file(folder: str) -> str:
    """The defined-symbol index's path for this numba, llvmlite and Python."""
    import hashlib

    import llvmlite
    import numba
    what = (numba.__version__, llvmlite.__version__, sys.version_info[:2])
    return os.path.join(folder, "tbc-syms-" + hashlib.sha1(repr(what).encode()).hexdigest()[:20] + ".bin")


_LAZY_CLASSES: dict = {}


def _lazy_class(base):
    """``base`` (numba's JIT code library class) whose ``_shared_module`` (the library's LLVM
    module for linking into another library) is parsed from its bitcode on first use."""
    cls = _LAZY_CLASSES.get(base)
    if cls is not None:
        return cls
    import llvmlite.binding as ll

    def get(self):
        d = self.__dict__
        mod = d.get("_tbc_shared")
        if mod is None and d.get("_tbc_bitcode") is not None:
            mod = d["_tbc_shared"] = ll.parse_bitcode(d.pop("_tbc_bitcode"))
        return mod

    def set_(self, mod):
        self.__dict__["_tbc_shared"] = mod
        self.__dict__.pop("_tbc_bitcode", None)

    cls = _LAZY_CLASSES[base] = type(base.__name__, (base,), {
        "_shared_module": property(get, set_), "__module__": __name__,
        "__doc__": "A library read back from numba's cache whose linking module is parsed on first use."})
    return cls


@contextlib.contextmanager
def _libraries_with_known_symbols(folder: str):
    """While inside: a compiled function's library read back from numba's cache (object code plus
    the bitcode of the module other libraries link against) leaves that bitcode unparsed until
    something links against it, and the symbols it defines (numba walks the parsed module for
    them, ~40 % of a cached function's load) come from an index in ``folder`` keyed by the
    bitcode's SHA-1: the same names numba found the last time it parsed those exact bytes.  A
    library not in the index is loaded by numba's own code and its names are added (the index is
    written at the end); anything unexpected takes numba's own load."""
    try:
        import hashlib
        import pickle

        from numba.core import codegen
        lib_cls = codegen.CPUCodeLibrary
        own = lib_cls.__dict__["_unserialize"]
        own_fn = own.__func__
        path = _symbols_file(folder) if folder else ""
    except Exception:  # noqa: BLE001 - another numba: its own loads, unchanged
        yield
        return
    if not path:
        yield
        return
    try:
        with open(path, "rb") as f:
            known = pickle.load(f)
        if not isinstance(known, dict):
            known = {}
    except Exception:  # noqa: BLE001 - none yet, or unreadable: built again
        known = {}
    used: dict = {}

    def _defined(mod) -> frozenset:
        return frozenset(gv.name for gsets in (mod.functions, mod.global_variables) for gv in gsets
                         if not gv.is_declaration)

    def _unserialize(cls, cg, state):
        try:
            name, kind, data = state
            engine = cg._engine
            if kind != "object" or not isinstance(engine._defined_symbols, set):
                return own_fn(cls, cg, state)
            object_code, shared_bitcode = data
            key = hashlib.sha1(shared_bitcode).hexdigest()
        except Exception:  # noqa: BLE001
            return own_fn(cls, cg, state)
        names = known.get(key)
        if not isinstance(names, frozenset):
            lib = own_fn(cls, cg, state)
            used[key] = _defined(lib._shared_module)
            return lib
        lib = cg.create_library(name)
        lib.__class__ = _lazy_class(type(lib))
        lib._tbc_bitcode = shared_bitcode
        lib.enable_object_caching()
        lib._set_compiled_object(object_code)
        lib._finalize_final_module()
        engine._defined_symbols |= names
        used[key] = names
        return lib

    lib_cls._unserialize = classmethod(_unserialize)
    try:
        yield
    finally:
        lib_cls._unserialize = own
        if any(k not in known for k in used):
            merged = dict(known) if len(known) + len(used) <= 256 else {}   # (reading 256: ~4 ms)
            merged.update(used)
            _save_pickle(path, merged)


_ROOT = __package__.rsplit(".", 1)[0]
_BUNDLED = {"kineto": (f"{__package__}._kineto_scan_jit", f"{__package__}._kineto_plan_jit"),
            "ascend": (f"{__package__}._ascend_scan_jit",), "model": (f"{_ROOT}.model._sweeps_jit",)}
"""Each part's kernel modules."""


def _bundled(want) -> bool:
    """Whether every part in ``want`` has a valid bundle here (:mod:`..model.jit_bundle`: its
    kernels linked without importing numba); the bundles read stay loaded for the steps."""
    from ..model import jit_bundle
    return all(jit_bundle.load(m) is not None for p in want for m in _BUNDLED[p])


def warm() -> None:
    """Load the numba parts this load uses (``jit_warm.wanted_parts``: the Kineto scanner and its
    quick plan, the Ascend scanner, the model's kernels; each compiled once per user and numba
    version, then read from the JIT cache); one that cannot run here is left for the child to
    find and report, one not loaded here is loaded by the child that calls it."""
    from . import ascend_fast, jit_warm, kineto_plan, kineto_scan
    from ..model import jit
    d = jit.cache_dir()
    if d and "NUMBA_CACHE_DIR" not in os.environ:   # before numba's first import, which reads it
        os.environ["NUMBA_CACHE_DIR"] = d
    want = jit_warm.wanted_parts()
    steps = []
    if "kineto" in want:
        steps += [kineto_scan.available, kineto_plan.warm]
    if "ascend" in want:
        steps.append(ascend_fast.available)
    if "model" in want:
        steps.append(lambda: jit.kernels(jit.IMPORT_ROWS))
    if _bundled(want):                              # no numba import: every part reads a bundle
        for step in steps:
            try:
                step()
            except Exception:  # noqa: BLE001 - the parser child meets the same failure and says so
                pass
        return
    _import_numba()
    folder = os.environ.get("NUMBA_CACHE_DIR") or d
    with _cache_loads_without_refresh(), _runtime_from_cache(folder), _libraries_with_known_symbols(folder):
        for step in steps:
            try:
                step()
            except Exception:  # noqa: BLE001 - the parser child meets the same failure and says so
                pass


warm()
mark("fork server: numba loaded")
