"""Model predictive control: a receding horizon of Newton iterations, and a policy between updates.

An :class:`MPC` holds a problem builder ``build(t, q, v, tau) -> OCP`` (the horizon that
starts at time ``t`` from the measured state; ``tau`` the measured torques of an OCP with a
torque filter, else None) and one formulation of its OCPs, whose kernels are built
once (:meth:`ocp.formulation.Formulation.for_problem`). Each update builds the horizon's OCP,
warm-starts from the previous solution moved to the new horizon (:func:`warm_start`), runs
Newton iterations of the interior point (:func:`solvers.ipm.solve`), and returns a
:class:`Policy` for the plant until the next update (compiled with the compiled backend).

The policy (:class:`.policy.Policy`) is the first-order expansion of the solution in the
initial state around the last linearization point ``x_lin``: ``u = u_lin + k_0 + K_0 (x -
x_lin(t))`` from the Riccati recursion there (at the measured state, the first control of the
Newton step). Where the LQR there is not convex (``Quu + B^T P B`` not positive definite at some
stage: no gains exist), the recursion is that of the LQR with ``mu I`` added to every stage's
``Quu``, the smallest ``mu`` of :data:`REGULARIZATIONS` that makes it convex (Levenberg-Marquardt,
as Crocoddyl's and acados' regularizations; :func:`policy_recursion`): the update's policy is
then a damped one, and its :class:`Tick` says ``mu``. The ``scheme`` decides where that point is
(:data:`SCHEMES`):

- ``newton``: ``iterations`` Newton steps, then a linearization and a Riccati recursion at
  the final iterate for the policy: ``iterations + 1`` of each per update;
- ``rti``: the real-time iteration (Diehl, Bock and Schloeder 2005; acados' ``SQP_RTI``):
  ``iterations`` linearizations and Riccati recursions, the last one's solution the policy,
  its step taken only to warm-start the next update. With one iteration, an update costs one
  linearization and one Riccati recursion, with the step a single compiled call on compiled
  kernels (:func:`solvers.ipm.newton_step`; its :class:`Tick`'s ``solve`` part then holds all
  three, the ``policy`` part the policy alone).

A builder whose horizons recede stage by stage (the horizon at ``t + dt`` is that at ``t``
without its first stage and with one more at its end, ``dt`` its stages' time step, the terminal
cost the same; one group of contact stages) may say so with a method ``build.next_stage(t) ->
(stage, disturbance)``: the last stage of the horizon at ``t`` and the disturbance of its OCP.
Its updates a stage apart then move a compiled horizon in place (:mod:`.receding`) instead of
building the OCP, its formulation and the warm start: the same updates, bitwise, in both schemes
(``newton`` at a fixed barrier, with full Gauss-Newton steps; ``rti`` of one linearization with
any barrier). A builder whose horizons keep their structure between two knots, and meet it
again (a legged MPC's updates within a stage, and its gait's cycles), may say so with a method
``build.numbers(t, q, v, tau)``: the horizon's OCP, or its numbers with its structure
(:class:`.aligned.HorizonNumbers`). The MPC keeps a compiled horizon per structure met
(:mod:`.aligned`). An update whose knots start as the last horizon's but the first, which
starts within the last horizon's first stage, writes those numbers into that horizon in place;
one that returns to a structure met before, with the knots it had then, writes them into that
structure's kept horizon and loads the warm start there (:func:`warm_start`, its initial guesses
at the measured state): after an update in place, a warm start met before whose entries are all
copies is one gather from the last horizon's step. Neither builds the OCP or its formulation;
both run the same schemes, bitwise. Where a structure's constant inputs are its plan's numbers copied, they are gathered
from the plan (:mod:`.row_gather`) instead of made from its numbers' cost terms.
:attr:`MPC.formulation` and :attr:`MPC.result` are made of a horizon in place when
read; the result of an update in place keeps no linearization and no iteration history.

A builder may also give, with a method ``build.rehearsal(t, q, v, tau)``, the OCPs (or numbers)
of the horizons its updates will meet (a legged MPC's: those of its schedule's knots).
:meth:`MPC.start` then makes their compiled horizons (for numbers, with their row gathers and
kept horizons) before the first solve: an update that meets one of those structures finds its
index maps, workspaces and horizon made, as it would the second time.

Each update is recorded as a :class:`Tick` (wall time, iterations, KKT error, status).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field, replace

import numpy as np

from liftoff.dynamics.codegen import CompileError
from liftoff.ocp.formulation import Formulation, GroupVariables, Iterate
from liftoff.solvers.ipm import Options, Result, barrier_falls, newton_step, solve, stopping
from liftoff.solvers.riccati import RiccatiError, compiled_address, riccati

from .aligned import AlignedHorizon, HorizonNumbers, within_first_stage
from .in_place import Scratch, StepGather, entries
from .policy import Policy, PolicyKernel
from .receding import RecedingHorizon


@dataclass(frozen=True)
class Tick:
    """One update: its time ``t``, CPU ``seconds`` (building the OCP, solving, the gains),
    Newton ``iterations``, KKT error and solver status at its end; ``parts``: the CPU seconds
    of its steps (:data:`PARTS`; the first solve has no regrouping and no warm start);
    ``regularization``: the ``mu`` of the policy's recursion (module docstring; 0: none)."""

    t: float
    seconds: float
    iterations: int
    kkt_error: float
    status: str
    parts: dict = field(default_factory=dict)
    regularization: float = 0.0


