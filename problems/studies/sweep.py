"""Parameter studies: every case of a sweep spec (:mod:`problems.studies.sweep_spec`) solved on a local
process pool or a Dask cluster, and the table of all cases.

Each case's results file is ``cases/NAME-HASH.npz`` in the output folder (``HASH`` that of its
resolved configuration), written atomically; a rerun reuses every results file that reads
back as the same configuration, so an interrupted sweep continues where it stopped and a
half-written file is solved again. A case that fails (an invalid combination, a divergence,
an exception) is a row with its status, never a crashed sweep. The table (``table.csv``,
``table.parquet``) has the swept values, status, iterations, cost, KKT error, largest
violation, message, and the timing columns ``solve_time_s``, ``ms_per_iteration``,
``compile_s`` (kernels the case compiled: the first case of a worker on a cold cache; workers
on one machine share the on-disk kernel cache under its lock) and ``worker``.
"""

from __future__ import annotations

import csv
import os
import socket
from pathlib import Path

from liftoff.problems.files import atomic
from liftoff.problems.tasks.config import ConfigError, ProblemError, parse_config

from .sweep_spec import OUTCOME, TIMING, Case, Spec, cases, is_number

BLAS_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


class SchedulerError(RuntimeError):
    """The Dask scheduler cannot be reached (one line: the address and why)."""


def results_path(out_dir, case: Case) -> Path:
    return Path(out_dir) / "cases" / f"{case.config}-{case.digest}.npz"


# ----------------------------------------------------------------------------- running


def solve_case(case: Case, path: str) -> dict:
    """Solve one case (in a worker) and save its results file; the outcome as a dict. Never
    raises: a configuration the problem builder refuses is ``invalid``, any other failure
    ``error`` with its message."""
    from liftoff.dynamics.codegen import compile_seconds

    from .runs import save_run, solve_config, summary

    worker = f"{socket.gethostname()}:{os.getpid()}"
    before = compile_seconds()
    try:
        run = solve_config(parse_config(case.data))
        save_run(run, path)
        outcome = _outcome(summary(run))
    except (ConfigError, ProblemError) as e:
        outcome = {"status": "invalid", "message": str(e)}
    except Exception as e:  # a row with its status, never a crashed sweep
        outcome = {"status": "error", "message": f"{type(e).__name__}: {e}"}
    return {**outcome, "compile_s": round(compile_seconds() - before, 2), "worker": worker}


def _outcome(s: dict) -> dict:
    return {
        "status": s["status"],
        "iterations": s["iterations"],
        "cost": s["cost"],
        "kkt_error": s["kkt_error"],
        "max_violation": s["max_constraint_violation"],
        "message": s["message"],
        "solve_time_s": round(s["solve_time_s"], 3),
        "ms_per_iteration": round(1e3 * s["time_per_iteration_s"], 2),
    }


def _reuse(case: Case, path: Path):
    """The outcome stored in ``path`` if it is a readable results file of ``case``, else None."""
    from liftoff.problems.files import ReadError

    from .runs import load_run

    if not path.is_file():
        return None
    try:
        run = load_run(path)
    except ReadError:
        return None
    if run["config"] != case.data:
        return None
    return {**_outcome(run["summary"]), "compile_s": 0.0, "worker": "reused"}


def run_sweep(spec: Spec, out_dir, workers=None, scheduler=None, progress=None) -> list:
    """Solve every case of ``spec`` not already solved in ``out_dir`` (on ``workers``
    processes, or on the Dask scheduler at ``scheduler``: an address, or ``"local"`` for a
    :class:`distributed.LocalCluster`), write the table, and return its rows in case order.
    ``progress(row)`` is called as each case ends."""
    out_dir = Path(out_dir)
    todo, outcomes = [], {}
    all_cases = cases(spec)
    for case in all_cases:
        path = results_path(out_dir, case)
        if case.invalid:
            outcomes[case.index] = {"status": "invalid", "message": case.invalid}
        elif (reused := _reuse(case, path)) is not None:
            outcomes[case.index] = reused
        else:
            todo.append(case)
    for case in all_cases:
        if case.index in outcomes and progress is not None:
            progress(_row(spec, case, outcomes[case.index], out_dir))
    (out_dir / "cases").mkdir(parents=True, exist_ok=True)
    runner = _dask if scheduler else _pool
    for case, outcome in runner(todo, out_dir, workers or os.cpu_count() or 1, scheduler):
        outcomes[case.index] = outcome
        if progress is not None:
            progress(_row(spec, case, outcome, out_dir))
    rows = [_row(spec, case, outcomes[case.index], out_dir) for case in all_cases]
    write_table(rows, out_dir)
    if spec.plot is not None:
        from .figures import sweep_figure

        sweep_figure(rows, spec.plot, out_dir / "sweep.png")
    return rows


