"""The package's numba kernels read back without importing numba: one bundle file per kernel module.

Importing numba and loading a module's compiled kernels from numba's JIT cache costs ~0.2 s of
CPU per process (numba's import, its typing and target set-up, the cache index); the kernels
themselves need far less: numba's three C extensions (its runtime NRT, the C helpers, the
function-object type), ``llvmlite.binding`` to link machine code, and each compiled function's
object code and constants.  A bundle holds exactly that for one kernel module (its object code as
numba's cache has it, the runtime's object code, each overload's wrapper and environment symbols,
constants and argument types, and the module's plain constants); :func:`load` links it with
llvmlite's MCJIT in ~0.03-0.06 s and hands back a namespace with the same names as the module:
its constants, and one :class:`Kernel` per numba function.

- :func:`provide` is what a caller uses: the bundle's namespace when one is valid here, else the
  module imported with numba (its kernels loaded from numba's cache while a :func:`capturing`
  context records their object code), after which the bundle is written (:func:`save`) for the
  next process.  A namespace that fails the caller's check is dropped and numba's module used.
- A :class:`Kernel` checks its arguments' types in Python (the compiled wrapper trusts its caller)
  and calls the overload numba compiled for exactly those types; any other types are handed to the
  numba function itself (numba is imported then), so a bundle never changes an answer.
- A bundle is used only when its key matches: the SHA-1 of the module's source, of the package
  modules it imports and of this file, numba's and llvmlite's installed files (size and time),
  Python's version, the host CPU and its features, and every ``NUMBA_*`` setting but the cache
  folder; with a ``.numba_config.yaml`` in the working folder (numba reads settings from it)
  bundles are not used.  The file carries the SHA-1 of its payload;
  a damaged, stale or foreign file is ignored (and written again after numba's load), and every
  external symbol the object code needs is checked to resolve before anything is linked.
- Linux ELF objects only (the undefined-symbol check reads ELF); elsewhere numba is used as before.
  ``TB_COMPARE_JIT_BUNDLE=0`` turns bundles off.

Bundles live in the JIT cache folder (``$NUMBA_CACHE_DIR``, which every caller sets from
:func:`.jit.cache_dir` first), next to numba's own cache (``TB_COMPARE_JIT_BUNDLE_DIR`` names
another folder).
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import pickle
import re
import struct
import sys
import threading
import types

from ..envflags import switched_off

MAGIC = b"TBC-JIT-BUNDLE 1\n"
ENV_SWITCH = "TB_COMPARE_JIT_BUNDLE"
DIR_ENV = "TB_COMPARE_JIT_BUNDLE_DIR"
"""Where bundles are kept when set (the tests' scratch folders); else the JIT cache folder."""

_lock = threading.RLock()
_loaded: dict = {}                  # module name -> namespace, or None (no valid bundle here)
_why: dict = {}                     # module name -> why no bundle was used
_runtime: dict = {}                 # numba's C extensions and llvmlite.binding, once set up
_stamp: list = []                   # the installation part of the key, once computed


def enabled() -> bool:
    """Whether bundles may be used in this process (Linux, little-endian, not switched off, no
    numba settings file in the working folder)."""
    return (sys.platform.startswith("linux") and sys.byteorder == "little" and not switched_off(ENV_SWITCH)
            and not os.path.exists(".numba_config.yaml"))


def why_not(modname: str) -> str | None:
    """Why :func:`load` gave no bundle for ``modname`` (None: it gave one, or was not asked)."""
    return _why.get(modname)


# -- the key ---------------------------------------------------------------------------------------
def _package_dir(name: str) -> str:
    spec = importlib.util.find_spec(name)           # (finds the package without importing it)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"{name} is not installed")
    return next(iter(spec.submodule_search_locations))


def _extension(folder: str, name: str) -> str:
    for sfx in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(folder, name + sfx)
        if os.path.exists(path):
            return path
    raise ImportError(f"no {name} extension in {folder}")


def _extensions() -> dict:
    nb = _package_dir("numba")
    return {"numba._helperlib": _extension(nb, "_helperlib"), "numba._dynfunc": _extension(nb, "_dynfunc"),
            "numba.core.runtime._nrt_python": _extension(os.path.join(nb, "core", "runtime"), "_nrt_python")}


def _install_stamp() -> str:
    """numba's and llvmlite's installed files, Python, the platform and the ``NUMBA_*`` settings."""
    if _stamp:
        return _stamp[0]
    nb, llv = _package_dir("numba"), _package_dir("llvmlite")
    files = [os.path.join(nb, "__init__.py"), os.path.join(llv, "__init__.py"), *_extensions().values()]
    binding = os.path.join(llv, "binding")
    files += sorted(os.path.join(binding, f) for f in os.listdir(binding) if f.startswith("libllvmlite"))
    stats = []
    for f in files:
        st = os.stat(f)
        stats.append((f, st.st_size, st.st_mtime_ns))
    settings = sorted((k, v) for k, v in os.environ.items() if k.startswith("NUMBA_") and k != "NUMBA_CACHE_DIR")
    _stamp.append(repr((sys.version, sys.platform, os.uname().machine, stats, settings)))
    return _stamp[0]


def _source(modname: str) -> str:
    spec = importlib.util.find_spec(modname)
    if spec is None or not spec.origin:
        raise ImportError(f"no source for {modname}")
    return spec.origin


_RELATIVE = re.compile(rb"^from (\.+)([\w.]*) import ([\w, ()]+)", re.M)


def _sources(modname: str) -> list:
    """The sources (bytes, by module name) of ``modname`` and of the package's modules it imports
    (relative imports, followed): numba links a called kernel's code into its caller's, and the
    constants come from them too, so a change in any of them makes the bundle stale."""
    seen: dict = {}
    todo = [modname]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        with open(_source(name), "rb") as f:
            text = seen[name] = f.read()
        pkg = name.rsplit(".", 1)[0]
        for dots, rest, names in _RELATIVE.findall(text):
            base = pkg.rsplit(".", len(dots) - 1)[0] if len(dots) > 1 else pkg
            if rest:
                todo.append(f"{base}.{rest.decode()}")
            else:                               # from . import a, b
                todo += [f"{base}.{n.strip()}" for n in names.decode().strip("()").split(",") if n.strip()]
    return [seen[n] for n in sorted(seen)]


def _key(modname: str) -> str:
    """The bundle key of ``modname`` here (see the module's docstring)."""
    import llvmlite.binding as ll
    with open(__file__, "rb") as f:                    # (this file: the bundle's layout and type keys)
        h = hashlib.sha1(f.read())
    for text in _sources(modname):
        h.update(text)
    src = h.hexdigest()
    cpu = (ll.get_host_cpu_name(), ll.get_host_cpu_features().flatten())
    return hashlib.sha1(repr((modname, src, _install_stamp(), cpu)).encode()).hexdigest()


def _path(modname: str, key: str) -> str:
    d = os.environ.get(DIR_ENV) or os.environ.get("NUMBA_CACHE_DIR")     # (see :func:`provide`)
    if not d:
        raise OSError("no JIT cache folder")
    return os.path.join(d, f"tbc-bundle-{modname.rsplit('.', 1)[-1]}-{key[:20]}.bin")


# -- argument types --------------------------------------------------------------------------------
_LAYOUT = ("A", "C", "F", "C")         # by the array's flags & 3 (C-, F-contiguous): numba's layout
_DTYPE_STR: dict = {}                   # dtype -> its canonical text ('<i8' for 'l' and 'q' alike)


_ND: list = []                          # [numpy.ndarray, numpy.generic] once numpy is imported here


def _arg_key(a, _layout=_LAYOUT, _dts=_DTYPE_STR, _nd=_ND):
    """The type numba gives ``a`` when it picks an overload, as a hashable tuple (None: a type the
    bundle does not tell apart; numba decides): an array's (dtype, ndim, layout, writeable), a
    scalar's ("S", dtype).  (Called for every argument of every call: numpy's types are looked up
    once, not imported per call.)"""
    if not _nd:
        import numpy as np
        _nd += [np.ndarray, np.generic]
    if type(a) is _nd[0]:
        f = a.flags.num
        d = a.dtype
        s = _dts.get(d)
        if s is None:
            s = _dts[d] = d.str
        return (s, a.ndim, _layout[f & 3], (f & 0x400) != 0)        # (0x400: NPY_ARRAY_WRITEABLE)
    t = type(a)
    if t is bool:
        return ("S", "|b1")
    if t is int:
        return ("S", "<i8") if -(1 << 63) <= a < (1 << 63) else None
    if t is float:
        return ("S", "<f8")
    if isinstance(a, _nd[1]):
        return ("S", a.dtype.str)
    return None


def _sig_key(sig):
    """:func:`_arg_key`'s tuple for each of numba's argument types (None: one it does not cover)."""
    import numpy as np
    from numba.core import types as nt
    from numba.np.numpy_support import as_dtype
    out = []
    for t in sig:
        if isinstance(t, nt.Array) and t.aligned:
            out.append((np.dtype(as_dtype(t.dtype)).str, t.ndim, t.layout, bool(t.mutable)))
        elif isinstance(t, (nt.Integer, nt.Float, nt.Boolean)) and not isinstance(t, nt.Literal):
            out.append(("S", np.dtype(as_dtype(t)).str))
        else:
            return None
    return tuple(out)


class Kernel:
    """One numba function of a bundle: its overloads by argument types; arguments of other types
    go to numba's own function (imported then)."""

    __slots__ = ("__name__", "_modname", "_by_key", "_numba")

    def __init__(self, modname: str, name: str, by_key: dict) -> None:
        self.__name__ = name
        self._modname = modname
        self._by_key = by_key
        self._numba = None

    def __call__(self, *args):
        try:
            f = self._by_key.get(tuple(map(_arg_key, args)))
        except TypeError:               # (an unhashable argument)
            f = None
        if f is None:
            f = self._numba
            if f is None:
                f = self._numba = getattr(importlib.import_module(self._modname), self.__name__)
        return f(*args)

    def __repr__(self) -> str:
        return f"<bundled kernel {self._modname}.{self.__name__} ({len(self._by_key)} overloads)>"


# -- reading a bundle ------------------------------------------------------------------------------
def _load_extension(name: str, path: str):
    """numba's C extension ``name`` from its file, numba itself not imported (a later ``import numba``
    finds it initialised: single-phase extensions are kept by their file and name)."""
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def _set_up_runtime(math_names) -> dict:
    """numba's C extensions loaded and the symbols numba gives LLVM registered (as numba does on
    import: its runtime, its C helpers, ``None`` and the built-in exceptions); once per process."""
    if _runtime:
        return _runtime
    import builtins

    import llvmlite.binding as ll
    if "numba" in sys.modules:                      # numba's own, already set up
        from numba import _dynfunc, _helperlib
        from numba.core.runtime import _nrt_python as nrt
        helper, dyn = _helperlib, _dynfunc
    else:
        ext = _extensions()
        nrt = _load_extension("numba.core.runtime._nrt_python", ext["numba.core.runtime._nrt_python"])
        helper = _load_extension("numba._helperlib", ext["numba._helperlib"])
        dyn = _load_extension("numba._dynfunc", ext["numba._dynfunc"])
        nrt.memsys_use_cpython_allocator()
    ll.initialize_native_target()
    ll.initialize_native_asmprinter()
    ll.add_symbol("_Py_NoneStruct", id(None))
    for helpers in (helper.c_helpers, dyn.c_helpers):
        for name, addr in helpers.items():
            ll.add_symbol("numba_" + name, addr)
    for obj in builtins.__dict__.values():
        if isinstance(obj, type) and issubclass(obj, BaseException):
            ll.add_symbol(f"PyExc_{obj.__name__}", id(obj))
    for name, addr in nrt.c_helpers.items():
        ll.add_symbol(name if name.startswith("_") else "NRT_" + name, addr)
    for name in math_names:
        if name in helper.c_helpers:
            ll.add_symbol(name, helper.c_helpers[name])
    unpickle = None
    if "numba" not in sys.modules:                  # (numba's own stays numba's)
        unpickle = _unpickler()
        ll.add_symbol("numba_unpickle", ctypes.cast(unpickle, ctypes.c_void_p).value)
    _runtime.update(ll=ll, dyn=dyn, nrt=nrt, unpickle=unpickle)
    return _runtime


def _unpickler():
    """A C-callable stand-in for numba's ``numba_unpickle`` (compiled code reads the Python objects
    it needs, such as ``numpy.ndarray`` for an array it returns, from pickled bytes), which imports
    numba to unpickle them: this one unpickles with :mod:`pickle` and keeps each object by the
    address of its bytes, as numba does (an object pickled by value still imports numba's cloudpickle)."""
    memo: dict = {}

    def unpickle(data, n, hashed):
        obj = memo.get(data, memo)
        if obj is memo:
            obj = memo[data] = pickle.loads(ctypes.string_at(data, n))
        return obj

    return ctypes.CFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)(unpickle)