PARTS = ("build", "regroup", "warm_start", "solve", "policy")  # an update's steps, in order
MATCHINGS = 1000  # the most warm-start matchings an MPC keeps (:func:`warm_start`)
KEPT = 200  # the most aligned horizons and row gathers an MPC keeps (one per structure, :meth:`MPC._update_kept`)
SCHEMES = ("newton", "rti")  # where the policy's linearization is (module docstring)
REGULARIZATIONS = tuple(10.0**k for k in range(-8, 5))  # the mu tried where the policy's LQR is not convex


class MPC:
    """Receding-horizon control of the OCPs of ``build`` (module docstring) in the formulation
    ``formulation`` evaluated by ``backend``; ``options`` of the interior point (its
    ``max_iterations`` is replaced: ``first_iterations`` for the first solve, ``iterations``
    per update); ``scheme``: one of :data:`SCHEMES`; ``on_tick(tick)`` sees every update.
    ``layout``: an OCP with every contact and cost term the horizons will have (the kernels are
    built for it once; default: the first horizon's), e.g. a stage with every foot of a legged
    robot on the ground."""

    def __init__(
        self,
        build,
        formulation="lifted",
        backend="compiled",
        options=Options(),
        iterations=1,
        first_iterations=100,
        on_tick=None,
        quiet=False,
        layout=None,
        scheme="newton",
    ):
        if scheme not in SCHEMES:
            raise ValueError(f"unknown MPC scheme {scheme!r}; expected one of {SCHEMES}")
        if not (isinstance(iterations, int) and iterations >= 1):
            raise ValueError(f"iterations per update must be an integer >= 1, got {iterations!r}")
        if not (isinstance(first_iterations, int) and first_iterations >= 1):
            raise ValueError(f"first_iterations must be an integer >= 1, got {first_iterations!r}")
        self.build, self.options = build, options
        self.iterations, self.first_iterations = iterations, first_iterations
        self.on_tick, self.formulation_name, self.backend, self.quiet = on_tick, formulation, backend, quiet
        self.layout, self.scheme = layout, scheme
        last = 1 if scheme == "rti" else 0  # an RTI's last iteration is the policy's linearization
        self._options = {n: replace(options, max_iterations=n - last) for n in {iterations, first_iterations}}
        self.t, self.policy_kernel = None, None
        self._formulation, self._result = None, None  # the latest horizon's, unless the receding horizon holds it
        self._receding = None  # the horizon the updates move in place (module docstring), or None
        self._aligned = None  # the horizon the updates renumber in place (module docstring), or None
        self._kept: dict = {}  # the aligned horizons of the structures met, by structure
        self._gathers: dict = {}  # their RowGather (None: none) by structure
        self._structure = None  # the structure of the latest OCP made of numbers (None: unknown)
        self._scratch = Scratch()  # the blocks of its calls
        self._in_place = None  # the one of the two that made the latest update
        self._fresh = True  # whether _formulation is the latest horizon's
        self._matchings: dict = {}  # warm_start's cache: the variables' shapes by kind of group, the matchings
        self._starts: dict = {}  # the kept horizons' starts gathered from the last one's step (_update_kept)
        self.ticks: list = []

    @classmethod
    def of_config(cls, build, config, formulation=None, quiet=False, layout=None) -> MPC:
        """The MPC of a task configuration: its ``solver`` section (``formulation`` overrides
        its formulation) and its ``mpc`` section's ``iterations``, ``first_iterations`` and
        ``scheme``."""
        s, m = config.solver, config.mpc
        name = formulation or s.formulation
        return cls(
            build, name, s.backend, s.options(), m.iterations, m.first_iterations, quiet=quiet, layout=layout,
            scheme=m.scheme,
        )  # fmt: skip

    @property
    def formulation(self) -> Formulation | None:
        """The formulation of the latest horizon's OCP (None before :meth:`start`)."""
        if not self._fresh:  # an update in place: its OCP made now
            self._formulation, self._fresh = self._formulation.for_problem(self._in_place.ocp()), True
        return self._formulation

    @formulation.setter
    def formulation(self, formulation):
        self._formulation, self._fresh = formulation, True

    @property
    def result(self):
        """The latest update's :class:`solvers.ipm.Result` (None before :meth:`start`); with
        ``rti``, its iterate the one its step reached (the next update's warm start)."""
        r = self._result
        if r is not None and r.iterate is None:  # an update in place: its iterate copied now
            r = self._result = replace(r, iterate=self._in_place.stepped())
        return r

    @result.setter
    def result(self, result):
        self._result = result

    def start(self, t, q, v, tau=None, warm_start=None) -> Policy:
        """The first solve, from the formulation's initial guess (or ``warm_start``: an
        :class:`ocp.formulation.Iterate` of the same structure) with ``first_iterations``."""
        stamps = [time.process_time()]
        self._receding = self._aligned = self._structure = None
        self._kept, self._gathers = {}, {}
        ocp = self.build.numbers(t, q, v, tau) if hasattr(self.build, "numbers") else self.build(t, q, v, tau)
        if isinstance(ocp, HorizonNumbers):
            self._structure, ocp = ocp.structure, ocp.ocp()
        stamps.append(time.process_time())
        if ocp.stages[0].kind != "contact":
            raise ValueError("an MPC horizon starts with a contact stage (its control is the policy's)")
        first = Formulation(self.layout or ocp, self.formulation_name, self.backend, quiet=self.quiet)
        self.formulation = first.for_problem(ocp) if self.layout is not None else first
        self._matchings, self._starts = {}, {}
        self.policy_kernel = None
        if self.formulation.backend == "compiled":
            try:
                self.policy_kernel = PolicyKernel(first.model, ocp.nu, ocp.ntau, self.quiet)
            except CompileError as e:  # the policy in numpy, as the stages fall back
                print(f"liftoff: warning: {e}; the policy runs in numpy", file=sys.stderr)
            self._rehearse(t, q, v, tau)
        return self._solve(t, stamps, warm_start, self.first_iterations)

    def _rehearse(self, t, q, v, tau):
        """Make the compiled horizons of the OCPs (or numbers) of ``build.rehearsal(t, q, v, tau)``,
        where the builder has that method (module docstring): their structures, their groups'
        index maps and workspaces, which the formulation keeps for the updates that meet them, and
        for numbers, where the updates renumber horizons in place, their structures' row gathers and
        kept aligned horizons (whose arrays the first update that meets them loads)."""
        if hasattr(self.build, "rehearsal"):
            in_place = self._recedes(self._options[self.iterations])  # whether the updates renumber horizons
            for made in self.build.rehearsal(t, q, v, tau):
                numbers = made if isinstance(made, HorizonNumbers) else None
                f = self.formulation.for_problem(made.ocp() if numbers else made)
                if f.compiled_horizon() is None or numbers is None or not in_place or numbers.structure in self._kept:
                    continue
                self._aligned_horizon(f, numbers.structure, _storage(f, self._matchings), t).gather_from(numbers)

    def update(self, t, q, v, tau=None) -> Policy:
        """One update at time ``t`` from the measured state ``(q, v)`` (and torques ``tau`` with
        a torque filter), after :meth:`start`."""
        if self._result is None:
            raise RuntimeError("MPC.update before MPC.start")
        stamps = [time.process_time()]
        if self._receding is not None:
            policy = self._update_in_place(t, q, v, tau, stamps)
            if policy is not None:
                return policy
        aligns = hasattr(self.build, "numbers") and self._recedes(self._options[self.iterations])
        structure = None
        if aligns:
            made = self.build.numbers(t, q, v, tau)
            if isinstance(made, HorizonNumbers):
                stamps.append(time.process_time())
                policy = self._update_aligned(t, made, stamps)
                if policy is not None:
                    return policy
                del stamps[1:]
                structure, made = made.structure, made.ocp()
            ocp = made
        else:
            ocp = self.build(t, q, v, tau)
        stamps.append(time.process_time())
        old, t_old = self._old(), self.t
        self.formulation, self._structure = old.for_problem(ocp), structure
        stamps.append(time.process_time())
        start = warm_start(old, t_old, self.result.iterate, self.formulation, t, self._matchings)
        stamps.append(time.process_time())
        r = self._aligned_horizon(self.formulation, self._structure, start, t) if aligns else None
        if r is None:
            return self._solve(t, stamps, start, self.iterations)
        self._aligned = self._in_place = r  # the steps in place, and the next updates' horizon
        return self._steps_and_policy(t, r, stamps)

    def _update_in_place(self, t, q, v, tau, stamps) -> Policy | None:
        """:meth:`update` by the receding horizon (module docstring), or None where it does not
        move so (another time than a stage later, a stage of another structure), the receding
        horizon left. Where its Newton step is not the compiled call's (a failed or non-convex
        linearization, a barrier that falls first), the update takes the steps of :meth:`_solve`
        from the moved start."""
        r = self._receding
        if abs(t - self.t - r.dt) > 1e-9 * max(1.0, abs(t)):
            return self._leave()
        stage, disturbance = self.build.next_stage(t)
        stamps.append(time.process_time())
        try:
            r.move(stage, q, v, np.zeros(0) if tau is None else tau, disturbance)
        except ValueError:  # the general update takes it (and says what is wrong)
            return self._leave()
        self._fresh, self._in_place = False, r
        stamps.append(time.process_time())
        r.warm_start()
        stamps.append(time.process_time())
        return self._steps_and_policy(t, r, stamps)

    def _old(self) -> Formulation:
        """The formulation of the latest update, for the next one's warm start and regrouping:
        after an update of the aligned horizon, its structure (:meth:`.aligned.AlignedHorizon.retimed`)."""
        if not self._fresh and self._in_place is self._aligned:
            return self._aligned.retimed()
        return self.formulation

    def _update_aligned(self, t, numbers, stamps) -> Policy | None:
        """:meth:`update` by the aligned horizon (module docstring) from the horizon's ``numbers``
        (:class:`.aligned.HorizonNumbers`), or by the kept horizon of their structure
        (:meth:`_update_kept`); None where neither moves so (no compiled horizon, numbers of
        another structure or whose knots are not within the last horizon's first stage, and no
        kept horizon of their structure and knots), nothing changed."""
        r = self._aligned
        if r is None:
            r = self._aligned = self._aligned_horizon(self.formulation, self._structure, self.result.iterate, self.t)
            if r is None:
                return None
        if not r.renumber(t, numbers):
            return self._update_kept(t, numbers, stamps)
        self._fresh, self._in_place = False, r
        stamps.append(time.process_time())
        r.warm_start()
        stamps.append(time.process_time())
        return self._steps_and_policy(t, r, stamps)

    def _update_kept(self, t, numbers, stamps) -> Policy | None:
        """:meth:`update` by the aligned horizon kept for the structure of ``numbers``, where its
        stages after the first are those it was made with (a horizon that returns to a structure
        met before: a gait's knots from one cycle to the next, its first stage of any length): the
        numbers written into it, and the warm start of :func:`warm_start` from the last update
        loaded, matched on the horizon's knots now (:meth:`.aligned.AlignedHorizon.retimed`; its
        initial guesses at the measured state); or None, nothing changed. After an update in
        place on an aligned horizon, a warm start met before whose entries are all copies is
        gathered from that horizon's step (:meth:`.in_place.HorizonInPlace.gather_start`)."""
        r = self._kept.get(numbers.structure)
        if r is None or not r.knots_as(numbers):
            return None
        source = self._aligned if not self._fresh and self._in_place is self._aligned else None
        key = None
        if source is not None:  # what the matching depends on: both horizons, their first stages, the time between
            dt = float(numbers.times[1] - numbers.times[0])
            key = (source.horizon.structure, source.structure, r.horizon.structure, r.structure)
            key += tuple(round(x, 9) for x in (source.dt, dt, t - self.t))
        known, gather = key in self._starts, self._starts.get(key)
        if gather is None:
            old, t_old, it = self._old(), self.t, self.result.iterate  # read before r (which may be old) moves
        if not r.renumber_at(t, numbers):
            return None
        stamps.append(time.process_time())
        if gather is not None:
            r.gather_start(source, gather)
        else:
            state, new = (numbers.q0, numbers.v0, numbers.tau0), r.retimed()
            r.load(warm_start(old, t_old, it, new, t, self._matchings, state))
            if key is not None and not known:  # None: not all copies, the general way each time
                if len(self._starts) >= MATCHINGS:
                    self._starts.clear()
                self._starts[key] = _start_gather(old, t_old, source.step_positions(), new, t, self._matchings)
        self._aligned = self._in_place = r
        self._fresh = False
        stamps.append(time.process_time())
        return self._steps_and_policy(t, r, stamps)

    def _aligned_horizon(self, formulation, structure, it, t) -> AlignedHorizon | None:
        """The aligned horizon of ``formulation`` (of the numbers' ``structure``; None: unknown)
        from its iterate ``it`` at time ``t``, kept for its structure (if known; at most
        :data:`KEPT` structures, their row gathers with them); None without a compiled horizon."""
        r = AlignedHorizon.of(formulation, it, t, self._scratch, structure, self._gathers)
        if r is not None and structure is not None:
            if len(self._kept) >= KEPT and structure not in self._kept:  # structures that do not recur
                self._kept.clear()
                self._gathers.clear()
            self._kept[structure] = r
        return r

    def _steps_and_policy(self, t, r, stamps) -> Policy:
        """The Newton steps of an update in place on ``r`` (a :class:`.in_place.HorizonInPlace`
        holding its numbers and its start) and its policy. Where they go the general way
        (:meth:`_steps_in_place`), the steps of :meth:`_solve` from the same start, on the
        formulation of ``r``'s OCP."""
        result = self._steps_in_place(r, self._options[self.iterations])
        stamps.append(time.process_time())
        if result is None:  # the steps one after the other, from the same start
            start, self._receding, self._aligned = r.start(), None, None
            self.formulation = self._formulation.for_problem(r.ocp())
            self._structure = r.structure if isinstance(r, AlignedHorizon) else None
            return self._solve(t, stamps[:-1], start, self.iterations)
        self.t, self.result = t, result  # its iterate made when read (:attr:`result`)
        return self._finish(t, stamps, Policy(r.formulation.model, t, r.dt, *r.first_stage()), result, 0.0)

    def _steps_in_place(self, r, options) -> Result | None:
        """The update's Newton steps on the receding horizon ``r`` (:mod:`.receding`), as
        :func:`solvers.ipm.solve` takes them at a fixed barrier, and with ``rti`` the step of the
        last linearization: its :class:`solvers.ipm.Result` (its iterate None: the horizon's). None
        where they go the general way: no compiled recursion, a call that fails or finds the LQR
        not convex, a value not finite, a barrier that falls (``monotone``)."""
        eps, recursion, begin = options.barrier, compiled_address(), time.perf_counter()
        if recursion is None:
            return None
        k = 0
        while True:
            try:
                status = r.newton_step(eps, recursion)
            except FloatingPointError:  # a stage kernel that failed: the steps one by one say where
                return None
            n = r.numbers()
            kkt_error = n["kkt_error"]
            if status or not np.isfinite(kkt_error) or barrier_falls(options, eps, kkt_error):
                return None
            stop = stopping(options, eps, kkt_error, k)
            if stop is not None:
                break
            r.advance()
            k += 1
        if self.scheme == "rti":  # the last linearization's step warm-starts the next update
            k += 1
        else:
            r.hold()
        numbers = (kkt_error, n["cost"], n["violation"], time.perf_counter() - begin, eps)
        return Result(*stop, k, *numbers, None, [], None)

    def _recedes(self, options) -> bool:
        """Whether the updates of ``options`` can move the horizon in place: an ``rti`` update of
        one linearization, or Newton steps at a fixed barrier, with full steps and Gauss-Newton's
        Hessian (the loop of :meth:`_steps_in_place`)."""
        if self.scheme == "rti" and options.max_iterations == 0:
            return True
        return options.barrier_update == "fixed" and not options.line_search and options.hessian == "gauss-newton"

    def _leave(self) -> None:
        """Leave the receding horizon: the formulation and the result are made of it."""
        self._formulation, self._result, self._receding = self.formulation, self.result, None
        return None

    def _solve(self, t, stamps, start, iterations) -> Policy:
        """Solve from ``start`` and make the policy; ``stamps``: the CPU times at the update's
        start and after each of its steps so far."""
        rti, f, options = self.scheme == "rti", self.formulation, self._options[iterations]
        fused = newton_step(f, options, start) if rti and start is not None else None
        result, sol, stepped = fused or (solve(f, options, warm_start=start), None, None)
        self.result = result
        stamps.append(time.process_time())
        self.t = t
        if result.linearization is None or not np.isfinite(result.kkt_error):
            raise MPCError(f"the MPC update at t = {t:.3f} s failed: {result.message}")
        lin, mu = result.linearization, 0.0
        if sol is None:
            try:
                sol, mu = policy_recursion(lin, f.backend)
            except RiccatiError as e:  # no gains at the last iterate, even damped
                raise MPCError(f"the MPC update at t = {t:.3f} s failed: {e}") from None
        it = result.iterate
        if rti:  # the step warm-starts the next update
            if stepped is None:
                d = f.direction(it, lin, sol)
                stepped = f.step(it, d, *f.max_steps(it, d))
            self.result = replace(result, iterate=stepped, iterations=result.iterations + 1, linearization=None)
        self._aligned = None  # made from this update at the next aligned one
        if hasattr(self.build, "next_stage") and self._recedes(self._options[self.iterations]):
            self._receding = RecedingHorizon.of(f, self.result.iterate)
        u0 = it.groups[0].u[0]  # the groups are in first-stage order: stage 0 is row 0 of the first
        dt = f.ocp.stages[0].dt
        plan = (it.q[:2].copy(), it.v[:2].copy(), it.tau[:2].copy())
        policy = Policy(f.model, t, dt, *plan, u0 + sol.feedforward[0], sol.gains[0])  # stage 0 has every control
        return self._finish(t, stamps, policy, result, mu)

    def _finish(self, t, stamps, policy, result, mu) -> Policy:
        """``policy`` compiled (with the compiled backend), and the update's :class:`Tick`."""
        if self.policy_kernel is not None:
            policy = self.policy_kernel.bind(policy)
        stamps.append(time.process_time())
        names = PARTS if len(stamps) == len(PARTS) + 1 else ("build", "solve", "policy")
        parts = {name: end - begin for name, begin, end in zip(names, stamps, stamps[1:])}
        tick = Tick(t, stamps[-1] - stamps[0], self._result.iterations, result.kkt_error, result.status, parts, mu)
        self.ticks.append(tick)
        if self.on_tick is not None:
            self.on_tick(tick)
        return policy


