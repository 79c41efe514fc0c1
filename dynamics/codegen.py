"""Compiled kernels: CasADi functions generated to C, compiled once, cached on disk, called on batches.

A kernel is a CasADi :class:`casadi.Function` of one flat input and flat outputs. Its C code
(CasADi's code generator) gets a loop over a batch appended, ``liftoff_batch(n, in, out)``,
which evaluates the function on ``n`` contiguous rows of ``in`` into ``n`` rows of each
output buffer; :class:`Kernel` calls it through ctypes with numpy buffers, one call per batch.
A kernel writes each output whole (zeros included), or, built ``sparse``, only the entries that
are not zero by structure (its ``patterns``): a stage's derivatives are mostly zeros (ANYmal's
contact stage: 6% of its Hessian), which the sparse kernel neither computes nor writes.
:func:`load_library` compiles a C file of the project (loops over stacked arrays) the same way.

The shared library is cached in ``$LIFTOFF_CACHE`` (default ``$XDG_CACHE_HOME/liftoff`` or
``~/.cache/liftoff``) under a hash of its ``key``: the caller's description of everything
that changes the code (model parameters, kernel signature, the source of the modules that
write the equations), plus the CasADi and liftoff versions and the compiler and its flags. Building
writes to a temporary name and renames into place, under a file lock of that library, so that
processes started together compile it once (and different libraries at the same time); a
library that fails to load or does not answer with its own
key (a truncated or stale file) is rebuilt. A cache that cannot be written (a read-only
folder, a lock that cannot be created) still serves the libraries it holds; what it lacks is
compiled into a temporary cache of the process, removed at its exit, after one warning line.
Without a C compiler, or when it fails, :class:`CompileError` is raised and the caller uses numpy.

Kernels are built in two tiers, since compiling them well takes minutes and a first run should
not wait for it. :func:`load` compiles a missing kernel at once with :data:`FLAGS` (``-O1``: the
ANYmal stage kernels in 10 s) and returns it; then, unless the cache holds it, it starts one
detached compilation of the optimized build (:data:`OPTIMIZED_FLAGS`, ``-O2 -march=native``: a
minute, kernels 25-35% faster), which renames its library into the cache when it is done and which
neither this process nor its exit waits for. Later loads, in this process or the next, take the
optimized library when it is there. It is built for this processor (its key includes the
processor's model and flags, like the libraries of :func:`load_library`), under a lock of its own
so that no two processes compile it together, and without fused multiply-adds: both builds agree
to round-off, though not to the last bit (ANYmal's contact kernel differs in the last digits of
some outputs), which a closed loop sensitive to round-off (a bound) can show. A build that
fails leaves the compiler's messages in ``<name>-<hash>.failed`` instead of the library and is
not tried again. ``LIFTOFF_OPTIMIZE=0`` keeps to the first tier (the test suite sets it).

:func:`load_all` loads the kernels a problem needs together: those to compile are compiled side
by side, one compiler process each, with the C libraries that go with them, while CasADi
generates their code one after the other in the calling process (its graphs are not built by
two threads at once). The compilers are separate processes, so two cores run two of them.

Compiling says so in one line on stderr, unless the caller asks for ``quiet`` or the code runs
within :func:`silent` (a command given ``--quiet``).
"""

from __future__ import annotations

import atexit
import ctypes
import dataclasses
import fcntl
import functools
import hashlib
import importlib.metadata
import json
import os
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import casadi as ca
import numpy as np

from .memory import address

# kernels are long straight-line functions: -O1 compiles them 5x faster than -O2, and the dominator optimizations
# are superlinear in their length (a 100k-instruction kernel: 59 s with, 10 s without); full redundancy
# elimination lengthens the live ranges that register allocation then pays for (ANYmal's impulse kernel: 6.9 s
# with, 3.1 s without, and 8% slower to run; its contact kernel: 5.4 s either way, 4% slower)
FLAGS = ("-O1", "-fno-tree-dominator-opts", "-fno-tree-fre", "-fPIC", "-shared")
# the background build (module docstring): kernels 25-35% faster (ANYmal's stages; -O2 alone: 15%, -O3: as -O2);
# no contraction into fused multiply-adds, so that its results are those of FLAGS to round-off
OPTIMIZED_FLAGS = ("-O2", "-march=native", "-fno-tree-dominator-opts", "-ffp-contract=off", "-fPIC", "-shared")
LIBRARY_FLAGS = ("-O3", "-march=native", "-fPIC", "-shared")  # hand-written loops (cached per processor)
VECTORS = Path(__file__).with_name("vectors.h")  # the vector type that the libraries' loops share


