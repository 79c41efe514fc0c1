"""``liftoff bench ddp``: liftoff's FDDP against Crocoddyl's ``SolverFDDP`` on the same problem.

A gait configuration's OCP without cones and limits (an unconstrained problem, where FDDP
needs no barrier) is built twice: as liftoff's :class:`ocp.shooting.Shooting` and as a
Crocoddyl ``ShootingProblem`` with the same contacts (3D, the configuration's reference
frame, Baumgarte gains ``[kp, kd]``), impacts, and cost terms (Crocoddyl's state, control,
frame translation and CoM residuals with weighted quadratic activations). Crocoddyl
integrates with the symplectic Euler; liftoff's state equation is the explicit one
(``q_{k+1} = q_k (+) dt v_k``), so the contact stages are a small Python action model
wrapping Crocoddyl's contact forward dynamics with that integrator (and the stage cost
unscaled by ``dt``, as liftoff's is). Both solvers start from liftoff's initial guess.

The report: the largest difference between the two next states of every stage at the
guess's knots (the dynamics agree), the iterations, final costs and their relative difference, and the CPU times
(Crocoddyl's Python stage models make its time no measure of Crocoddyl's speed).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from liftoff.ocp.costs import CenterOfMassCost, FramePositionCost, StateCost, VariableCost, broadcast_weights
from liftoff.ocp.shooting import Shooting
from liftoff.problems.tasks.config import load_config
from liftoff.problems.tasks.gaits import build_problem
from liftoff.solvers.ddp import DDPOptions, solve_ddp

from .common import BenchError

DEFAULT_CONFIG = "configs/anymal_trot.yaml"


def _modules():
    try:
        import crocoddyl
        import pinocchio
    except ImportError:
        raise BenchError(
            "the DDP cross-check runs Crocoddyl's FDDP in the same process, but it is not installed; "
            'install it with: pip install -e ".[bench]" (crocoddyl 3.2.1 with pin 4.0.0)'
        ) from None
    return crocoddyl, pinocchio


def unconstrained(ocp):
    """``ocp`` without friction cones and limits."""
    return dataclasses.replace(ocp, friction=None, limits=())


class _Translation:
    """An OCP's stages as Crocoddyl action models."""

    def __init__(self, ocp):
        from liftoff.dynamics.robots import robot_urdf

        crocoddyl, pin = self.crocoddyl, self.pin = _modules()
        name = ocp.model.name
        self.pmodel = pin.buildModelFromUrdf(str(robot_urdf(name)), pin.JointModelFreeFlyer())
        if self.pmodel.nq != ocp.model.nq or self.pmodel.nv != ocp.model.nv:
            raise BenchError(f"Pinocchio's {name} model has other dimensions than liftoff's")
        self.state = crocoddyl.StateMultibody(self.pmodel)
        self.actuation = crocoddyl.ActuationModelFloatingBase(self.state)
        self.ocp = ocp

    def _frame(self, name):
        return self.pmodel.getFrameId(name)

    def _reference(self, contact):
        return getattr(self.pin.ReferenceFrame, str(contact.reference).split(".")[-1])

    def costs(self, terms, nu):
        crocoddyl, state = self.crocoddyl, self.state
        out = crocoddyl.CostModelSum(state, nu)
        for i, term in enumerate(terms):
            if isinstance(term, StateCost):
                residual = crocoddyl.ResidualModelState(state, np.concatenate((term.q_ref, term.v_ref)), nu)
            elif isinstance(term, VariableCost) and term.variable == "u":
                residual = crocoddyl.ResidualModelControl(state, np.asarray(term.reference, dtype=float))
            elif isinstance(term, FramePositionCost):
                residual = crocoddyl.ResidualModelFrameTranslation(state, self._frame(term.frame), term.reference, nu)
            elif isinstance(term, CenterOfMassCost):
                residual = crocoddyl.ResidualModelCoMPosition(state, term.reference, nu)
            else:
                raise BenchError(f"no Crocoddyl residual for the cost term {type(term).__name__}")
            weights = np.array(broadcast_weights(term.weights, (1, residual.nr))[0])
            activation = crocoddyl.ActivationModelWeightedQuad(weights)
            out.addCost(f"{i}_{term.name}", crocoddyl.CostModelResidual(state, activation, residual), 1.0)
        return out

    def contact_stage(self, stage):
        crocoddyl, state, nu = self.crocoddyl, self.state, self.actuation.nu
        contacts = crocoddyl.ContactModelMultiple(state, nu)
        for c in stage.contacts:
            target = np.zeros(3) if c.placement is None else c.target()[1][:, 0]
            model = crocoddyl.ContactModel3D(
                state, self._frame(c.frame), target, self._reference(c), nu, np.array([c.kp, c.kd])
            )
            contacts.addContact(c.frame, model)
        dam = crocoddyl.DifferentialActionModelContactFwdDynamics(
            state, self.actuation, contacts, self.costs(stage.costs, nu), 0.0, True
        )
        return _explicit_euler(crocoddyl)(dam, stage.dt)

    def impulse_stage(self, stage):
        crocoddyl, state = self.crocoddyl, self.state
        impulses = crocoddyl.ImpulseModelMultiple(state)
        for c in stage.contacts:
            impulses.addImpulse(c.frame, crocoddyl.ImpulseModel3D(state, self._frame(c.frame), self._reference(c)))
        return crocoddyl.ActionModelImpulseFwdDynamics(state, impulses, self.costs(stage.costs, 0), 0.0, 0.0, True)

    def problem(self):
        crocoddyl, ocp = self.crocoddyl, self.ocp
        running = [self.contact_stage(s) if s.kind == "contact" else self.impulse_stage(s) for s in ocp.stages]
        terminal_dam = crocoddyl.DifferentialActionModelFreeFwdDynamics(
            self.state, self.actuation, self.costs(ocp.terminal_costs, self.actuation.nu)
        )
        terminal = crocoddyl.IntegratedActionModelEuler(terminal_dam, 0.0)
        problem = crocoddyl.ShootingProblem(np.concatenate((ocp.q0, ocp.v0)), running, terminal)
        problem.nthreads = 1  # the stage models are Python
        return problem


