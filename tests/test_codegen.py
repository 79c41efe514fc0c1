"""The kernel cache: compile once, load in milliseconds, survive concurrent first uses,
rebuild truncated or stale libraries, and fall back to numpy without a C compiler."""

from __future__ import annotations

import ctypes
import fcntl
import functools
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import casadi as ca
import numpy as np
import pytest

from liftoff.dynamics import codegen

ROOT = Path(__file__).resolve().parent.parent


def small_function():
    x = ca.SX.sym("x", 3)
    return ca.Function("small", [x], [ca.vertcat(ca.sin(x[0]) * x[1], x[2] ** 2, x[0] + x[1] + x[2], 1.0)])


def expected(x):
    return np.stack((np.sin(x[:, 0]) * x[:, 1], x[:, 2] ** 2, x.sum(axis=1), np.ones(len(x))), axis=1)


def never():
    pytest.fail("a cached kernel is not built again")


def fake_compiler(tmp_path, monkeypatch, body):
    """``$CC``: a shell script of ``body``."""
    cc = tmp_path / "fake-cc"
    cc.write_text(f"#!/bin/sh\n{body}\n")
    cc.chmod(0o755)
    monkeypatch.setenv("CC", str(cc))


def two_outputs():
    x = ca.SX.sym("x", 2)
    return ca.Function("two", [x], [x[0] * x[1], ca.vertcat(x[0], 2 * x[1], 3.0)])


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LIFTOFF_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_kernel_is_compiled_once_then_loaded_from_the_cache(cache, capsys):
    x = np.random.default_rng(0).standard_normal((7, 3))
    kernel = codegen.load("small", {"case": 1}, small_function)
    assert "compiling small" in capsys.readouterr().err
    np.testing.assert_allclose(kernel(x)[0], expected(x), rtol=1e-15)
    assert [p.suffix for p in cache.iterdir() if p.suffix == ".so"] == [".so"]
    start = time.perf_counter()
    again = codegen.load("small", {"case": 1}, never)
    assert time.perf_counter() - start < 0.05
    assert capsys.readouterr().err == ""
    np.testing.assert_allclose(again(x)[0], expected(x), rtol=1e-15)


def test_within_silent_a_kernel_compiles_without_its_line(cache, capsys):
    with codegen.silent():
        codegen.load("small", {"case": "silent"}, small_function)
    with codegen.silent(on=False):
        codegen.load("two", {"case": "loud"}, two_outputs)
    assert capsys.readouterr().err.startswith("liftoff: compiling two ... done")
    assert [p.name.split("-")[0] for p in sorted(cache.glob("*.so"))] == ["small", "two"]


def timed(log, name, call):
    """``call`` that appends ``(name, start, end)`` to ``log`` when it returns."""

    def run(*args, **kwargs):
        start = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            log.append((name, start, time.perf_counter()))

    return run


def overlap(a, b) -> bool:
    return a[1] < b[2] and b[1] < a[2]


def test_kernels_loaded_together_compile_side_by_side_and_build_one_at_a_time(cache, capsys, monkeypatch):
    builds, compilers = [], []

    def slow(call):
        return lambda *args, **kwargs: time.sleep(0.3) or call(*args, **kwargs)

    monkeypatch.setattr(codegen, "_run_compiler", timed(compilers, "cc", slow(codegen._run_compiler)))
    requests = [("small", {"case": 7}, timed(builds, "small", slow(small_function)), False)]
    requests.append(("two", {"case": 7}, timed(builds, "two", slow(two_outputs)), True))
    start = time.perf_counter()
    before = codegen.compile_seconds()
    small, two = codegen.load_all(requests)
    wall = time.perf_counter() - start
    assert capsys.readouterr().err.startswith("liftoff: compiling small, two ... done in ")
    assert len(builds) == 2 and not overlap(*builds)  # CasADi's graphs one after the other
    assert len(compilers) == 2 and overlap(*compilers)  # the compilers side by side
    assert 0 < codegen.compile_seconds() - before <= wall  # the wall time, not the compilers' sum
    x = np.random.default_rng(3).standard_normal((6, 3))
    np.testing.assert_allclose(small(x)[0], expected(x), rtol=1e-15)
    assert two.name == "two" and two.sizes == (1, 3)  # sparse: the constant 3 is a structural nonzero
    again = codegen.load_all([(name, key, never, sparse) for name, key, _, sparse in requests])
    assert [k.path for k in again] == [small.path, two.path] and capsys.readouterr().err == ""