class CompileError(RuntimeError):
    """No C compiler, or the compilation of a kernel failed."""


_compiling = {"seconds": 0.0}  # time this process spent compiling (and generating) code
_SILENT = [0]  # how many silent() blocks are open
_GENERATING = threading.Lock()  # CasADi builds graphs in one thread at a time (load_all)


def compile_seconds() -> float:
    """Seconds this process has spent generating and compiling kernels and libraries."""
    return _compiling["seconds"]


def cache_dir() -> Path:
    """Where compiled kernels are kept (module docstring); ``rm -r`` it to clear the cache."""
    if os.environ.get("LIFTOFF_CACHE"):
        return Path(os.environ["LIFTOFF_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "liftoff"


def compiler() -> str:
    """The C compiler (``$CC``, else ``cc`` or ``gcc`` on the PATH); :class:`CompileError` if none."""
    for name in filter(None, (os.environ.get("CC"), "cc", "gcc")):
        path = shutil.which(name)
        if path:
            return path
    raise CompileError("no C compiler found (set CC or install gcc)")


def model_key(model) -> dict:
    """What of a :class:`dynamics.Model` changes the code generated for it (a kernel key's part):
    every field but the tree, which the others determine."""
    return {f.name: getattr(model, f.name) for f in dataclasses.fields(model) if f.name != "tree"}


def source_digest(*modules) -> str:
    """A hash of the source files of ``modules`` (and of this one and :mod:`dynamics.symbolic`):
    a kernel's key includes the code that writes its equations."""
    h = hashlib.sha256()
    for path in (__file__, Path(__file__).with_name("symbolic.py"), *(m.__file__ for m in modules)):
        h.update(Path(path).read_bytes())
    return h.hexdigest()


@functools.cache
def _version() -> str:
    """liftoff's installed version (a kernel key's part), read once: the metadata is parsed on every read."""
    try:
        return importlib.metadata.version("liftoff")
    except importlib.metadata.PackageNotFoundError:
        return "source"


def _digest(key: dict, cc: str) -> str:
    full = {"key": key, "casadi": ca.__version__, "cc": cc, "liftoff": _version()}
    return hashlib.sha256(json.dumps(full, sort_keys=True, default=_jsonable).encode()).hexdigest()[:32]


def _jsonable(x):
    if isinstance(x, np.ndarray):
        return hashlib.sha256(np.ascontiguousarray(x, dtype=float).tobytes()).hexdigest() + str(x.shape)
    return repr(x)


_KEY = """
const char* liftoff_key(void) {{ return "{digest}"; }}
"""

_WRAPPER = """
#include <stdlib.h>
#include <string.h>
static const long liftoff_size[] = {{{sizes}}};  /* the input, the number of outputs, each output */
long liftoff_sizes(int i) {{ return liftoff_size[i]; }}
int liftoff_batch(long n, const casadi_real* in, casadi_real** out) {{
  const casadi_real* arg[{sz_arg}];
  casadi_real* res[{sz_res}];
  casadi_int iw[{sz_iw} + 1];
  casadi_real* w = (casadi_real*)malloc(sizeof(casadi_real) * ({sz_w} + 1));
  long i, j;
  int flag = 0;
  if (!w) return 1;
  memset(arg, 0, sizeof(arg));
  memset(res, 0, sizeof(res));
  for (i = 0; i < n && !flag; ++i) {{
    arg[0] = in + i * liftoff_size[0];
    for (j = 0; j < liftoff_size[1]; ++j) res[j] = out[j] + i * liftoff_size[2 + j];
    flag = {name}(arg, res, iw, w, 0);
  }}
  free(w);
  return flag;
}}
"""


class Kernel:
    """A compiled batch kernel: ``kernel(x (S, n_in))`` is the list of its outputs, each
    ``(S, sizes[j])`` and contiguous; ``patterns[j]`` are the entries of output ``j`` (of
    ``numel[j]``) that are not zero by structure (the others are zero whatever the input). A
    sparse kernel's outputs are those entries only (``sizes[j] = len(patterns[j])``, in their
    order); a dense one's all of them (``sizes == numel``)."""

    def __init__(self, path: Path, lib: ctypes.CDLL, name: str):
        self.path, self.name = path, name
        lib.liftoff_sizes.restype = ctypes.c_long
        lib.liftoff_batch.argtypes = (ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p)
        self.n_in = lib.liftoff_sizes(0)
        self.sizes = tuple(lib.liftoff_sizes(2 + j) for j in range(lib.liftoff_sizes(1)))
        self._lib, self._batch = lib, lib.liftoff_batch
        self.address = ctypes.cast(self._batch, ctypes.c_void_p).value  # the batch function, for compiled callers
        self._pointers = ctypes.c_void_p * len(self.sizes)
        lib.liftoff_pattern.restype = lib.liftoff_numel.restype = ctypes.c_long
        lib.liftoff_pattern.argtypes = (ctypes.c_int, ctypes.POINTER(ctypes.POINTER(ctypes.c_long)))
        self.numel = tuple(lib.liftoff_numel(j) for j in range(len(self.sizes)))
        self.patterns = []
        for j in range(len(self.sizes)):
            indices = ctypes.POINTER(ctypes.c_long)()
            count = lib.liftoff_pattern(j, ctypes.byref(indices))
            self.patterns.append(np.array(indices[:count], dtype=int))

    def __call__(self, x):
        x = np.ascontiguousarray(x, dtype=float)
        if x.ndim != 2 or x.shape[1] != self.n_in:
            raise ValueError(f"kernel {self.name}: expected input of shape (S, {self.n_in}), got {x.shape}")
        outs = [np.empty((x.shape[0], n)) for n in self.sizes]
        if self._batch(x.shape[0], address(x), self._pointers(*map(address, outs))):
            raise FloatingPointError(f"kernel {self.name} failed")
        return outs

    def bind(self, x: np.ndarray, outs: list):
        """A call without arguments that evaluates the kernel on the rows of ``x`` into ``outs``
        (contiguous float arrays of the kernel's shapes, kept alive by the caller): no checks and
        no allocation, for a loop that rewrites ``x`` in place and calls it at a high rate."""
        if x.ndim != 2 or x.shape[1] != self.n_in or not x.flags.c_contiguous or x.dtype != float:
            raise ValueError(f"kernel {self.name}: expected a contiguous float input of shape (S, {self.n_in})")
        shapes = [(x.shape[0], n) for n in self.sizes]
        if [o.shape for o in outs] != shapes or not all(o.flags.c_contiguous and o.dtype == float for o in outs):
            raise ValueError(f"kernel {self.name}: the outputs must be contiguous of shapes (S, {self.sizes})")
        batch, args = self._batch, (x.shape[0], x.ctypes.data, self._pointers(*(o.ctypes.data for o in outs)))

        def call():
            if batch(*args):
                raise FloatingPointError(f"kernel {self.name} failed")

        return call


class Interpreted:
    """A kernel function run by CasADi's SX virtual machine instead of compiled: the same call
    as :class:`Kernel` (``sparse``: of a sparse kernel), without a compiler, slowly (for
    checking the equations)."""

    def __init__(self, function: ca.Function, name: str, sparse=False):
        self.function, self.name = function, name
        self.n_in = function.numel_in(0)
        self.numel = tuple(function.numel_out(j) for j in range(function.n_out()))
        x = ca.SX.sym("x", self.n_in)
        self.patterns = [
            np.array(ca.sparsify(ca.vec(o)).sparsity().row(), dtype=int)
            for o in function.call([ca.reshape(x, function.size_in(0))])
        ]
        self._kept = self.patterns if sparse else [slice(None)] * len(self.numel)  # the entries a call returns
        self.sizes = tuple(map(len, self.patterns)) if sparse else self.numel

    def __call__(self, x):
        rows = [self.function.call([row]) for row in np.asarray(x, dtype=float)]
        return [
            np.array([np.asarray(ca.densify(r[j])).ravel(order="F")[p] for r in rows]).reshape(len(rows), n)
            for j, (n, p) in enumerate(zip(self.sizes, self._kept))
        ]

    def bind(self, x: np.ndarray, outs: list):
        """:meth:`Kernel.bind`: a call that evaluates the rows of ``x`` into ``outs``."""

        def call():
            for out, value in zip(outs, self(x)):
                out[...] = value

        return call


def load(name: str, key: dict, build, quiet=False, sparse=False) -> Kernel:
    """The kernel ``name`` of ``key`` from the cache, built if missing: ``build()`` returns the
    :class:`casadi.Function` (one input; its outputs are flattened column by column); ``sparse``:
    its outputs are their structural nonzeros (:class:`Kernel`). Says on
    stderr when it compiles, unless ``quiet``. The optimized build of this processor when the
    cache holds it; else the quick build, and the optimized one starts in the background (module
    docstring), unless ``LIFTOFF_OPTIMIZE=0``."""
    cc = compiler()
    generated = {}  # the C code, generated once for both builds

    def source(digest):
        def write(folder):
            with _GENERATING:
                if not generated:
                    function = build()
                    if function.n_in() != 1:
                        raise ValueError("a kernel function has one input")
                    code = _casadi_source(function, name, folder, sparse)
                    generated.update(code=code, what=f"{function.n_instructions()} instructions")
            out = Path(folder) / f"liftoff_{name}.c"
            out.write_text(generated["code"] + _KEY.format(digest=digest))
            return out, generated["what"]

        return write

    optimized, digest = _digests(key, sparse, cc)
    if optimized is not None:
        path = cache_dir() / f"{name}-{optimized}.so"
        lib = _loaded(path, optimized)
        if lib is not None:
            return Kernel(path, lib, name)
    kernel = Kernel(*_cached(name, digest, cc, FLAGS, source(digest), quiet), name)
    if optimized is not None:
        _build_in_background(name, optimized, cc, source(optimized))
    return kernel


def load_all(requests, quiet=False, libraries=()) -> list:
    """The kernels of ``requests``, each ``(name, key, build, sparse)``, as :func:`load` gives
    them. Those the cache lacks are compiled side by side, a compiler each, their C code
    generated one after the other (CasADi builds one graph at a time): on two cores, a first run
    waits for about half the sum of their compilations. ``libraries``: C files of
    :func:`load_library` (without headers of another library) compiled into the cache alongside,
    for their first use to load (one that fails here fails there again, which says why). One
    line on stderr names what compiles, unless ``quiet``; a cache that cannot be written loads
    the kernels one by one and leaves the libraries to their first use."""
    cc, folder = compiler(), cache_dir()
    missing = [name for name, key, _, sparse in requests if not _in_cache(folder, name, _digests(key, sparse, cc))]
    builds = [_library_build(path, None, cc) for path in libraries]
    builds = [build for build in builds if not _in_cache(folder, name=build[0], digests=[build[1]])]
    if len(missing) + len(builds) < 2 or not _writable(folder):
        return [load(name, key, build, quiet, sparse) for name, key, build, sparse in requests]
    quiet = quiet or _SILENT[0] > 0
    start, before = time.perf_counter(), _compiling["seconds"]
    if not quiet:
        names = ", ".join(missing + [build[0] for build in builds])
        print(f"liftoff: compiling {names} ...", end="", file=sys.stderr, flush=True)
    pool = ThreadPoolExecutor(len(requests) + len(builds), thread_name_prefix="liftoff-compile")
    try:
        futures = [pool.submit(load, name, key, build, True, sparse) for name, key, build, sparse in requests]
        futures += [pool.submit(_prefetched, *build) for build in builds]
        kernels = [future.result() for future in futures][: len(requests)]
    except BaseException as e:
        with _stop_compilers():
            pool.shutdown(cancel_futures=True)
        if not quiet:
            print(" failed" if isinstance(e, CompileError) else "", file=sys.stderr, flush=True)
        raise
    finally:
        pool.shutdown()
        _compiling["seconds"] = before + time.perf_counter() - start  # the wall time, not the compilers' sum
    if not quiet:
        print(f" done in {_compiling['seconds'] - before:.1f} s", file=sys.stderr)
    return kernels


def _prefetched(name, digest, cc, flags, source) -> None:
    """The library of :func:`_library_build`'s ``(name, digest, cc, flags, source)`` compiled
    into the cache, quietly; nothing if it fails (:func:`load_all`)."""
    try:
        _cached(name, digest, cc, flags, source, True)
    except CompileError:
        pass


def _digests(key, sparse, cc) -> tuple:
    """``(optimized, quick)``: the digests of a kernel's two builds (module docstring); the
    optimized one None under ``LIFTOFF_OPTIMIZE=0``."""
    key = {**key, "sparse": True} if sparse else key
    optimized = None
    if os.environ.get("LIFTOFF_OPTIMIZE") != "0":
        optimized = _digest({"key": key, "flags": OPTIMIZED_FLAGS, "cpu": _cpu()}, cc)
    return optimized, _digest({"key": key, "flags": FLAGS}, cc)


def _in_cache(folder, name, digests) -> bool:
    """Whether ``folder`` holds a whole library ``name`` of one of ``digests`` (None: none)."""
    paths = (folder / f"{name}-{digest}.so" for digest in digests if digest is not None)
    return any(path.exists() and _complete(path) for path in paths)


def _writable(folder: Path) -> bool:
    """Whether the kernel cache ``folder`` exists, or can be made, and can be written."""
    if folder in _FALLBACK:
        return False
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)


def load_library(path, quiet=False, include=None) -> ctypes.CDLL:
    """The C file ``path`` compiled for this processor (``-O3 -march=native``: loops that the
    compiler vectorizes), from the cache or built, as a :class:`ctypes.CDLL`. It may include
    ``vectors.h`` (:data:`VECTORS`) and the headers beside it, whose texts are part of the cache's
    key; ``include``:
    ``(folder, version)``, a folder of another library's headers that it includes, and their
    version (part of the cache's key: a new version is compiled anew)."""
    cc = compiler()
    return _cached(*_library_build(path, include, cc), quiet)[1]


def _library_build(path, include, cc) -> tuple:
    """``(name, digest, cc, flags, source)`` of :func:`load_library`'s :func:`_cached` call."""
    text, folder = Path(path).read_text(), Path(path).parent
    key = {"source": text, "flags": LIBRARY_FLAGS, "cpu": _cpu(), "vectors": VECTORS.read_text()}
    key["headers beside"] = {h.name: h.read_text() for h in sorted(folder.glob("*.h"))}
    flags = (*LIBRARY_FLAGS, f"-I{VECTORS.parent}", f"-I{folder}")
    if include is not None:
        flags = (*flags, f"-I{include[0]}")
        key.update(include=include[0], headers=include[1])
    digest = _digest(key, cc)

    def source(folder):
        out = Path(folder) / Path(path).name
        out.write_text(text + _KEY.format(digest=digest))
        return out, "C source"

    return Path(path).stem, digest, cc, flags, source


_LIBRARIES: dict = {}


def compiled_library(path, functions: dict, blas=(), include=None):
    """:func:`load_library` of ``path`` (with the headers ``include``) once per process, its
    ``functions`` typed (``{name: (restype, argtypes)}``) and, if it calls the routines ``blas``
    (names of :func:`blas_routines`), their addresses passed once to its
    ``liftoff_set_blas(void **)`` in that order; ``None``, after one warning line on stderr,
    when it cannot be compiled (the caller runs its numpy twin)."""
    path = str(path)
    if path not in _LIBRARIES:
        try:
            lib = load_library(path, include=include)
            if blas:
                lib.liftoff_set_blas.argtypes = (ctypes.c_void_p,)
                lib.liftoff_set_blas((ctypes.c_void_p * len(blas))(*blas_routines(blas)))
        except CompileError as e:
            print(f"liftoff: warning: {e}; {Path(path).stem} runs in numpy", file=sys.stderr)
            lib = None
        for name, (restype, argtypes) in functions.items() if lib is not None else ():
            getattr(lib, name).restype, getattr(lib, name).argtypes = restype, argtypes
        _LIBRARIES[path] = lib
    return _LIBRARIES[path]


_capsule_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(("PyCapsule_GetName", ctypes.pythonapi))
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)


