"""Compiled stage kernels against the numpy reference: every output of every stage kind, on
random points of ANYmal's gait problems (compiled) and of random contact sets, frames and
costs on anymal, solo12 and talos (the same SX functions, interpreted); whole solves with
both backends."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from test_ocp import perturbed_iterate

from liftoff import dynamics
from liftoff.dynamics import Contact
from liftoff.dynamics.codegen import CompileError
from liftoff.dynamics.spatial import rotation_about
from liftoff.ocp import kernels
from liftoff.ocp.costs import (
    CenterOfMassCost,
    FramePositionCost,
    FrameRotationCost,
    FrameVelocityCost,
    StateCost,
    VariableCost,
)
from liftoff.ocp.formulation import Formulation
from liftoff.ocp.kernels import CompiledStages
from liftoff.ocp.problem import OCP, ContactStage, ImpulseStage
from liftoff.ocp.stages import NumpyStages
from liftoff.problems.tasks.config import load_config
from liftoff.problems.tasks.gaits import build_problem
from liftoff.solvers.ipm import solve
from liftoff.solvers.riccati import riccati

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
FIELDS = ("cost", "H", "g", "c", "C", "b", "A")
TOL = 1e-10  # relative to the largest magnitude of each output


def assert_close(reference, value, tol=TOL, what=""):
    reference, value = np.asarray(reference), np.asarray(value)
    assert reference.shape == value.shape, what
    np.testing.assert_allclose(
        value, reference, rtol=0, atol=tol * max(1.0, float(np.max(np.abs(reference), initial=0.0))), err_msg=what
    )


def random_point(ocp, rng, spread=0.05):
    """Knots near the initial state and random stage variables per group."""
    model, K = ocp.model, ocp.K
    q = dynamics.integrate(model, np.tile(ocp.q0, (K + 1, 1)), spread * rng.standard_normal((K + 1, model.nv)))
    v = rng.standard_normal((K + 1, model.nv))
    return q, v


def compare_groups(ocp, compiled, rng):
    """Every group's StageEval, static start's terms and dynamics, and the terminal stage, by
    both backends. The
    dynamics are compared where the Delassus matrix ``J M^-1 J^T`` has eigenvalues >= 1e-3, so
    that the numpy backend's proximal iterations (``mu = 1e-4``, 30 at most) converge; near
    singular random contacts they stop early or at a least-squares solution. Returns the number
    of stages whose dynamics were compared."""
    reference = NumpyStages(ocp)
    nv, compared = ocp.model.nv, 0
    q, v = random_point(ocp, rng)
    tau = 10 * rng.standard_normal((ocp.K + 1, ocp.ntau))  # the torque state of a filtered OCP

    def taus(index):
        return tau[index] if ocp.ntau else None

    for group in ocp.groups():
        idx, S = group.index, group.size
        m = sum(c.dim for c in group.contacts)
        nu = ocp.nu if group.kind == "contact" else 0
        u, w = 10 * rng.standard_normal((S, nu)), 10 * rng.standard_normal((S, nv + m))
        args = (group, q[idx], v[idx], u, w, q[idx + 1], v[idx + 1], taus(idx), taus(idx + 1))
        ref, got = reference.evaluate(*args), compiled.evaluate(*args)
        for name in FIELDS:
            assert_close(getattr(ref, name), getattr(got, name), what=f"{group.kind} stage {idx[0]}: {name}")
        assert_close(ref.ineq.g, got.ineq.g, what=f"{group.kind} stage {idx[0]}: inequalities")
        assert_close(ref.ineq.jacobian(), got.ineq.jacobian(), what=f"{group.kind} stage {idx[0]}: their Jacobian")
        nz = ocp.nx + nu
        assert_outside_supports_zero(ref, got.supports, nz)
        for a, b in zip(reference.static_terms(group), compiled.static_terms(group)):  # gravity and J at q0
            assert_close(a, b, what=f"{group.kind} stage {idx[0]}: the static start's terms")
        if "forward" in compiled.kernels:
            M, J = ref.C[:, :nv, nz : nz + nv], ref.C[:, nv:, nz : nz + nv]
            delassus = J @ np.linalg.solve(M, np.swapaxes(J, 1, 2))
            regular = np.linalg.eigvalsh(delassus)[:, 0] >= 1e-3 if m else np.ones(S, dtype=bool)
            torque = u if not ocp.ntau or group.kind != "contact" else tau[idx]
            w_ref = reference.dynamics(group, q[idx], v[idx], torque)
            w_got = compiled.dynamics(group, q[idx], v[idx], torque)
            assert_close(w_ref[regular], w_got[regular], tol=1e-9, what=f"dynamics at stage {idx[0]}")
            compared += int(np.sum(regular))
    for ref, got in zip(reference.terminal(q[-1], v[-1], taus(-1)), compiled.terminal(q[-1], v[-1], taus(-1))):
        assert_close(ref, got, what="terminal")
    return compared


def assert_outside_supports_zero(ref, supports, nz):
    """What the condensing skips, from the kernels' structure, is zero in the numpy values
    (the cones' barrier terms included: G^T G is tested through G's columns)."""
    zw, ww, ar, ac = supports
    Gw = np.any(ref.ineq.G[:, :, nz:] != 0, axis=(0, 1))
    H = ref.H
    keep = np.zeros(H.shape[1] - nz, dtype=bool)
    keep[zw] = True
    assert not np.any(H[:, :nz, nz:][:, :, ~keep]) and not np.any(Gw[~keep] & np.any(ref.ineq.G[:, :, :nz] != 0))
    keep[:] = False
    keep[ww] = True
    assert not np.any(H[:, nz:, nz:][:, ~keep]) and not np.any(Gw[~keep])
    Aw = ref.A[:, :, nz:]
    rows, cols = np.zeros(Aw.shape[1], dtype=bool), np.zeros(Aw.shape[2], dtype=bool)
    rows[ar], cols[ac] = True, True
    assert not np.any(Aw[:, ~rows]) and not np.any(Aw[:, :, ~cols])


@pytest.fixture(scope="module")
def trot():
    return build_problem(load_config(CONFIGS / "anymal_trot.yaml"))


def test_compiled_gait_stages_equal_numpy(trot):
    assert compare_groups(trot, CompiledStages(trot, forward=True, quiet=True), np.random.default_rng(0)) == trot.K


def test_without_a_compiler_the_static_start_s_terms_are_numpy_s(trot, monkeypatch, capsys):
    compiled = CompiledStages(trot, quiet=True)

    def no_compiler(*args):
        raise CompileError("no C compiler found")

    monkeypatch.setattr(kernels, "StaticTermsKernel", no_compiler)
    reference = NumpyStages(trot)
    for group in trot.groups():
        for a, b in zip(reference.static_terms(group), compiled.static_terms(group)):
            np.testing.assert_array_equal(a, b)
    assert capsys.readouterr().err.count("warning") == 1


@pytest.mark.parametrize("backend", ["compiled", "numpy"])
def test_a_formulation_from_another_state_guesses_as_that_states_problem(trot, backend):
    """:meth:`Formulation.from_state` after a first guess at the problem's own state: the initial
    guesses (the static start's terms made again) are those of the same problem from that state,
    to the last bit, and the formulation it came from keeps its own."""
    f = Formulation(trot, backend=backend, quiet=True)
    own = f.initial_iterate(0.1)
    rng = np.random.default_rng(5)
    q0, v0 = trot.q0.copy(), 0.1 * rng.standard_normal(trot.model.nv)
    q0[7:] += 0.1 * rng.standard_normal(trot.model.nv - 6)
    moved = f.from_state(q0, v0).initial_iterate(0.1)
    expected = f.for_problem(dataclasses.replace(trot, q0=q0, v0=v0)).initial_iterate(0.1)
    for a, b, c in zip(moved.groups, expected.groups, own.groups, strict=True):
        for x, y in zip(vars(a).values(), vars(b).values()):
            np.testing.assert_array_equal(x, y)
        assert a.u.size == 0 or not np.array_equal(a.u, c.u)  # a static start's torques moved with the joints
    again = f.initial_iterate(0.1)
    for a, c in zip(again.groups, own.groups):
        np.testing.assert_array_equal(a.u, c.u)


def test_gaits_of_one_robot_share_their_kernels(trot):
    """Slots are sorted, so the walk's kernels are the trot's: loading them compiles nothing."""
    walk = build_problem(load_config(CONFIGS / "anymal_walk.yaml"))
    a, b = CompiledStages(trot, quiet=True), CompiledStages(walk, quiet=True)
    assert a.kernels["contact"].path == b.kernels["contact"].path
    assert a.kernels["impulse"].path == b.kernels["impulse"].path


# ----------------------------------------------------------------------------- random contact sets

KINDS = ("3D", "6D", "z", "x y rz")
REFERENCES = ("LOCAL", "WORLD", "LOCAL_WORLD_ALIGNED")
ROBOT_FRAMES = {
    "anymal": ("LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT", "base"),
    "solo12": ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"),
    "talos": ("left_sole_link", "right_sole_link", "gripper_left_base_link", "arm_right_7_link"),
}


def random_contact(model, rng, frame, q):
    """A contact of a random kind and frame with Baumgarte gains and a target near ``q``'s."""
    kind, reference = KINDS[rng.integers(len(KINDS))], REFERENCES[rng.integers(len(REFERENCES))]
    R, p = dynamics.frame_placement(model, q, frame)
    p_target = p + 0.02 * rng.standard_normal(3)
    rotational = max(dynamics.Contact(frame, kind).rows) >= 3
    placement = (R @ _small_rotation(rng), p_target) if rotational else p_target
    return Contact(
        frame, kind, reference, kp=float(rng.uniform(0, 100)), kd=float(rng.uniform(0, 20)), placement=placement
    )


def _small_rotation(rng):
    w = 0.1 * rng.standard_normal(3)
    theta = np.linalg.norm(w)
    return rotation_about(w / theta, np.cos(theta), np.sin(theta))


def random_ocp(name, rng, torque_filter=None):
    """Two contact stages with different random contact sets, an impulse, a flight, and every
    kind of cost term (state, control, acceleration, forces, frame position and velocity, CoM;
    the torque state with a ``torque_filter``)."""
    model = dynamics.load(name)
    q0 = dynamics.integrate(model, dynamics.neutral(model), 0.1 * rng.standard_normal(model.nv))
    frames = ROBOT_FRAMES[name]
    pick = rng.permutation(len(frames))
    sets = [
        tuple(random_contact(model, rng, frames[i], q0) for i in pick[:2]),
        tuple(random_contact(model, rng, frames[i], q0) for i in pick[1:]),
    ]
    nv, nu = model.nv, model.nv - 6
    weights = rng.uniform(0.1, 10, 2 * nv)

    def costs(contacts, with_force=True):
        m = sum(c.dim for c in contacts)
        terms = (
            StateCost(q0, rng.standard_normal(nv), weights, "state"),
            VariableCost("u", rng.standard_normal(nu), 0.1, "control"),
            VariableCost("a", np.zeros(nv), rng.uniform(0.1, 1, nv), "acceleration"),
            FramePositionCost(frames[pick[0]], rng.standard_normal(3), 5.0, "track"),
            FrameVelocityCost(frames[pick[-1]], rng.standard_normal(3), [1.0, 0.5, 2.0], "sweep"),
            CenterOfMassCost(rng.standard_normal(3), np.array([1.0, 2.0, 3.0]), "com"),
        )
        if torque_filter is not None:
            terms += (VariableCost("tau", rng.standard_normal(nu), rng.uniform(0.1, 1, nu), "torque"),)
        if with_force:  # not in the flight: its stage has the slot with a neutral reference
            R, _ = dynamics.frame_placement(model, q0, frames[pick[1]])
            turn = _small_rotation(np.random.default_rng(nv))  # its own stream: the other draws stay
            terms += (FrameRotationCost(frames[pick[1]], R @ turn, [1.0, 2.0, 0.5], "orient"),)
        return terms + (
            (VariableCost("f", rng.standard_normal(m), rng.uniform(0.1, 1, m), "force"),) if with_force and m else ()
        )

    impulse_contacts = tuple(dataclasses.replace(c, kp=0.0, kd=0.0) for c in sets[1])
    stages = (
        ContactStage(sets[0], 0.01, costs(sets[0])),
        ContactStage(sets[0], 0.02, costs(sets[0])),
        ContactStage((), 0.02, costs((), False)),
        ImpulseStage(
            impulse_contacts,
            costs(impulse_contacts)[:1]
            + (
                FramePositionCost(frames[pick[1]], rng.standard_normal(3), 7.0, "land"),
                FrameVelocityCost(frames[pick[2 % len(pick)]], rng.standard_normal(3), [3.0, 2.0, 1.0], "approach"),
            ),
        ),
        ContactStage(sets[1], 0.02, costs(sets[1])),
    )
    terminal = (StateCost(q0, np.zeros(nv), weights, "state"), CenterOfMassCost(np.zeros(3), 1.0, "com"))
    if torque_filter is not None:
        terminal += (VariableCost("tau", np.zeros(nu), 2.0, "torque"),)
    return OCP(
        model,
        q0,
        np.zeros(nv),
        stages,
        terminal,
        0.6,
        torque_filter=torque_filter,
        tau0=rng.standard_normal(nu) if torque_filter else None,
    )


@pytest.mark.parametrize("name", sorted(ROBOT_FRAMES))
@pytest.mark.parametrize("seed", [0, 1])
def test_symbolic_stages_equal_numpy_on_random_contacts(name, seed):
    rng = np.random.default_rng([seed, len(name)])
    ocp = random_ocp(name, rng)
    assert compare_groups(ocp, CompiledStages(ocp, forward=True, compile=False), rng) >= 2  # the flight at least


@pytest.mark.parametrize("name", ["anymal", "talos"])
def test_symbolic_stages_with_a_torque_filter_equal_numpy(name):
    """The torque state (seed 001 eq. 49) in every stage kind: its state equation, ``ID - S
    tau``, the torque limits on it, its costs."""
    rng = np.random.default_rng([7, len(name)])
    ocp = random_ocp(name, rng, torque_filter=5.0)
    assert ocp.nx == 2 * ocp.model.nv + ocp.nu
    assert compare_groups(ocp, CompiledStages(ocp, forward=True, compile=False), rng) >= 1  # the flight at least


def _linearized(formulation, it, eps) -> list:
    """The numbers of a linearization at ``it`` and of the Newton direction from it, copied (the
    workspaces' blocks are the next linearization's): the LQR, each group's residuals,
    condensing and blocks, the norms; the direction's steps of every variable and step sizes."""
    lin, _ = formulation.linearize(it, eps)
    lqr = [np.array(getattr(lin.lqr, name)) for name in ("A", "B", "b", "Qxx", "Qxu", "Quu", "lx", "lu", "nu")]
    groups = [
        np.array(x)
        for step in lin.groups
        for x in (*step.residual.values(), *step.condensed.factors, step.condensed.T, step.condensed.t)
        + (step.lifted.H, step.lifted.g)
    ]
    d = formulation.direction(it, lin, riccati(lin.lqr, lin.terminal, lin.dx0, "compiled"))
    direction = [d.dx, d.lam, *(np.array(x) for g in d.groups for x in g), np.array(d.steps)]
    return lqr + groups + [np.array([lin.kkt_error, lin.cost, lin.constraint_violation, lin.infeasibility])] + direction


def _polishing_ocp():
    from liftoff.problems.tasks.config import parse_config
    from liftoff.problems.tasks.polishing import PolishingConfig, build_ocp, make_task

    return build_ocp(make_task(parse_config({"task": "polishing", "mpc": {"horizon": 6}}, schema=PolishingConfig)))


@pytest.mark.parametrize("problem", ["trot", "polishing"])
def test_a_group_linearized_in_one_compiled_call_is_its_steps_one_by_one(problem, trot, monkeypatch):
    """The kernel, the scatter, the interior-point terms and the condensing of a lifted group in
    one compiled call (ocp/group.c), and the expansion of its Newton step in another, give the
    numbers of their steps one by one to the last bit, at a random iterate (the trot: contact
    and impulse groups; polishing: a torque filter)."""
    ocp = trot if problem == "trot" else _polishing_ocp()
    formulation = Formulation(ocp, "lifted", "compiled", quiet=True)
    formulation._horizon = False  # group by group (the compiled horizon: tests/test_horizon.py)
    rng = np.random.default_rng(5)
    it = perturbed_iterate(formulation, rng, 1e-2)
    it = dataclasses.replace(it, tau=it.tau + rng.standard_normal(it.tau.shape))  # the filter's torques too
    fused = _linearized(formulation, it, 1e-2)
    workspaces = [formulation.stages.maps[int(g.index[0])].workspace for g in formulation.groups]
    assert all(ws.linearize and "group" in ws.calls for ws in workspaces)
    monkeypatch.setattr(CompiledStages, "linearize_group", lambda *args: None)  # the steps one by one
    for ws in workspaces:
        del ws.calls["group"]
    steps = _linearized(formulation, it, 1e-2)
    assert len(fused) == len(steps)
    for a, b in zip(fused, steps):
        np.testing.assert_array_equal(a, b)


def test_without_the_one_call_library_a_group_runs_its_steps_one_by_one(trot, monkeypatch):
    """When group.c cannot be compiled, the formulation takes the steps one by one, with the
    same numbers as the one call."""
    from liftoff.ocp import group

    def numbers(formulation):
        return _linearized(formulation, perturbed_iterate(formulation, np.random.default_rng(8), 1e-2), 1e-2)

    fused = numbers(Formulation(trot, "lifted", "compiled", quiet=True))
    monkeypatch.setattr(group, "_library", lambda: None)
    formulation = Formulation(trot, "lifted", "compiled", quiet=True)
    steps = numbers(formulation)
    assert all(formulation.stages.maps[int(g.index[0])].workspace.linearize is False for g in formulation.groups)
    assert len(fused) == len(steps)
    for a, b in zip(fused, steps):
        np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- whole solves


@pytest.mark.parametrize("formulation", ["lifted", "nonlifted"])
def test_trot_solve_is_the_same_with_both_backends(trot, formulation):
    options = load_config(CONFIGS / "anymal_trot.yaml").solver.options()
    results = {b: solve(Formulation(trot, formulation, b, quiet=True), options) for b in ("compiled", "numpy")}
    compiled, numpy_ = results["compiled"], results["numpy"]
    assert compiled.converged and numpy_.converged
    assert compiled.iterations == numpy_.iterations
    assert abs(compiled.cost - numpy_.cost) <= 1e-8 * abs(numpy_.cost)
    kkt_c, kkt_n = (np.array([h.kkt_error for h in r.history]) for r in (compiled, numpy_))
    np.testing.assert_allclose(kkt_c, kkt_n, rtol=1e-5, atol=1e-6)  # 1e-6: the trot's KKT round-off floor (9e-7)


@pytest.mark.parametrize("formulation", ["lifted", "nonlifted"])
def test_the_jump_stops_above_its_round_off_floor(formulation):
    """The backends differ in the last bits of their arithmetic: at the jump's tolerance (above
    its KKT error's round-off floor, configs/anymal_jump.yaml) they take the same iterations to
    the same cost; at 1e-5, inside that floor, the lifted solves took 27 and 34."""
    config = load_config(CONFIGS / "anymal_jump.yaml")
    jump, options = build_problem(config), config.solver.options()
    results = [solve(Formulation(jump, formulation, b, quiet=True), options) for b in ("compiled", "numpy")]
    assert all(r.converged for r in results)
    assert results[0].iterations == results[1].iterations
    assert abs(results[0].cost - results[1].cost) <= 1e-9 * abs(results[1].cost)


@pytest.mark.parametrize("compiled", [True, False])
def test_a_groups_blocks_are_the_kernels_nonzeros_at_its_rows_and_columns(compiled, monkeypatch):
    """A 4 x 6 output and a vector of 5, their nonzeros scattered into a group's rows and
    columns (one read twice, as for a contact listed twice), by scatter.c and by numpy; an entry
    listed with no source is cleared, the others are left as they were."""
    from liftoff.ocp import kernels

    if not compiled:
        monkeypatch.setattr(kernels, "_library", lambda: None)
    rng = np.random.default_rng(4)
    patterns = (np.array([0, 3, 7, 8, 11, 14, 19, 23]), np.array([1, 4]))
    rows, cols, picks = [2, 0, 2], [5, 1, 3, 1], [4, 0, 1]
    selections = [
        kernels._selection(patterns[0], 24, rows, cols, 6),
        kernels._selection(patterns[1], 5, [0], picks, 5),
    ]
    cleared = 2  # (0, 2) of the block: zero in the output
    assert cleared not in selections[0][1]
    selections[0] = (np.append(selections[0][0], -1), np.append(selections[0][1], cleared))
    blocks = kernels.Blocks(
        ((3, 4), (3,)),
        np.array([12, 3], dtype=np.intc),
        np.array([8, 2], dtype=np.intc),
        np.array([len(s[0]) for s in selections], dtype=np.intc),
        np.concatenate([s[0] for s in selections]).astype(np.intc),
        np.concatenate([s[1] for s in selections]).astype(np.intc),
    )
    values = [rng.standard_normal((5, 8)), rng.standard_normal((5, 2))]
    before = [np.full((5, 3, 4), 9.0), np.full((5, 3), 9.0)]
    matrix, vector = dense = [x.copy() for x in before]
    kernels.bind_scatter(values, blocks, dense)()
    for s in range(5):
        dense = np.zeros(24)
        dense[patterns[0]] = values[0][s]
        expected = dense.reshape(4, 6)[np.ix_(rows, cols)]
        written = np.zeros(12, dtype=bool)
        written[selections[0][1]] = True
        written = written.reshape(3, 4)
        np.testing.assert_array_equal(matrix[s][written], expected[written])
        assert np.all(matrix[s][~written] == 9.0) and matrix[s][0, 2] == 0.0
        dense = np.zeros(5)
        dense[patterns[1]] = values[1][s]
        np.testing.assert_array_equal(vector[s], np.where(dense[picks] != 0, dense[picks], 9.0))