class MPCError(RuntimeError):
    """An update that could not produce a policy (a non-finite or singular problem)."""


def policy_recursion(lin, backend) -> tuple:
    """``(solution, mu)``: the Riccati recursion of the linearization ``lin`` (``mu = 0``) or,
    where it finds ``Quu + B^T P B`` not positive definite, that of the LQR with ``mu I`` added
    to every stage's ``Quu`` for the smallest ``mu`` of :data:`REGULARIZATIONS` that makes it
    definite (module docstring). :class:`RiccatiError` (the undamped recursion's) if none does."""
    try:
        return riccati(lin.lqr, lin.terminal, lin.dx0, backend), 0.0
    except RiccatiError as e:
        error = e
    lqr, eye = lin.lqr, np.eye(lin.lqr.Quu.shape[1])
    for mu in REGULARIZATIONS:
        try:
            return riccati(replace(lqr, Quu=lqr.Quu + mu * eye), lin.terminal, lin.dx0, backend), mu
        except RiccatiError:
            continue
    raise error


def warm_start(old, t_old, it: Iterate, new, t_new, cache=None, state=None) -> Iterate:
    """``it``, solved by the formulation ``old`` for the horizon that started at ``t_old``, as
    a start for ``new``, the horizon that starts at ``t_new``. Stages are matched by kind and
    start time: a stage of ``new`` takes the variables of the stage of ``old`` that starts when
    it does (or, for a contact stage, that runs when it starts: a shortened first stage; for an
    impulse stage, the impulse of ``old`` nearest in time within a stage: a touchdown moved), or
    else of the last stage of ``old`` of its kind and sizes (the horizon's new tail), or else
    keeps ``new``'s initial guess. A stage whose match holds other feet (a touchdown or a
    lift-off moved between the horizons) takes its match's controls and accelerations, and
    ``new``'s initial guess for the rest: its forces (static support on its own feet), their
    multipliers, slacks and duals, which belong to the feet. Each knot takes the state of its stage's
    match (the last knot, the last knot of ``old``). The contact schedule may differ between
    the horizons (impulse stages move with it). ``cache``: a dict kept across calls (an MPC's
    updates) that holds the variables' shapes of each kind of group and the matchings of the
    horizons' structures met (by their groups, their stages' start times relative to ``t_new``
    and the variables' shapes), or None. ``state``: the initial state ``(q0, v0, tau0)`` of new's
    initial guesses, where new's OCP is another of its structure (None: its OCP's). A horizon
    moved within its first stage, of the same groups (an MPC's updates between two knots), is
    ``it`` itself (:func:`_aligned`)."""
    matching = _matching_of(old, t_old, it, new, t_new, cache)
    if matching is None:  # each stage takes its own variables: no copy
        return it
    picks, source, refits = matching
    groups, nv = [], new.model.nv
    guessing = state is not None and any(g < 0 for sources, _ in picks for g in sources)
    guesses = new.from_state(*state) if guessing else new  # the formulation of the initial guesses
    for group, (sources, rows), refit in zip(new.groups, picks, refits):
        parts = [guesses.initial_variables(group, _barrier(it)) if g < 0 else it.groups[g] for g in sources]
        if len(parts) == 1:
            gv = type(parts[0])(*(x[rows] for x in _group_arrays(parts[0])))
        else:  # rows of the variables of several groups, one after the other
            arrays = zip(*map(_group_arrays, parts))
            gv = type(parts[0])(*(np.concatenate(xs)[rows] for xs in arrays))
        for row, g, r in refit:  # a stage on other feet than its match: its controls and accelerations
            gv.u[row], gv.w[row, :nv] = it.groups[g].u[r], it.groups[g].w[r, :nv]
        groups.append(gv)
    return Iterate(it.q[source], it.v[source], it.lam[source], tuple(groups), it.tau[source])