def blas_routines(names) -> list:
    """The addresses of the BLAS and LAPACK routines ``names`` (``"dgemm"``, ``"dpotrf"``, ...)
    that scipy exports to compiled code (``scipy.linalg.cython_blas``, ``cython_lapack``):
    Fortran calling convention (every argument by pointer, column-major, ``int`` sizes), run by
    scipy's BLAS, whose threads threadpoolctl limits. C libraries call them through these
    pointers without linking against any BLAS. :class:`CompileError` if scipy lacks one."""
    from scipy.linalg import cython_blas, cython_lapack

    addresses = []
    for name in names:
        capsule = cython_blas.__pyx_capi__.get(name) or cython_lapack.__pyx_capi__.get(name)
        if capsule is None:
            raise CompileError(f"scipy exports no BLAS or LAPACK routine {name!r}")
        addresses.append(_capsule_pointer(capsule, _capsule_name(capsule)))
    return addresses


def _cpu() -> str:
    """What ``-march=native`` compiles for: the processor's model and flags."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return "unknown"
    return "\n".join(sorted({line for line in lines if line.startswith(("model name", "flags"))}))


_FALLBACK: dict = {}  # the user's cache that could not be written -> this process's temporary cache


def _cached(name, digest, cc, flags, source, quiet) -> tuple:
    """``(path, loaded library)`` of ``name-digest.so`` in the cache, compiled first if missing
    or damaged, under its lock; ``source(folder)`` writes the C file to compile. A cache
    that cannot be written gives way to a temporary one (module docstring)."""
    folder = cache_dir()
    path = folder / f"{name}-{digest}.so"
    lib = _loaded(path, digest)
    if lib is not None:
        return path, lib
    if folder not in _FALLBACK:
        try:
            return _compiled_under_lock(name, digest, cc, flags, source, folder, quiet)
        except OSError as e:  # a read-only folder, a lock file that cannot be created
            _FALLBACK[folder] = _temporary_cache(folder, e)
    try:
        return _compiled_under_lock(name, digest, cc, flags, source, _FALLBACK[folder], quiet)
    except OSError as e:
        raise CompileError(f"cannot compile {name} into {_FALLBACK[folder]} ({e.strerror or e})") from None


def _compiled_under_lock(name, digest, cc, flags, source, folder: Path, quiet) -> tuple:
    """:func:`_cached` in ``folder`` under the lock of the library, ``name-digest.lock``: a
    process compiling the same library is waited for, one compiling another is not. Whoever
    compiles it removes the lock's file once the library is in place, where a process that
    waited on the lock, or comes later, finds it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{digest}.so"
    lock_path = path.with_suffix(".lock")
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be compiling it: wait for it
        lib = _loaded(path, digest)
        if lib is not None:
            return path, lib
        lib = _compile(name, digest, cc, flags, source, path, quiet)
        lock_path.unlink(missing_ok=True)
        return path, lib