def test_kernels_loaded_together_of_which_one_is_missing_compile_it_as_load_does(cache, capsys):
    codegen.load("small", {"case": 8}, small_function, quiet=True)
    small, two = codegen.load_all([("small", {"case": 8}, never, False), ("two", {}, two_outputs, False)])
    err = capsys.readouterr().err
    assert err.startswith("liftoff: compiling two ... done in ") and err.endswith(" instructions)\n")
    assert (small.name, two.name) == ("small", "two")


def test_libraries_loaded_with_kernels_compile_alongside_for_their_first_use(cache, tmp_path, capsys):
    twice, broken = tmp_path / "twice.c", tmp_path / "broken.c"
    twice.write_text("double liftoff_twice(double x) { return 2 * x; }\n")
    broken.write_text("double liftoff_broken(double x) { return x }\n")
    (small,) = codegen.load_all([("small", {"case": 11}, small_function, False)], libraries=(twice, broken))
    assert capsys.readouterr().err.startswith("liftoff: compiling small, twice, broken ... done in ")
    library = codegen.load_library(twice)  # from the cache: nothing compiles
    assert capsys.readouterr().err == ""
    library.liftoff_twice.restype, library.liftoff_twice.argtypes = ctypes.c_double, (ctypes.c_double,)
    assert library.liftoff_twice(1.25) == 2.5
    with pytest.raises(codegen.CompileError, match="compiling broken failed"):  # its first use says why
        codegen.load_library(broken, quiet=True)
    assert small.name == "small"


def test_a_failure_among_kernels_loaded_together_ends_their_line_and_raises(cache, tmp_path, capsys, monkeypatch):
    fake_compiler(tmp_path, monkeypatch, "echo 'broken-cc: internal error' >&2; exit 1")
    requests = [("small", {"case": 9}, small_function, False), ("two", {"case": 9}, two_outputs, False)]
    with pytest.raises(codegen.CompileError, match="failed: broken-cc: internal error"):
        codegen.load_all(requests)
    assert capsys.readouterr().err == "liftoff: compiling small, two ... failed\n"
    assert not list(cache.glob("*.so"))


def test_an_interrupt_while_kernels_compile_together_stops_their_compilers(cache, tmp_path, capsys, monkeypatch):
    fake_compiler(tmp_path, monkeypatch, "exec sleep 60")
    requests = [("small", {"case": 10}, small_function, False), ("two", {"case": 10}, two_outputs, False)]
    start = time.perf_counter()
    ctrl_c = functools.partial(signal.pthread_kill, threading.main_thread().ident, signal.SIGINT)
    threading.Timer(1.0, ctrl_c).start()  # while both compilers run
    with pytest.raises(KeyboardInterrupt):
        codegen.load_all(requests)
    assert time.perf_counter() - start < 10  # the compilers killed, not waited for
    assert capsys.readouterr().err == "liftoff: compiling small, two ...\n"
    assert not codegen._COMPILERS and not codegen._STOPPED.is_set()  # the next load may compile
    monkeypatch.delenv("CC")
    assert codegen.load("small", {"case": 10}, small_function, quiet=True).name == "small"


def test_each_output_of_a_kernel_is_its_own_contiguous_array(cache):
    x = np.array([[2.0, 5.0], [1.0, -1.0], [0.5, 4.0]])
    product, stacked = codegen.load("two", {}, two_outputs, quiet=True)(x)
    np.testing.assert_array_equal(product, [[10.0], [-1.0], [2.0]])
    np.testing.assert_array_equal(stacked, [[2.0, 10.0, 3.0], [1.0, -2.0, 3.0], [0.5, 8.0, 3.0]])
    assert product.flags.c_contiguous and stacked.flags.c_contiguous
    interpreted = codegen.Interpreted(two_outputs(), "two")(x)
    np.testing.assert_array_equal(interpreted[1], stacked)


def test_a_kernel_knows_its_structural_zeros(cache):
    x = ca.SX.sym("x", 2)
    f = ca.Function("sparse", [x], [ca.vertcat(x[0], 0, x[1] * x[0], 0), ca.SX.zeros(3)])
    kernel = codegen.load("sparse", {}, lambda: f, quiet=True)
    assert [p.tolist() for p in kernel.patterns] == [[0, 2], []]
    assert [p.tolist() for p in codegen.Interpreted(f, "sparse").patterns] == [[0, 2], []]
    np.testing.assert_array_equal(kernel(np.array([[2.0, 3.0]]))[0], [[2.0, 0.0, 6.0, 0.0]])