def _matching_of(old, t_old, it, new, t_new, cache) -> tuple | None:
    """:func:`warm_start`'s matching of ``new``'s stages with ``old``'s (:func:`_matching`, kept
    in ``cache``), or None where each stage takes its own variables (:func:`_aligned`)."""
    old_times, new_start = t_old + old.ocp.times(), t_new + new.ocp.times()
    if _aligned(old, old_times, new, new_start):
        return None
    cache = {} if cache is None else cache
    old_shapes = tuple(_shapes(gv) for gv in it.groups)
    signature = (  # the groups' keys by identity: equal keys are one object (ocp.problem._stage_key)
        tuple((id(g.key), g.index.tobytes()) for g in old.groups),
        tuple((id(g.key), g.index.tobytes()) for g in new.groups),
        (old_times - t_new).round(9).tobytes(),
        (new_start - t_new).round(9).tobytes(),
        old_shapes,
    )
    matching = cache.get(signature)
    if matching is None:
        if len(cache) >= MATCHINGS:  # structures that do not repeat: start over
            cache.clear()
        matching = cache[signature] = _matching(old, old_times[:-1], old_shapes, new, new_start, cache)
    return matching


def _start_gather(old, t_old, positions, new, t_new, cache) -> StepGather | None:
    """The gather of the entries of ``positions`` (:meth:`.in_place.HorizonInPlace.step_positions`
    of the horizon of ``old``) that :func:`warm_start` copies into each entry of ``new``'s start, in
    the order of a horizon's iterate (:func:`.in_place.entries`), or None where some entry is not a
    copy: a stage that takes an initial guess (matched on other feet, or unmatched)."""
    matching = _matching_of(old, t_old, positions, new, t_new, cache)
    if matching is not None and any(g < 0 for sources, _ in matching[0] for g in sources):
        return None
    return StepGather(entries(warm_start(old, t_old, positions, new, t_new, cache)))