def _temporary_cache(folder: Path, why: OSError) -> Path:
    """A kernel cache for this process only (removed at its exit), after one warning line
    saying why ``folder`` is not used; :class:`CompileError` if none can be made."""
    try:
        temporary = Path(tempfile.mkdtemp(prefix="liftoff-kernels-"))
    except OSError as e:
        raise CompileError(f"cannot write the kernel cache {folder} ({why.strerror or why}) nor a temporary one") from e
    atexit.register(shutil.rmtree, temporary, ignore_errors=True)
    print(
        f"liftoff: warning: cannot write the kernel cache {folder} ({why.strerror or why}); compiling into "
        f"{temporary} for this run (set LIFTOFF_CACHE to a writable folder to keep the kernels)",
        file=sys.stderr,
    )
    return temporary


def _open(path, digest) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))  # OSError on a foreign file
    lib.liftoff_key.restype = ctypes.c_char_p
    if lib.liftoff_key().decode() != digest:
        raise OSError(f"{path} is not the library {digest}")
    return lib


def _complete(path: Path) -> bool:
    """Whether an ELF library holds all it says it holds (its section headers, which the linker
    writes last): loading a truncated one can kill the process with SIGBUS."""
    with open(path, "rb") as f:
        header = f.read(64)
    if len(header) < 64 or header[:4] != b"\x7fELF":  # the kernels are ELF shared objects (Linux)
        return False
    wide, order = header[4] == 2, "<" if header[5] == 1 else ">"
    shoff, (shentsize, shnum) = (
        (struct.unpack(order + "Q", header[40:48])[0], struct.unpack(order + "HH", header[58:62]))
        if wide
        else (struct.unpack(order + "I", header[32:36])[0], struct.unpack(order + "HH", header[46:50]))
    )
    return path.stat().st_size >= shoff + shentsize * shnum


