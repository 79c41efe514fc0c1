"""Costs as sums of named, weighted residuals, with Gauss-Newton Hessians.

A term has a residual ``r(z)`` of the stage variables ``z = (q, v, tau, u, a, f)`` (tangent
direction ``y = (dq, dv, dtau, du, da, df)``, the layout of :mod:`ocp.lifted`; ``tau`` the torque
state of a filtered OCP, empty otherwise) and weights ``w``;
its cost is ``1/2 r^T diag(w) r`` (weights per residual, or per stage and residual), its
Gauss-Newton Hessian ``R^T diag(w) R`` and gradient ``R^T diag(w) r`` with ``R = dr/dy``.
References may vary over the stages (a leading axis). Terms are switched off by leaving them
out of the :class:`CostSum`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from liftoff import dynamics
from liftoff.dynamics import manifold

BLOCKS = ("q", "v", "tau", "u", "a", "f")  # the variables in the order of y


@dataclass(frozen=True)
class StageVariables:
    """Stacked variables of ``S`` stages of one kind (``u, a, f, tau`` may be empty arrays)."""

    q: np.ndarray
    v: np.ndarray
    u: np.ndarray
    a: np.ndarray
    f: np.ndarray
    tau: np.ndarray | None = None  # the torque state (filtered OCPs); None: empty

    def __post_init__(self):
        if self.tau is None:
            object.__setattr__(self, "tau", np.zeros((len(self.q), 0)))

    @property
    def sizes(self):
        """Tangent sizes of ``(dq, dv, dtau, du, da, df)``."""
        nv = self.v.shape[1]
        return (nv, nv, self.tau.shape[1], self.u.shape[1], self.a.shape[1], self.f.shape[1])

    def block(self, name):
        """The columns of ``y`` holding ``name`` (one of ``q, v, tau, u, a, f``)."""
        i = BLOCKS.index(name)
        start = int(np.sum(self.sizes[:i]))
        return slice(start, start + self.sizes[i])


def _jacobian(z: StageVariables, name, d_dname):
    """A residual Jacobian ``(S, nr, ny)`` with ``d_dname`` in the columns of ``name``."""
    S, nr = d_dname.shape[:2]
    out = np.zeros((S, nr, int(np.sum(z.sizes))))
    out[:, :, z.block(name)] = d_dname
    return out


def checked_weights(w) -> np.ndarray:
    """Cost weights as a float array; ``ValueError`` for weights that are negative or not finite."""
    w = np.asarray(w, dtype=float)
    if not (np.isfinite(w) & (w >= 0)).all():
        raise ValueError(f"cost weights must be finite and >= 0, got {w}")
    return w


def broadcast_weights(w, shape):
    """Weights broadcast to the residuals' ``(S, nr)``: a scalar, one per residual, or one row
    per stage."""
    w = checked_weights(w)
    try:
        return np.broadcast_to(w, shape)
    except ValueError:
        raise ValueError(f"cost weights of shape {w.shape} do not fit residuals of shape {shape}") from None


@dataclass(frozen=True)
class StateCost:
    """``r = (q (-) q_ref, v - v_ref)``: configuration error in the tangent space."""

    q_ref: np.ndarray
    v_ref: np.ndarray
    weights: np.ndarray
    name: str = "state"

    def residual(self, model, z: StageVariables):
        r = np.concatenate((dynamics.difference(model, self.q_ref, z.q), z.v - self.v_ref), axis=1)
        _, d_dq = dynamics.difference_jacobians(model, self.q_ref, z.q)
        nv = model.nv
        R = np.zeros((len(z.q), 2 * nv, int(np.sum(z.sizes))))
        R[:, :nv, z.block("q")] = d_dq
        R[:, nv:, z.block("v")] = np.eye(nv)
        return r, R


@dataclass(frozen=True)
class VariableCost:
    """``r = x - x_ref`` for one of the variables ``u`` (control), ``a`` (acceleration), ``f``
    (contact forces, in their contacts' frames) or ``tau`` (the torque state of a filtered OCP)."""

    variable: str
    reference: np.ndarray
    weights: np.ndarray
    name: str = ""

    def residual(self, model, z: StageVariables):
        x = getattr(z, self.variable)
        return x - self.reference, _jacobian(
            z, self.variable, np.broadcast_to(np.eye(x.shape[1]), (len(x),) + (x.shape[1],) * 2)
        )


@dataclass(frozen=True)
class FramePositionCost:
    """``r = p_frame(q) - p_ref``, the frame origin in the world."""

    frame: str
    reference: np.ndarray
    weights: np.ndarray
    name: str = ""

    def residual(self, model, z: StageVariables):
        _, p = dynamics.frame_placement(model, z.q, self.frame)
        J = dynamics.frame_jacobian(model, z.q, self.frame, "LOCAL_WORLD_ALIGNED")[:, :3]
        return p - self.reference, _jacobian(z, "q", J)


@dataclass(frozen=True)
class FrameVelocityCost:
    """``r = v_frame(q, v) - v_ref``: the velocity of the frame origin in the world axes (its
    LOCAL_WORLD_ALIGNED linear velocity, :func:`dynamics.contact_velocity` of a 3D contact
    there), e.g. a landing foot's (Crocoddyl's pseudo-impulse cost)."""

    frame: str
    reference: np.ndarray
    weights: np.ndarray
    name: str = ""

    def residual(self, model, z: StageVariables):
        contact = (dynamics.Contact(self.frame),)  # 3D, LOCAL_WORLD_ALIGNED: its rows are that velocity
        d_dq, d_dv = dynamics.contact_velocity_derivatives(model, z.q, z.v, contact)
        R = _jacobian(z, "q", d_dq)
        R[:, :, z.block("v")] = d_dv
        return dynamics.contact_velocity(model, z.q, z.v, contact) - self.reference, R


@dataclass(frozen=True)
class PlaneDistanceCost:
    """``r = n . p_frame(q) - reference``: the frame origin's coordinate along the unit
    ``normal`` ``n (3,)`` (or ``(S, 3)``), for the signed distance to a plane of that normal
    (its offset in the reference): the penetration of a soft contact (:mod:`dynamics.soft_contact`)."""

    frame: str
    normal: np.ndarray
    reference: np.ndarray  # (1,), or (S, 1)
    weights: np.ndarray
    name: str = ""

    def residual(self, model, z: StageVariables):
        _, p = dynamics.frame_placement(model, z.q, self.frame)
        J = dynamics.frame_jacobian(model, z.q, self.frame, "LOCAL_WORLD_ALIGNED")[:, :3]
        n = np.broadcast_to(np.asarray(self.normal, dtype=float), p.shape)
        r = np.sum(n * p, axis=1, keepdims=True) - self.reference
        return r, _jacobian(z, "q", np.einsum("si,sin->sn", n, J)[:, None])


@dataclass(frozen=True)
class FrameRotationCost:
    """``r = log3(R_ref^T R(q))``: the frame's orientation error as a rotation vector in its own
    axes; ``R = jlog3(r) J_w`` with ``J_w`` the angular rows of the frame's LOCAL Jacobian."""

    frame: str
    reference: np.ndarray  # (3, 3), or (S, 3, 3)
    weights: np.ndarray
    name: str = ""

    def residual(self, model, z: StageVariables):
        R, _ = dynamics.frame_placement(model, z.q, self.frame)
        error = np.swapaxes(np.broadcast_to(self.reference, R.shape), 1, 2) @ R
        r = manifold.log3(error.transpose(1, 2, 0)).T
        J = dynamics.frame_jacobian(model, z.q, self.frame, "LOCAL")[:, 3:]
        return r, _jacobian(z, "q", manifold.jlog3(r.T).transpose(2, 0, 1) @ J)


@dataclass(frozen=True)
class CenterOfMassCost:
    """``r = c(q) - c_ref``."""

    reference: np.ndarray
    weights: np.ndarray
    name: str = "com"

    def residual(self, model, z: StageVariables):
        return dynamics.center_of_mass(model, z.q) - self.reference, _jacobian(
            z, "q", dynamics.com_jacobian(model, z.q)
        )


@dataclass(frozen=True)
class CostSum:
    """Named terms; ``evaluate`` gives each term's cost per stage, ``gauss_newton`` the sum's
    Hessian ``(S, ny, ny)`` and gradient ``(S, ny)`` in ``y``."""

    terms: tuple = field(default_factory=tuple)

    def evaluate(self, model, z: StageVariables) -> dict:
        out = {}
        for term in self.terms:
            r, _ = term.residual(model, z)
            out[term.name or type(term).__name__] = 0.5 * np.einsum(
                "si,si,si->s", r, broadcast_weights(term.weights, r.shape), r
            )
        return out

    def gauss_newton(self, model, z: StageVariables):
        ny = int(np.sum(z.sizes))
        H, g = np.zeros((len(z.q), ny, ny)), np.zeros((len(z.q), ny))
        for term in self.terms:
            r, R = term.residual(model, z)
            RtW = np.swapaxes(R * broadcast_weights(term.weights, r.shape)[:, :, None], 1, 2)
            H += RtW @ R
            g += (RtW @ r[:, :, None])[:, :, 0]
        return H, g