def _aligned(old, old_times, new, new_start) -> bool:
    """Whether :func:`warm_start` matches each stage of ``new`` (its knots at the times
    ``new_start``) with the stage of ``old`` (``old_times``) of the same index: the same groups
    (keys by identity, indices), every stage but the first starting when old's does, the first
    starting when old's first does or, a contact stage, within it (the horizon moved within its
    first stage: an MPC's updates between two knots)."""
    first = old.ocp.stages[0]
    if len(old.groups) != len(new.groups) or not within_first_stage(old_times, new_start, first.kind, first.dt):
        return False
    pairs = zip(old.groups, new.groups)
    return not any(a.key is not b.key or a.size != b.size or (a.index != b.index).any() for a, b in pairs)


def _matching(old, old_start, old_shapes, new, new_start, cache) -> tuple:
    """:func:`warm_start`'s matching: per group of ``new``, the groups of old its stages take
    their variables from (-1: new's initial guess) and the rows they take in those groups'
    variables one after the other; the knot of old each knot of new takes; and per group of
    ``new``, its stages matched to a stage of old on other feet, as ``(row, group of old, row
    there)``: the stage whose controls and accelerations they take over the initial guess's."""
    where = _stage_rows(old)
    by_time = {(kind, t): k for k, (kind, t) in enumerate(zip(_kinds(old), np.round(old_start, 9).tolist()))}
    last_of = {(kind, old_shapes[where[k][0]]): k for k, kind in enumerate(_kinds(old))}
    new_rounded = np.round(new_start, 9).tolist()  # the start times matched to the nanosecond
    picks, source, refits = [], np.full(new.ocp.K + 1, old.ocp.K), []
    for group in new.groups:
        shape, rows, refit = _row_shapes(new, group, cache), [], []
        feet = _feet(group)
        for k in group.index.tolist():
            match = by_time.get((group.kind, new_rounded[k]))
            if match is None:  # a stage that starts within one of the previous horizon's, or an impulse moved
                match = _containing(old, old_start, group.kind, new_start[k])
            if match is not None and _feet(old.groups[where[match][0]]) != feet:
                source[k] = match  # other feet: the knot's state, controls and accelerations fit, not the forces
                refit.append((len(rows), *where[match]))
                rows.append((-1, len(rows)))
                continue
            if match is None or old_shapes[where[match][0]] != shape:
                match = last_of.get((group.kind, shape))
            if match is None:  # a stage unlike any of the previous horizon
                rows.append((-1, len(rows)))
                continue
            rows.append(where[match])
            source[k] = match
        sources = list(dict.fromkeys(g for g, _ in rows))
        sizes = [group.size if g < 0 else old.groups[g].size for g in sources]
        offsets = dict(zip(sources, np.cumsum([0] + sizes).tolist()))
        picks.append((tuple(sources), np.array([offsets[g] + r for g, r in rows], dtype=int)))
        refits.append(tuple(refit))
    return tuple(picks), source, tuple(refits)