def _loaded(path, digest):
    """The library at ``path`` if it is the one of ``digest``, else ``None``."""
    if not path.exists() or not _complete(path):
        return None
    try:
        return _open(path, digest)
    except (OSError, AttributeError):
        return None


def _casadi_source(function, name, folder, sparse=False) -> str:
    """The C code of a kernel but its key: CasADi's code of ``function`` (generated in
    ``folder``; ``sparse``: its outputs' structural nonzeros only) and the batch loop."""
    cname = f"liftoff_{name}"
    x = ca.SX.sym("x", function.numel_in(0))
    outputs = [ca.sparsify(ca.vec(o)) for o in function.call([ca.reshape(x, function.size_in(0))])]
    patterns, numel = [o.sparsity().row() for o in outputs], [o.numel() for o in outputs]
    function = ca.Function(cname, [x], outputs if sparse else [ca.densify(o) for o in outputs], {"cse": True})
    gen = ca.CodeGenerator(f"{cname}.c", {"with_header": False, "casadi_real": "double", "casadi_int": "long long int"})
    gen.add(function)
    gen.generate(str(folder) + os.sep)
    sizes = dict(sz_arg=function.sz_arg(), sz_res=function.sz_res(), sz_iw=function.sz_iw(), sz_w=function.sz_w())
    counts = ", ".join(
        map(str, [function.nnz_in(0), function.n_out()] + [function.nnz_out(j) for j in range(function.n_out())])
    )
    code = (Path(folder) / f"{cname}.c").read_text()
    return code + _WRAPPER.format(name=cname, sizes=counts, **sizes) + _patterns(patterns, numel)