def _explicit_euler(crocoddyl):
    """A Crocoddyl action model class: a differential model integrated by the explicit Euler
    step ``x (+) dt (v, a)``, its cost not scaled by ``dt`` (liftoff's stage convention)."""

    class Data(crocoddyl.ActionDataAbstract):
        def __init__(self, model):
            crocoddyl.ActionDataAbstract.__init__(self, model)
            self.differential = model.differential.createData()
            self.dx = np.zeros(model.state.ndx)

    class ExplicitEuler(crocoddyl.ActionModelAbstract):
        def __init__(self, differential, dt):
            crocoddyl.ActionModelAbstract.__init__(self, differential.state, differential.nu, differential.nr)
            self.differential, self.dt = differential, dt

        def createData(self):
            return Data(self)

        def calc(self, data, x, u=None):
            d, nq = data.differential, self.state.nq
            self.differential.calc(d, x, u)
            data.dx = self.dt * np.concatenate((x[nq:], d.xout))
            data.xnext = self.state.integrate(x, data.dx)
            data.cost = d.cost

        def calcDiff(self, data, x, u=None):
            d, nv, dt = data.differential, self.state.nv, self.dt
            self.differential.calcDiff(d, x, u)
            Jx, Jdx = self.state.Jintegrate(x, data.dx)
            dx_x = np.zeros((2 * nv, 2 * nv))
            dx_x[:nv, nv:] = dt * np.eye(nv)
            dx_x[nv:] = dt * d.Fx
            data.Fx = Jx + Jdx @ dx_x
            data.Fu = Jdx[:, nv:] @ (dt * d.Fu)
            data.Lx, data.Lu, data.Lxx, data.Lxu, data.Luu = d.Lx, d.Lu, d.Lxx, d.Lxu, d.Luu

    return ExplicitEuler


def crosscheck(config_path=DEFAULT_CONFIG, max_iterations=100) -> dict:
    """liftoff's and Crocoddyl's FDDP on the unconstrained OCP of ``config_path`` (module
    docstring)."""
    crocoddyl, _ = _modules()
    ocp = unconstrained(build_problem(load_config(config_path)))
    shooting = Shooting(ocp, quiet=True)
    xs, us = shooting.initial_guess()
    problem = _Translation(ocp).problem()
    guess_us = [u[:n] for u, n in zip(us, shooting.nu)]

    mismatch = 0.0  # one step of every stage from the guess's knots
    for k, (model, data, u) in enumerate(zip(problem.runningModels, problem.runningDatas, guess_us)):
        model.calc(data, xs[k], u) if len(u) else model.calc(data, xs[k])
        step = shooting.difference(shooting.step(k, xs[k], u)[None], np.asarray(data.xnext)[None])
        mismatch = max(mismatch, float(np.max(np.abs(step))))

    start = time.process_time()
    ours = solve_ddp(shooting, "fddp", DDPOptions(max_iterations=max_iterations))
    ours_s = time.process_time() - start

    solver = crocoddyl.SolverFDDP(problem)
    counter = _counter(crocoddyl)()
    solver.setCallbacks([counter])
    start = time.process_time()
    converged = solver.solve(list(xs), guess_us, max_iterations, False)
    theirs_s = time.process_time() - start
    return {
        "config": str(config_path),
        "knots": ocp.K,
        "rollout_mismatch": mismatch,
        "liftoff": {"status": ours.status, "iterations": ours.iterations, "cost": ours.cost, "cpu_s": ours_s},
        "crocoddyl": {
            "status": "converged" if converged else "not converged",
            "iterations": counter.calls,
            "cost": solver.cost,
            "cpu_s": theirs_s,
        },
        "relative_cost_difference": abs(ours.cost - solver.cost) / abs(solver.cost),
    }


def _counter(crocoddyl):
    class Counter(crocoddyl.CallbackAbstract):
        """Counts the iterations (one call each)."""

        def __init__(self):
            crocoddyl.CallbackAbstract.__init__(self)
            self.calls = 0

        def __call__(self, solver):
            self.calls += 1

    return Counter


def format_crosscheck(r) -> str:
    lines = [
        f"{r['config']}: {r['knots']} knots, no cones or limits; one step of each stage differs by "
        f"{r['rollout_mismatch']:.1e}",
        f"{'solver':>10} {'status':>14} {'iterations':>10} {'cost':>18} {'CPU [s]':>8}",
    ]
    for name in ("liftoff", "crocoddyl"):
        s = r[name]
        lines.append(f"{name:>10} {s['status']:>14} {s['iterations']:>10} {s['cost']:>18.10e} {s['cpu_s']:>8.2f}")
    lines.append(f"relative cost difference {r['relative_cost_difference']:.1e}")
    return "\n".join(lines)