def _feet(group) -> tuple:
    """The frames of ``group``'s contacts."""
    return tuple(c.frame for c in group.contact_set)


def _containing(formulation, starts, kind, t):
    """The stage of ``formulation`` (its stages starting at ``starts``) of ``kind`` that runs
    at time ``t``, for a contact stage; for an impulse stage, the impulse nearest ``t`` no
    farther than the longest contact stage (a touchdown moved between two horizons: a held
    schedule moves it by an update's period, a late foot by a stage); or None."""
    stages = formulation.ocp.stages
    if kind == "contact":
        for k, (stage, start) in enumerate(zip(stages, starts)):
            if stage.kind == kind and start < t < start + stage.dt - 1e-9:
                return k
        return None
    reach = max((stage.dt for stage in stages if stage.kind == "contact"), default=0.0) + 1e-9
    impulses = [(abs(start - t), k) for k, (stage, start) in enumerate(zip(stages, starts)) if stage.kind == kind]
    distance, k = min(impulses, default=(np.inf, None))
    return k if distance <= reach else None


def _barrier(it: Iterate) -> float:
    """The barrier whose central path the slacks and duals of ``it`` are on (their mean product)."""
    products = [float(np.mean(gv.s * gv.z)) for gv in it.groups if gv.s.size]
    return float(np.mean(products)) if products else 1e-3