def _patterns(patterns, numel) -> str:
    """C arrays of the structural nonzeros of each output, ``liftoff_pattern(j, &indices)``, which
    returns their number, and ``liftoff_numel(j)``, the output's size with its zeros."""
    arrays = [
        f"static const long liftoff_nz{j}[] = {{{', '.join(map(str, p)) or '0'}}};" for j, p in enumerate(patterns)
    ]
    table = ", ".join(f"liftoff_nz{j}" for j in range(len(patterns)))
    counts = ", ".join(str(len(p)) for p in patterns)
    return (
        "\n".join(arrays)
        + f"""
static const long* const liftoff_nz[] = {{{table}}};
static const long liftoff_nnz[] = {{{counts}}};
long liftoff_pattern(int j, const long** indices) {{ *indices = liftoff_nz[j]; return liftoff_nnz[j]; }}
static const long liftoff_numels[] = {{{", ".join(map(str, numel))}}};
long liftoff_numel(int j) {{ return liftoff_numels[j]; }}
"""
    )


@contextmanager
def silent(on=True):
    """Within the block, what compiles says nothing on stderr (module docstring); ``on=False``:
    as outside it."""
    _SILENT[0] += bool(on)
    try:
        yield
    finally:
        _SILENT[0] -= bool(on)


def _compile(name, digest, cc, flags, source, path: Path, quiet) -> ctypes.CDLL:
    """Compile ``name`` into ``path``; unless ``quiet`` or :func:`silent`, one line on stderr
    that says so and ends however the compilation ends (done, failed, or interrupted: then a
    bare newline, so that what follows starts on a line of its own)."""
    quiet = quiet or _SILENT[0] > 0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        if not quiet:
            print(f"liftoff: compiling {name} ...", end="", file=sys.stderr, flush=True)
        try:
            c_file, what = source(tmp)
            tmp_lib = Path(tmp) / path.name
            done = _run_compiler([cc, *flags, "-o", str(tmp_lib), str(c_file), "-lm"])
        except BaseException:
            if not quiet:
                print(file=sys.stderr, flush=True)
            raise
        if done.returncode != 0:
            if not quiet:
                print(" failed", file=sys.stderr)
            first = (done.stderr.strip().splitlines() or ["no output"])[0]
            raise CompileError(f"compiling {name} failed: {first}")
        # loaded under its temporary name: the dynamic loader would give back a library
        # already loaded from ``path`` (a stale one) instead of opening the new file
        try:
            lib = _open(tmp_lib, digest)
        except OSError as e:
            if not quiet:
                print(" failed", file=sys.stderr)
            raise CompileError(f"{name}: the compiled library does not load: {e}") from None
        os.replace(tmp_lib, path)
    if not quiet:
        print(f" done in {time.perf_counter() - start:.1f} s ({what})", file=sys.stderr)
    _compiling["seconds"] += time.perf_counter() - start
    return lib