def test_a_sparse_kernel_writes_its_structural_nonzeros_only(cache):
    x = ca.SX.sym("x", 2)
    f = ca.Function("sparse", [x], [ca.vertcat(x[0], 0, x[1] * x[0], 0), ca.SX.zeros(3)])
    rows = np.array([[2.0, 3.0], [-1.0, 4.0]])
    sparse = codegen.load("sparse", {}, lambda: f, quiet=True, sparse=True)
    for kernel in (sparse, codegen.Interpreted(f, "f", sparse=True)):
        assert kernel.sizes == (2, 0) and kernel.numel == (4, 3)
        values, empty = kernel(rows)
        np.testing.assert_array_equal(values, [[2.0, 6.0], [-1.0, -4.0]])
        assert empty.shape == (2, 0)
    dense = codegen.load("sparse", {}, lambda: f, quiet=True)
    assert dense.sizes == dense.numel == (4, 3) and dense.path != sparse.path


def test_another_key_is_another_kernel(cache):
    a = codegen.load("small", {"case": 1}, small_function, quiet=True)
    b = codegen.load("small", {"case": 2}, small_function, quiet=True)
    assert a.path != b.path


def test_wrong_input_shape_is_one_clear_error(cache):
    kernel = codegen.load("small", {"case": 1}, small_function, quiet=True)
    with pytest.raises(ValueError, match=r"kernel small: expected input of shape \(S, 3\), got \(2, 4\)"):
        kernel(np.zeros((2, 4)))


SCRIPT = """
import sys, casadi as ca
from liftoff.dynamics import codegen
x = ca.SX.sym("x", 3)
f = ca.Function("small", [x], [ca.vertcat(ca.sin(x[0]) * x[1], x[2] ** 2, x[0] + x[1] + x[2], 1.0)])
k = codegen.load("small", {"case": 1}, lambda: f)
print(k([[1.0, 2.0, 3.0]])[0][0, 2])
"""


def load_in_new_process(cache):
    env = {**os.environ, "LIFTOFF_CACHE": str(cache)}
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.parametrize("damage", ["truncated", "stale"])
def test_a_damaged_library_is_rebuilt(cache, damage):
    path = codegen.load("small", {"case": 1}, small_function, quiet=True).path
    damaged = path.with_name("damaged")
    if damage == "truncated":  # as a crash while copying would leave it
        damaged.write_bytes(path.read_bytes()[:1000])
    else:  # a valid library of another kernel under this name
        shutil.copy(codegen.load("small", {"case": 2}, small_function, quiet=True).path, damaged)
    os.replace(damaged, path)
    out, err = load_in_new_process(cache).communicate(timeout=120)
    assert "compiling small" in err
    assert float(out) == 6.0