def _kinds(formulation):
    return [stage.kind for stage in formulation.ocp.stages]


def _group_arrays(gv):
    return (gv.u, gv.w, gv.beta, gv.s, gv.z)


def _stage_rows(formulation):
    """Per stage of ``formulation``, its group's position and its row there."""
    rows = [None] * formulation.ocp.K
    for g, group in enumerate(formulation.groups):
        for r, k in enumerate(group.index):
            rows[k] = (g, r)
    return rows


def _shapes(gv) -> tuple:
    """The shapes of the variables ``(u, w, beta, s, z)`` of one stage of the group variables ``gv``."""
    return tuple(x.shape[1:] for x in _group_arrays(gv))


def _row_shapes(formulation, group, cache) -> tuple:
    """The shapes of the variables ``(u, w, beta, s, z)`` of a stage of ``group`` (kept in
    ``cache`` by the group's kind and contacts: they fix the numbers of controls, forces and
    inequalities of one formulation)."""
    key = ("shapes", group.kind, tuple((c.frame, c.kind, c.frame2) for c in group.contact_set))
    if key not in cache:
        cache[key] = _shapes_of(formulation, group)
    return cache[key]


def _storage(formulation, cache) -> Iterate:
    """An iterate of ``formulation``'s shapes, zero: the arrays of a horizon kept before an update
    loads its start (``cache``: :func:`_row_shapes`')."""
    K, ocp = formulation.ocp.K, formulation.ocp
    groups = tuple(
        GroupVariables(*(np.zeros((g.size, *shape)) for shape in _row_shapes(formulation, g, cache)))
        for g in formulation.groups
    )
    knots = (np.zeros((K + 1, n)) for n in (ocp.model.nq, ocp.model.nv, ocp.nx))
    return Iterate(*knots, groups, np.zeros((K + 1, ocp.ntau)))


def _shapes_of(formulation, group) -> tuple:
    m = sum(c.dim for c in group.contact_set)
    nv, nu = formulation.model.nv, formulation.ocp.nu if group.kind == "contact" else 0
    ni = formulation.stages.inequality_values(
        group,
        formulation.ocp.q0[None],
        formulation.ocp.v0[None],
        np.zeros((1, nu)),
        np.zeros((1, m)),
        None if formulation.ocp.torque_filter is None else formulation.ocp.tau0[None],
    ).shape[1]
    return ((nu,), (nv + m,), (nv + m,), (ni,), (ni,))