_COMPILERS: set = set()  # the compilers running for this process (_run_compiler)
_STOPPED = threading.Event()  # set while load_all stops its compilations
_COMPILERS_LOCK = threading.Lock()


def _run_compiler(args) -> subprocess.CompletedProcess:
    """Run the compiler ``args`` and capture its output; killed if the calling thread is
    interrupted, or by :func:`_stop_compilers`, after which none starts until it returns
    (:class:`CompileError`)."""
    with _COMPILERS_LOCK:
        if _STOPPED.is_set():
            raise CompileError("the compilation was stopped")
        process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _COMPILERS.add(process)
    try:
        out, err = process.communicate()
    except BaseException:
        process.kill()
        process.wait()
        raise
    finally:
        with _COMPILERS_LOCK:
            _COMPILERS.discard(process)
    return subprocess.CompletedProcess(args, process.returncode, out, err)


@contextmanager
def _stop_compilers():
    """Within the block, the running compilers are killed and no other starts (a Ctrl-C during
    :func:`load_all`: its threads end at once, but one generating C code, which ends first)."""
    with _COMPILERS_LOCK:
        _STOPPED.set()
        for process in _COMPILERS:
            process.kill()
    try:
        yield
    finally:
        _STOPPED.clear()


_BACKGROUND: set = set()  # the optimized builds this process has considered


