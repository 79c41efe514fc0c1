"""Derivatives of the contact pieces (contact acceleration and velocity, contact and impulse
inverse dynamics) and of constrained and impulse dynamics against finite differences, for
every robot x reference x contact kind, with Baumgarte gains kp, kd > 0."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
import pytest
from conftest import atol, finite_differences, load_pair, random_states, regular_configurations

from liftoff import dynamics

FRAMES = {
    "anymal": ["LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT"],
    "talos": ["left_sole_link", "right_sole_link"],
    "ur5": ["tool0"],
}
REFERENCES = ["LOCAL", "WORLD", "LOCAL_WORLD_ALIGNED"]
KINDS = ["3D", "6D", "z", "x y rz"]
KP, KD = 20.0, 3.0
NFD = 3  # states per finite-difference check
SOLVE = dict(tol=1e-13, max_iter=100)
FD_TOL = 1e-6
# smaller steps for the solvers: near ill-conditioned contact sets their second derivatives
# are large, and the truncation error of 3e-6 steps exceeds 1e-6 (ANYmal "x y rz" in WORLD:
# 7e-6 relative; 3e-7 steps: truncation and rounding errors both below 0.25e-6)
SOLVE_EPS = 3e-7


@dataclass(frozen=True)
class Case:
    """A robot with a contact of one kind and reference on each of its ``frames``."""

    name: str
    reference: str
    kind: str
    frames: tuple

    @property
    def model(self):
        return load_pair(self.name)[0]

    @property
    def translational(self):
        return dynamics.Contact(self.frames[0], self.kind).translational

    def contacts(self, T=None):
        """The contacts with Baumgarte gains and the targets ``T (B, nframes, 12)`` (flattened
        R then p, as conftest.se3_difference), one per state; without ``T``: no gains."""
        if T is None:
            return [dynamics.Contact(f, self.kind, self.reference) for f in self.frames]
        targets = [(T[:, i, :9].reshape(-1, 3, 3), T[:, i, 9:]) for i in range(len(self.frames))]
        return [
            dynamics.Contact(f, self.kind, self.reference, kp=KP, kd=KD, placement=p if self.translational else (R, p))
            for f, (R, p) in zip(self.frames, targets)
        ]

    def targets(self, q, rng):
        """Baumgarte targets ``(B, nframes, 12)`` near the frames' placements at ``q``: errors
        of ~0.1 m and ~0.3 rad, away from the cut locus of log6."""
        out = np.empty((len(q), len(self.frames), 12))
        for i, frame in enumerate(self.frames):
            R, p = dynamics.frame_placement(self.model, q, frame)
            turns = np.array([pin.exp3(w) for w in 0.3 * rng.standard_normal((len(q), 3))])
            out[:, i, :9] = (R @ turns).reshape(-1, 9)
            out[:, i, 9:] = p + 0.1 * rng.standard_normal(p.shape)
        return out


def solvable_frames(name, kind):
    """The frames of a contact set that is not over-constrained: 6D contacts on ANYmal's four
    feet are 24 rows for 18 dofs (two feet on one side already have rank 11 < 12): one foot."""
    return FRAMES[name][:1] if (name, kind) == ("anymal", "6D") else FRAMES[name]


COMBINATIONS = list(itertools.product(FRAMES, REFERENCES, KINDS))
PIECES = [Case(n, r, k, tuple(FRAMES[n])) for n, r, k in COMBINATIONS]
SOLVABLE = [Case(n, r, k, tuple(solvable_frames(n, k))) for n, r, k in COMBINATIONS]


def case_id(case):
    return f"{case.name}-{case.reference}-{case.kind.replace(' ', '')}"


def finite_difference_jacobians(fn, args, model, n, eps=3e-6):
    """Finite-difference Jacobians of ``fn(*args)`` with respect to each of its first ``n``
    arguments: the first (``q``) on the manifold, the others in their vector spaces."""
    out = []
    for i, x in enumerate(args[:n]):
        rest = args[:i] + args[i + 1 :]
        moved = lambda x, *rest, i=i: fn(*rest[:i], x, *rest[i:])  # noqa: E731
        out.append(
            finite_differences(moved, x, *rest, model=model, wrt="configuration" if i == 0 else "vector", eps=eps)
        )
    return out


def assert_derivatives(ours, fds, names, tol=FD_TOL):
    for x, fd, name in zip(ours, fds, names):
        assert x.shape == fd.shape, name
        np.testing.assert_allclose(x, fd, rtol=0, atol=atol(fd, tol), err_msg=name)


def random_inputs(case, rng, n=NFD, regular=False):
    """Configurations (away from singularities of the contacts if ``regular``), v, a and
    Baumgarte targets of ``n`` random states."""
    q, v, a = random_states(case.model, rng, n)
    if regular:
        q = regular_configurations(case.model, rng, n, case.contacts())
    return q, v, a, case.targets(q, rng)


# ----------------------------------------------------------------------------- the pieces


@pytest.mark.parametrize("case", PIECES, ids=case_id)
def test_contact_acceleration_derivatives(case, rng):
    model = case.model
    q, v, a, T = random_inputs(case, rng)
    ours = dynamics.contact_acceleration_derivatives(model, q, v, a, case.contacts(T))
    fn = lambda q, v, a, T: dynamics.contact_acceleration(model, q, v, a, case.contacts(T))  # noqa: E731
    fds = finite_difference_jacobians(fn, (q, v, a, T), model, 3)
    assert_derivatives(ours, fds, ("d_dq", "d_dv", "d_da"))


@pytest.mark.parametrize("case", PIECES, ids=case_id)
def test_contact_velocity_derivatives(case, rng):
    model = case.model
    q, v, _, T = random_inputs(case, rng)
    ours = dynamics.contact_velocity_derivatives(model, q, v, case.contacts(T))
    fn = lambda q, v, T: dynamics.contact_velocity(model, q, v, case.contacts(T))  # noqa: E731
    fds = finite_difference_jacobians(fn, (q, v, T), model, 2)
    assert_derivatives(ours, fds, ("d_dq", "d_dv"))


@pytest.mark.parametrize("case", PIECES, ids=case_id)
def test_contact_inverse_dynamics_derivatives(case, rng):
    model = case.model
    q, v, a, T = random_inputs(case, rng)
    contacts = case.contacts(T)
    f = 10 * rng.standard_normal((NFD, sum(c.dim for c in contacts)))
    ours = dynamics.contact_inverse_dynamics_derivatives(model, q, v, a, f, contacts)
    fn = lambda q, v, a, f, T: dynamics.contact_inverse_dynamics(model, q, v, a, f, case.contacts(T))  # noqa: E731
    fds = finite_difference_jacobians(fn, (q, v, a, f, T), model, 4)
    assert_derivatives(ours, fds, ("d_dq", "d_dv", "d_da", "d_df"))


@pytest.mark.parametrize("case", PIECES, ids=case_id)
def test_impulse_inverse_dynamics_derivatives(case, rng):
    model = case.model
    q, dv, _, T = random_inputs(case, rng)
    contacts = case.contacts(T)
    impulse = rng.standard_normal((NFD, sum(c.dim for c in contacts)))
    ours = dynamics.impulse_inverse_dynamics_derivatives(model, q, dv, impulse, contacts)
    fn = lambda q, dv, impulse, T: dynamics.impulse_inverse_dynamics(model, q, dv, impulse, case.contacts(T))  # noqa: E731
    fds = finite_difference_jacobians(fn, (q, dv, impulse, T), model, 3)
    assert_derivatives(ours, fds, ("d_dq", "d_ddv", "d_dimpulse"))


# ----------------------------------------------------------------------------- constrained and impulse dynamics


def split_rows(fds, nv):
    """FD Jacobians of ``(x, f)`` stacked along the rows -> the ``x`` blocks, then the ``f`` blocks."""
    return [fd[..., :nv, :] for fd in fds] + [fd[..., nv:, :] for fd in fds]


@pytest.mark.parametrize("case", SOLVABLE, ids=case_id)
def test_constrained_dynamics_derivatives(case, rng):
    model = case.model
    q, v, a, T = random_inputs(case, rng, regular=True)
    tau = dynamics.rnea(model, q, v, a)  # unit-scale accelerations without the contacts
    contacts = case.contacts(T)
    ours = dynamics.constrained_dynamics_derivatives(model, q, v, tau, contacts, **SOLVE)

    def fn(q, v, tau, T):
        return np.concatenate(dynamics.constrained_dynamics(model, q, v, tau, case.contacts(T), **SOLVE), axis=-1)

    fds = split_rows(finite_difference_jacobians(fn, (q, v, tau, T), model, 3, SOLVE_EPS), model.nv)
    assert_derivatives(ours, fds, ("da_dq", "da_dv", "da_dtau", "df_dq", "df_dv", "df_dtau"))


@pytest.mark.parametrize("case", SOLVABLE, ids=case_id)
def test_impulse_dynamics_derivatives(case, rng):
    model = case.model
    q, v, _, T = random_inputs(case, rng, regular=True)
    ours = dynamics.impulse_dynamics_derivatives(model, q, v, case.contacts(T), **SOLVE)

    def fn(q, v, T):
        return np.concatenate(dynamics.impulse_dynamics(model, q, v, case.contacts(T), **SOLVE), axis=-1)

    fds = split_rows(finite_difference_jacobians(fn, (q, v, T), model, 2, SOLVE_EPS), model.nv)
    assert_derivatives(ours, fds, ("dvplus_dq", "dvplus_dv", "dimpulse_dq", "dimpulse_dv"))


# ----------------------------------------------------------------------------- targets


@pytest.mark.parametrize("batch_size", [3, 4])
@pytest.mark.parametrize("kind", ["3D", "6D"])
def test_single_target_placement_serves_the_batch(kind, batch_size, rng):
    """A target placement without batch axis (``p (3,)`` or ``(R (3, 3), p (3,))``) is the
    target of every state: the same as the placement repeated along the batch."""
    case = Case("talos", "LOCAL", kind, ("left_sole_link",))
    q, v, a, T = random_inputs(case, rng, batch_size)
    T = np.repeat(T[:1], batch_size, axis=0)
    R, p = T[0, 0, :9].reshape(3, 3), T[0, 0, 9:]
    single = dynamics.Contact(
        case.frames[0], kind, case.reference, kp=KP, kd=KD, placement=p if kind == "3D" else (R, p)
    )
    expected = dynamics.contact_acceleration(case.model, q, v, a, case.contacts(T))
    got = dynamics.contact_acceleration(case.model, q, v, a, [single])
    np.testing.assert_allclose(got, expected, rtol=0, atol=atol(expected, 1e-12))


# ----------------------------------------------------------------------------- 6D loop closures


def welded_hands(reference):
    """Talos on its soles (6D) with its hands welded together (a 6D loop closure, kd only)."""
    loop = dynamics.Contact("arm_left_7_link", "6D", reference, kd=KD, frame2="arm_right_7_link")
    return [loop] + [dynamics.Contact(f, "6D", "LOCAL") for f in FRAMES["talos"]]


@pytest.mark.parametrize("reference", ["LOCAL", "WORLD"])
def test_6d_loop_closure_derivatives(reference, rng):
    """The rows' derivatives, those of the contact inverse dynamics, and the constrained and
    impulse dynamics derivatives of a 6D loop closure against finite differences."""
    model = load_pair("talos")[0]
    contacts = welded_hands(reference)
    q = regular_configurations(model, rng, NFD, contacts)
    _, v, a = random_states(model, rng, NFD)
    pieces = (
        (dynamics.contact_acceleration_derivatives, dynamics.contact_acceleration, (q, v, a), 3),
        (dynamics.contact_velocity_derivatives, dynamics.contact_velocity, (q, v), 2),
    )
    for derivatives, value, args, n in pieces:
        ours = derivatives(model, *args, contacts)
        fds = finite_difference_jacobians(lambda *x, f=value: f(model, *x, contacts), args, model, n)
        assert_derivatives(ours, fds, ("d_dq", "d_dv", "d_da")[:n])
    f = 10 * rng.standard_normal((NFD, sum(c.dim for c in contacts)))
    ours = dynamics.contact_inverse_dynamics_derivatives(model, q, v, a, f, contacts)
    fn = lambda q, v, a, f: dynamics.contact_inverse_dynamics(model, q, v, a, f, contacts)  # noqa: E731
    assert_derivatives(ours, finite_difference_jacobians(fn, (q, v, a, f), model, 4), ("d_dq", "d_dv", "d_da", "d_df"))
    tau = dynamics.rnea(model, q, v, a)
    ours = dynamics.constrained_dynamics_derivatives(model, q, v, tau, contacts, **SOLVE)
    solve = lambda q, v, tau: np.concatenate(  # noqa: E731
        dynamics.constrained_dynamics(model, q, v, tau, contacts, **SOLVE), axis=-1
    )
    fds = split_rows(finite_difference_jacobians(solve, (q, v, tau), model, 3, SOLVE_EPS), model.nv)
    assert_derivatives(ours, fds, ("da_dq", "da_dv", "da_dtau", "df_dq", "df_dv", "df_dtau"))
    ours = dynamics.impulse_dynamics_derivatives(model, q, v, contacts, **SOLVE)
    jump = lambda q, v: np.concatenate(dynamics.impulse_dynamics(model, q, v, contacts, **SOLVE), axis=-1)  # noqa: E731
    fds = split_rows(finite_difference_jacobians(jump, (q, v), model, 2, SOLVE_EPS), model.nv)
    assert_derivatives(ours, fds, ("dvplus_dq", "dvplus_dv", "dimpulse_dq", "dimpulse_dv"))