def test_processes_started_together_compile_once(cache):
    procs = [load_in_new_process(cache) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert [float(out) for out, _ in outs] == [6.0, 6.0]
    assert sum("compiling small" in err for _, err in outs) == 1
    assert len(list(cache.glob("small-*.so"))) == 1


def test_a_library_being_compiled_holds_back_its_own_compilation_only(cache, tmp_path, monkeypatch):
    """While a process holds a library's lock (compiling it), another compiles other libraries
    at once and waits for that one, which it compiles when the lock is let go."""
    monkeypatch.setenv("LIFTOFF_CACHE", str(tmp_path / "elsewhere"))  # the library's name, with its digest
    name = codegen.load("small", {"case": 1}, small_function, quiet=True).path.name
    cache.mkdir()
    env = {**os.environ, "LIFTOFF_CACHE": str(cache)}
    with open(cache / name.replace(".so", ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # as the process compiling it
        other = [sys.executable, "-c", SCRIPT.replace('"case": 1', '"case": 7')]
        done = subprocess.run(other, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and float(done.stdout) == 6.0, done.stderr
        waiting = load_in_new_process(cache)
        time.sleep(3.0)  # time to import, reach the lock and, without it, compile
        assert waiting.poll() is None and not (cache / name).exists()
    out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0 and float(out) == 6.0 and "compiling small" in err


@pytest.fixture
def unwritable(tmp_path, monkeypatch):
    """A kernel cache this process cannot write: a read-only folder, or for root (who writes
    anywhere) a folder of /proc, where nobody creates files."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    if os.access(folder, os.W_OK):
        folder = Path("/proc/self")
    monkeypatch.setenv("LIFTOFF_CACHE", str(folder))
    monkeypatch.setattr(codegen, "_FALLBACK", {})
    yield folder
    (tmp_path / "read-only").chmod(0o755)


def test_an_unwritable_cache_gives_way_to_a_temporary_one_after_one_line(unwritable, capsys):
    x = np.random.default_rng(1).standard_normal((4, 3))
    kernel = codegen.load("small", {"case": 5}, small_function)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"liftoff: warning: cannot write the kernel cache {unwritable} (")
    assert "for this run (set LIFTOFF_CACHE to a writable folder to keep the kernels)" in err[0]
    assert err[1].startswith("liftoff: compiling small ... done") and len(err) == 2
    np.testing.assert_allclose(kernel(x)[0], expected(x), rtol=1e-15)
    temporary = kernel.path.parent
    assert temporary != unwritable and temporary.is_dir()
    other = codegen.load("two", {}, two_outputs)  # no second warning: the same temporary cache
    assert other.path.parent == temporary
    assert capsys.readouterr().err.startswith("liftoff: compiling two ... done")
    again = codegen.load("small", {"case": 5}, lambda: pytest.fail("compiled twice"))
    assert again.path == kernel.path


def test_no_compiler_raises_compile_error(cache, monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("CC", raising=False)
    with pytest.raises(codegen.CompileError, match="no C compiler found"):
        codegen.load("small", {"case": 3}, small_function, quiet=True)


def test_a_failing_compiler_raises_compile_error(cache, tmp_path, monkeypatch):
    fake_compiler(tmp_path, monkeypatch, "echo 'broken-cc: internal error' >&2; exit 1")
    with pytest.raises(codegen.CompileError, match="compiling small failed: broken-cc: internal error"):
        codegen.load("small", {"case": 4}, small_function, quiet=True)
    assert not list(cache.glob("*.so"))


def test_without_a_compiler_the_solve_runs_on_numpy_after_one_warning(tmp_path):
    """``liftoff solve`` with the compiled backend asked for and no compiler on the PATH."""
    config = ROOT / "configs" / "anymal_trot.yaml"
    env = {**os.environ, "PATH": "", "LIFTOFF_CACHE": str(tmp_path / "empty")}
    env.pop("CC", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "liftoff",
            "solve",
            str(config),
            "--backend",
            "compiled",
            "--json",
            "--out",
            str(tmp_path / "r.npz"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert warnings == ["liftoff: warning: no C compiler found (set CC or install gcc); using the numpy backend"]
    assert '"backend": "numpy"' in done.stdout and '"status": "converged"' in done.stdout


def test_the_optimized_build_comes_in_the_background_and_replaces_the_quick_one(cache, monkeypatch):
    monkeypatch.setenv("LIFTOFF_OPTIMIZE", "1")  # the test session turns it off (conftest.py)
    monkeypatch.setattr(codegen, "_BACKGROUND", set())
    started, run = [], subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda args, **kw: started.append(args) or run(args, **kw))
    quick = codegen.load("small", {"case": 6}, small_function, quiet=True)
    with pytest.raises(ChildProcessError):  # the compiler runs detached: no child of this process to reap
        os.waitpid(-1, os.WNOHANG)
    codegen.load("small", {"case": 6}, small_function, quiet=True)
    codegen._BACKGROUND.clear()  # as another process: the build's lock, or its library, says it is done
    codegen.load("small", {"case": 6}, small_function, quiet=True)
    assert sum(args[0] == "sh" for args in started) == 1
    deadline = time.monotonic() + 60
    while len(list(cache.iterdir())) != 2 and time.monotonic() < deadline:  # its lock and temporary folder gone
        time.sleep(0.1)
    others = [p.name for p in cache.iterdir() if p != quick.path]  # the quick build's lock gone too
    assert len(others) == 1 and others[0].startswith("small-") and others[0].endswith(".so"), others
    optimized = codegen.load("small", {"case": 6}, lambda: pytest.fail("the optimized library is in the cache"))
    assert optimized.path == cache / others[0]
    x = np.random.default_rng(2).standard_normal((5, 3))
    np.testing.assert_allclose(optimized(x)[0], quick(x)[0], rtol=0, atol=1e-12)