def _row(spec: Spec, case: Case, outcome: dict, out_dir) -> dict:
    row = {"case": case.index, "config": case.config}
    row.update({key: case.values.get(key, "") for key in spec.keys})
    row.update({key: outcome.get(key, "") for key in OUTCOME})
    row.update({key: outcome.get(key, "") for key in TIMING})
    solved = outcome["status"] not in ("invalid", "error")
    row["results_file"] = str(results_path(out_dir, case).relative_to(out_dir)) if solved else ""
    return row


def _one_thread_blas():
    """Workers run one BLAS thread each (set before they start; restored after)."""
    saved = {k: os.environ.get(k) for k in BLAS_THREADS}
    os.environ.update({k: "1" for k in BLAS_THREADS})
    return saved


def _restore(saved) -> None:
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _pool(todo, out_dir, workers, _):
    """``(case, outcome)`` as the cases end on a local pool of spawned processes."""
    import concurrent.futures
    import concurrent.futures.process
    import multiprocessing

    if not todo:
        return
    saved = _one_thread_blas()
    context = multiprocessing.get_context("spawn")
    try:
        with concurrent.futures.ProcessPoolExecutor(min(workers, len(todo)), mp_context=context) as pool:
            futures = {pool.submit(solve_case, c, str(results_path(out_dir, c))): c for c in todo}
            try:
                for future in concurrent.futures.as_completed(futures):
                    try:
                        outcome = future.result()
                    except concurrent.futures.process.BrokenProcessPool:  # a worker killed (memory, signal)
                        outcome = {"status": "error", "message": "worker process lost; rerun to solve this case"}
                    yield futures[future], outcome
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    finally:
        _restore(saved)


def _dask(todo, out_dir, workers, scheduler):
    """``(case, outcome)`` as the cases end on a Dask cluster (a case whose worker is lost is
    run again elsewhere by the scheduler)."""
    from distributed import Client, LocalCluster, as_completed

    if not todo:
        return
    saved = _one_thread_blas()
    cluster = None
    try:
        if scheduler == "local":
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
            client = Client(cluster)
        else:
            try:
                client = Client(scheduler, timeout="20s")
            except (OSError, TimeoutError, ValueError) as e:
                raise SchedulerError(f"--scheduler {scheduler}: cannot connect ({e})") from None
        with client:
            paths = [str(results_path(out_dir, c)) for c in todo]
            futures = client.map(solve_case, todo, paths, pure=False)
            cases_of = {f.key: c for f, c in zip(futures, todo)}
            try:
                for future in as_completed(futures):
                    yield cases_of[future.key], future.result()
            except BaseException:
                client.cancel(futures)
                raise
    finally:
        if cluster is not None:
            cluster.close()
        _restore(saved)


# ----------------------------------------------------------------------------- the table


def outcome_line(rows, out_dir) -> str:
    """The sweep in one line: its cases by status, and where its table is."""
    counts = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    done = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    cases = f"{len(rows)} case{'' if len(rows) == 1 else 's'}"
    return f"{cases} ({done}); table in {Path(out_dir) / 'table.csv'} and table.parquet"


def write_table(rows, out_dir) -> None:
    """``table.csv`` and ``table.parquet`` in ``out_dir``, each written whole."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = list(rows[0])
    with atomic(Path(out_dir) / "table.csv", "w") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    table = pa.table({c: _column([row[c] for row in rows]) for c in columns})
    with atomic(Path(out_dir) / "table.parquet") as f:
        pq.write_table(table, f)


def _column(values) -> list:
    """A column of one type for Parquet: numbers stay numbers (a missing one is null), and a
    column that mixes kinds becomes text."""
    present = [v for v in values if v != "" and v is not None]
    if present and all(is_number(v) for v in present):
        as_float = any(isinstance(v, float) for v in present)
        return [None if v == "" or v is None else (float(v) if as_float else v) for v in values]
    if present and all(isinstance(v, bool) for v in present):
        return [None if v == "" else v for v in values]
    return ["" if v is None else str(v) for v in values]