def _read(path: str, key: str) -> dict:
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + 20:
        raise ValueError("not a bundle")
    digest, payload = data[len(MAGIC):len(MAGIC) + 20], data[len(MAGIC) + 20:]
    if hashlib.sha1(payload).digest() != digest:
        raise ValueError("damaged (checksum)")
    b = pickle.loads(payload)
    if not isinstance(b, dict) or b.get("key") != key:
        raise ValueError("another key")
    return b


def _link(modname: str, b: dict):
    rt = _set_up_runtime(b["math"])
    ll, dyn = rt["ll"], rt["dyn"]
    target = ll.Target.from_default_triple()
    tm = target.create_target_machine(cpu=ll.get_host_cpu_name(), features=ll.get_host_cpu_features().flatten(),
                                      codemodel="jitdefault")
    engine = ll.create_mcjit_compiler(ll.parse_assembly(""), tm)    # (makes the process's symbols visible)
    missing = [s for s in b["undefined"] if not ll.address_of_symbol(s)]
    if missing:         # (LLVM would end the process on linking them)
        raise RuntimeError(f"symbols that do not resolve here: {', '.join(missing[:5])}")
    engine.add_object_file(ll.ObjectFileRef.from_data(b["nrt"]))
    for obj in b["objects"]:
        engine.add_object_file(ll.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    ns = types.ModuleType(modname, f"{modname}'s kernels, read from a bundle ({__name__})")
    ns.__dict__.update(b["consts"])
    for name, overloads in b["kernels"].items():
        by_key = {}
        for argkey, wrapper, env_name, consts in overloads:
            fn = engine.get_function_address(wrapper)
            slot = engine.get_global_value_address(env_name)
            if not fn or not slot:
                raise RuntimeError(f"{name}: a symbol missing from the object code")
            env = dyn.Environment(ns.__dict__)
            env.consts[:] = consts
            ctypes.c_void_p.from_address(slot).value = id(env)
            by_key[argkey] = dyn.make_function(ns, name, f"compiled {name} (bundle)", fn, env, (engine, env))
        setattr(ns, name, Kernel(modname, name, by_key))
    ns.__bundle_engine__ = engine
    return ns


def load(modname: str):
    """The namespace of ``modname``'s kernels from its bundle, or None (no valid bundle here, or
    bundles are off: :func:`why_not` says which)."""
    with _lock:
        if modname in _loaded:
            return _loaded[modname]
        ns = None
        try:
            if not enabled():
                raise RuntimeError(f"bundles are off here ({ENV_SWITCH}, platform or .numba_config.yaml)")
            key = _key(modname)
            b = _read(_path(modname, key), key)
            ns = _link(modname, b)
        except Exception as e:  # noqa: BLE001 - numba's own load is the fallback
            _why[modname] = f"{type(e).__name__}: {e}"
        _loaded[modname] = ns
        return ns


def _use_folder(folder: str) -> None:
    """``folder`` as numba's cache folder (and the bundles'): ``NUMBA_CACHE_DIR`` when not set
    (numba reads it when first imported), numba's setting when numba was imported without one."""
    if not folder:
        return
    os.environ.setdefault("NUMBA_CACHE_DIR", folder)
    if "numba" in sys.modules:
        from numba.core import config
        if not config.CACHE_DIR:
            config.CACHE_DIR = folder


def provide(modname: str, check=None, folder: str = ""):
    """``modname``'s kernels: its bundle's namespace when there is a valid one and ``check(ns)``
    passes, else the module imported with numba (``check(module)`` run while its loads are recorded,
    then its bundle written).  ``folder``: the JIT cache folder (:func:`.jit.cache_dir`), used when
    none is set yet.  numba's errors propagate."""
    _use_folder(folder)
    ns = load(modname)
    if ns is not None:
        try:
            if check is not None:
                check(ns)
            return ns
        except Exception as e:  # noqa: BLE001 - numba's module instead
            with _lock:
                _loaded[modname] = None
                _why[modname] = f"the bundle failed its check ({type(e).__name__}: {e})"
    with capturing() as objects:
        mod = importlib.import_module(modname)
        if check is not None:
            check(mod)
    if enabled():
        save(mod, objects)
    return mod


# -- writing a bundle ------------------------------------------------------------------------------
@contextlib.contextmanager
def capturing():
    """While inside, the object code of every library numba reads back from its cache is recorded
    (yielded: ``id(library)`` -> (library, object code)); outside numba's expected shape, nothing is recorded."""
    objects: dict = {}
    try:
        from numba.core import codegen
        cls = codegen.CPUCodeLibrary
        own = cls.__dict__["_unserialize"]
        own_fn = own.__func__
    except Exception:  # noqa: BLE001 - another numba: nothing recorded, no bundle
        yield objects
        return

    def _unserialize(klass, cg, state):
        lib = own_fn(klass, cg, state)
        try:
            _, kind, data = state
            if kind == "object":
                objects[id(lib)] = (lib, bytes(data[0]))
        except Exception:  # noqa: BLE001
            pass
        return lib

    cls._unserialize = classmethod(_unserialize)
    try:
        yield objects
    finally:
        cls._unserialize = own


def _elf_symbols(obj: bytes):
    """(defined, undefined) global symbol names of a little-endian ELF64 object."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        raise ValueError("not a little-endian ELF64 object")
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
    defined, undefined = set(), set()
    for sec in secs:
        if sec[1] != 2:                                         # SHT_SYMTAB
            continue
        _, _, _, _, off, size, link, _, _, ent = sec
        stroff = secs[link][4]
        for p in range(off, off + size, ent or 24):
            st_name, st_info, _, st_shndx, _, _ = struct.unpack_from("<IBBHQQ", obj, p)
            if not st_name:
                continue
            end = obj.index(b"\0", stroff + st_name)
            name = obj[stroff + st_name:end].decode()
            if st_shndx == 0:
                undefined.add(name)
            elif st_info >> 4 in (1, 2):                       # GLOBAL, WEAK
                defined.add(name)
    return defined, undefined


def _runtime_object() -> bytes:
    """The object code of numba's runtime LLVM functions (NRT), compiled by numba's codegen."""
    import llvmlite.binding as ll
    from numba.core.registry import cpu_target
    from numba.core.runtime import nrtdynmod
    ctx = cpu_target.target_context
    ir_mod, _ = nrtdynmod.create_nrt_module(ctx)
    mod = ll.parse_assembly(str(ir_mod))
    mod.verify()
    return ctx.codegen()._tm.emit_object(mod)


def _plain(value) -> bool:
    import numpy as np
    if isinstance(value, (bool, int, float, str, bytes, np.generic)):
        return True
    if isinstance(value, (tuple, frozenset)):
        return all(_plain(v) for v in value)
    return False


def save(mod, objects: dict) -> str | None:
    """Write ``mod``'s bundle (its loaded overloads, whose object code ``objects`` recorded); None
    and nothing written when an overload was compiled rather than read back, or has argument types
    a bundle does not tell apart.  Returns the path written."""
    try:
        from numba.core import intrinsics
        kernels, used = {}, {}
        for name, f in vars(mod).items():
            if not (hasattr(f, "py_func") and hasattr(f, "overloads")) or getattr(f, "__module__", None) != mod.__name__:
                continue
            overloads = []
            for sig, cres in f.overloads.items():
                argkey = _sig_key(sig)
                got = objects.get(id(cres.library))
                if argkey is None or got is None or got[0] is not cres.library:
                    return None
                used[id(cres.library)] = got[1]
                overloads.append((argkey, cres.fndesc.llvm_cpython_wrapper_name, cres.fndesc.env_name,
                                  list(cres.environment.consts)))
            if overloads:
                kernels[name] = overloads
        if not kernels:
            return None
        nrt = _runtime_object()
        defined, undefined = _elf_symbols(nrt)
        for obj in used.values():
            d, u = _elf_symbols(obj)
            defined |= d
            undefined |= u
        key = _key(mod.__name__)
        b = {"key": key, "module": mod.__name__, "nrt": nrt, "objects": list(used.values()), "kernels": kernels,
             "consts": {k: v for k, v in vars(mod).items() if not k.startswith("__") and _plain(v)},
             "undefined": sorted(undefined - defined), "math": sorted(intrinsics.INTR_MATH)}
        payload = pickle.dumps(b, protocol=pickle.HIGHEST_PROTOCOL)
        path = _path(mod.__name__, key)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(MAGIC + hashlib.sha1(payload).digest() + payload)
        os.replace(tmp, path)
    except Exception:  # noqa: BLE001 - no bundle: numba's load next time too
        return None
    _prune(path)
    return path


def _prune(path: str, days: float = 7) -> None:
    """Remove the module's bundles for other keys unused for ``days`` (another numba, CPU or source;
    two installations sharing the folder keep theirs)."""
    import time
    prefix = os.path.basename(path).rsplit("-", 1)[0] + "-"
    folder = os.path.dirname(path)
    with contextlib.suppress(OSError):
        for old in os.listdir(folder):
            p = os.path.join(folder, old)
            if old.startswith(prefix) and old.endswith(".bin") and p != path:
                with contextlib.suppress(OSError):
                    st = os.stat(p)
                    if time.time() - max(st.st_atime, st.st_mtime) > days * 86400:
                        os.remove(p)