def _build_in_background(name, digest, cc, source):
    """Start compiling ``name-digest.so`` with :data:`OPTIMIZED_FLAGS` into the cache, detached
    (module docstring): unless this process did already, or another process is compiling it
    (it holds ``name-digest.lock``), or it is in the cache, or its compilation failed before
    (``name-digest.failed``, the compiler's messages), or the cache is not writable. The
    compiler's shell inherits the lock and removes its file once the library is in place."""
    folder = cache_dir()
    path = folder / f"{name}-{digest}.so"
    failed, lock_path = path.with_suffix(".failed"), path.with_suffix(".lock")
    if digest in _BACKGROUND or folder in _FALLBACK:
        return
    _BACKGROUND.add(digest)
    try:
        lock = open(lock_path, "w")
    except OSError:
        return
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return
        # checked under the lock: whoever held it before has renamed its library or its messages into place
        if failed.exists() or _loaded(path, digest) is not None:
            return
        tmp = Path(tempfile.mkdtemp(dir=folder))
        try:
            c_file, _ = source(tmp)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        tmp_lib, messages = (shlex.quote(str(tmp / p)) for p in (path.name, "messages"))
        build = " ".join(map(shlex.quote, ("nice", "-n", "10", cc, *OPTIMIZED_FLAGS, "-o"))) + f" {tmp_lib}"
        script = (
            f"({build} {shlex.quote(str(c_file))} -lm 2> {messages} && mv -f {tmp_lib} {shlex.quote(str(path))}"
            f" || mv -f {messages} {shlex.quote(str(failed))}; rm -rf {shlex.quote(str(tmp))}"
            f" {shlex.quote(str(lock_path))}) &"
        )
        # the shell exits at once (nothing to reap later); its child, in a session of its own, outlives this process
        subprocess.run(
            ["sh", "-c", script],
            pass_fds=(lock.fileno(),),
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
