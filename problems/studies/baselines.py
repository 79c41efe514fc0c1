"""The baselines of seed 004's comparison, on a gait configuration's OCP:

- ``fddp`` and ``ilqr`` (:mod:`solvers.ddp`) on the non-lifted shooting problem
  (:class:`ocp.shooting.Shooting`), the cones and limits by the relaxed barrier of the
  configuration's ``barrier`` and ``relaxation``. A relaxation of 0 is seed 004's "ideal"
  one: the largest of 1, 0.1, ..., 1e-8 whose solution converges with every inequality
  satisfied (each is solved from the initial guess in turn; the run reports the chosen
  one's solve). When none does, the run is the converged solve with the least violation
  (or, if none converged, the one with the least): the relaxed barrier's infeasible answer;
- ``ipopt`` and ``sqp`` (:mod:`solvers.ipopt`, :mod:`solvers.sqp`) on the exact NLP
  (:mod:`ocp.nlp`), barrier 0.

Each gives a :class:`problems.studies.runs.Run` with the interior point's result fields.
"""

from __future__ import annotations

import numpy as np

from liftoff.ocp.formulation import Formulation
from liftoff.problems.tasks.gaits import build_problem
from liftoff.solvers.ipm import IterationLog, Result

from .runs import Run

DDP_METHODS = ("fddp", "ilqr")
NLP_METHODS = ("ipopt", "sqp")
BASELINES = DDP_METHODS + NLP_METHODS
RELAXATIONS = tuple(10.0**-k for k in range(9))  # the ideal relaxation's candidates, largest first
FEASIBLE = 1e-9  # the largest gap or inequality violation of a feasible solution


def solve_baseline(config, method) -> Run:
    """Solve ``config`` by the baseline ``method`` (module docstring)."""
    if method in DDP_METHODS:
        return solve_ddp_config(config, method)
    if method in NLP_METHODS:
        return solve_nlp(config, method)
    raise ValueError(f"unknown method {method!r}; expected one of {BASELINES}")


def solve_ddp_config(config, method) -> Run:
    """``config`` by FDDP or iLQR with its solver section's barrier, relaxation, start and
    iteration limit; the message names the relaxation."""
    from liftoff.ocp.shooting import Shooting
    from liftoff.solvers.ddp import DDPOptions, solve_ddp

    s = config.solver
    ocp = build_problem(config)
    relaxations = (s.relaxation,) if s.relaxation > 0 else RELAXATIONS
    shooting = Shooting(ocp, s.barrier, relaxations[0], s.backend, s.init, quiet=True)
    tried = []
    for delta in relaxations:
        shooting = shooting.with_relaxation(delta)
        result = solve_ddp(shooting, method, DDPOptions(max_iterations=s.max_iterations))
        tried.append((not result.converged, result.max_constraint_violation, len(tried), delta, result))
        if result.converged and result.max_constraint_violation <= FEASIBLE:
            break
    *_, delta, result = min(tried)  # the feasible one, else the converged one with the least violation
    shooting = shooting.with_relaxation(delta)
    result.message = f"relaxation {delta:g}: {result.message}"
    iterate = result.iterate or shooting.formulation.initial_iterate(s.barrier)  # None: the guess failed
    trajectories = shooting.formulation.trajectories(iterate)
    return Run(config, result, trajectories, ocp.times(), shooting.backend, method)


def solve_nlp(config, method) -> Run:
    """Solve ``config``'s OCP as one NLP (:mod:`ocp.nlp`) by ``method``: ``ipopt``
    (:mod:`solvers.ipopt`) or ``sqp`` (:mod:`solvers.sqp`), from the interior point's initial
    guess (``solver.init``'s controls and forces). The run's result has the interior
    point's fields; its ``kkt`` history is the method's own measure: Ipopt's ``max(inf_pr,
    inf_du)``, the SQP's ``max(relative step, constraint violation)``; its barrier is 0 (the
    exact problem)."""
    from liftoff.ocp.nlp import build_nlp

    ocp = build_problem(config)
    form = Formulation(ocp, "lifted", "numpy")
    start = form.trajectories(form.initial_iterate(config.solver.barrier))  # the interior point's start
    nlp = build_nlp(ocp, guess=nlp_guess(ocp, start))
    if method == "ipopt":
        from liftoff.solvers.ipopt import solve_ipopt

        out = solve_ipopt(nlp)
    else:
        from liftoff.solvers.sqp import solve_sqp

        out = solve_sqp(nlp)
    per_iteration = out.solve_time_s / max(out.iterations, 1)
    history = [
        IterationLog(k, np.nan, float(e), 0.0, 1.0, 1.0, per_iteration, 0.0, 0.0, 0.0)
        for k, e in enumerate(out.history["measure"][: out.iterations])
    ]
    result = Result(
        out.status,
        out.message,
        out.iterations,
        out.measure,
        out.cost,
        out.violation,
        out.solve_time_s,
        0.0,
        None,
        history,
    )  # the interior point's result fields
    trajectories = form.trajectories(_iterate(form, nlp.unpack(out.x)))
    return Run(config, result, trajectories, ocp.times(), "casadi" if method == "ipopt" else "osqp", method)


def nlp_guess(ocp, trajectories) -> dict:
    """The NLP's start (:func:`ocp.nlp.build_nlp`) from a formulation's trajectories."""
    controls = [u if stage.kind == "contact" else np.zeros(0) for u, stage in zip(trajectories["u"], ocp.stages)]
    lifted = [np.concatenate((a, f)) for a, f in zip(trajectories["a"], trajectories["f"])]
    return {"q": trajectories["q"], "v": trajectories["v"], "u": controls, "w": lifted}


def _iterate(form, solution):
    """An NLP solution as the formulation's iterate (no multipliers or slacks: for its trajectories)."""
    from liftoff.ocp.formulation import GroupVariables, Iterate

    groups = []
    for group in form.groups:
        u = np.array([solution["u"][k] for k in group.index])
        w = np.array([solution["w"][k] for k in group.index])
        empty = np.zeros((group.size, 0))
        groups.append(GroupVariables(u.reshape(group.size, -1), w, empty, empty, empty))
    K = len(solution["q"]) - 1
    return Iterate(solution["q"], solution["v"], np.zeros((K + 1, 0)), tuple(groups), np.zeros((K + 1, 0)))
