"""Contacts and loop closures: Jacobians, drifts, Baumgarte targets and their derivatives.

A :class:`Contact` holds a frame of the robot still, against the world or against a second
frame of the robot (a loop closure). Its rows are components of one of two motions:

- translational kinds (``"3D"``, or a subset of ``"x"``, ``"y"``, ``"z"``, e.g. ``"z"`` for a
  1D normal contact): the frame origin ``p`` as a point, velocity rows ``R_c^T R_ref^T pdot``
  and acceleration rows ``R_c^T R_ref^T pddot`` (the *classical* acceleration, Pinocchio's
  CONTACT_3D), with ``R_ref`` the frame's rotation in LOCAL and the identity in WORLD and
  LOCAL_WORLD_ALIGNED (a point force has no moment to transport: both are world axes), and
  ``R_c`` the contact's constant ``rotation`` (the identity by default): its columns are the
  contact's axes in the reference's axes (Crocoddyl's ``Rref``; a 1D ``"z"`` contact whose
  ``R_c`` has the surface normal ``n`` as third column holds ``n^T R_ref^T pdot``);
- ``"6D"`` and subsets with rotations (``"x y z rz"``, names from ``COMPONENTS``): the
  spatial motion of the frame, ``X_ref`` applied to the world motion of its body, with
  ``X_ref = Ad(oMf)^-1`` (LOCAL), the shift to ``p`` (LOCAL_WORLD_ALIGNED) or the identity
  (WORLD): Pinocchio's frame velocity and (spatial) acceleration, CONTACT_6D.

Either way the rows are ``K`` times the world spatial motion of the body (plus, for
accelerations, the classical term ``w x pdot``), so ``J = K J_body`` (seed 003 eq. 22). A loop
closure's rows are those of its first frame minus those of the second: for 6D kinds (LOCAL
or WORLD, no position gain) ``X_ref (v1 - v2)``, with the acceleration rows their time
derivative, ``X_ref (a1 - a2 + v1 x v2)`` in LOCAL. The
force ``f`` of a contact is expressed like its rows (same frame, same components) and is the
force the environment applies to the robot; its world wrench at the origin is ``K^T f``
(translational kinds: the world force ``R_ref R_c f_full``, ``f_full`` the rows of ``f``
scattered into their three components, at ``p``).

Baumgarte stabilization: the desired contact acceleration is ``alpha* = -kp e - kd (J v)``
with ``e`` the position error of the rows (``R_c^T R_ref^T (p - p_target)``; for 6D,
``log6(M_target^-1 M)`` in LOCAL, the same rotated by ``R`` in LOCAL_WORLD_ALIGNED (as
Pinocchio's corrector), ``log6(M M_target^-1)`` in WORLD), seed 004 eq. 5-6 with
``kp = beta^2, kd = 2 alpha``.

Derivatives go through the world frame (seed 001 Props. 3, 4 follow from it): for a dof
``k`` moving body ``j`` with ``u_k = ov_parent x oS_k``,
``d ov_j/dq_k = oS_k x ov_j + u_k`` and
``d oa_j/dq_k = oS_k x oa_j - oS_k x oa_parent - u_k x ov_parent - ov_j x u_k``,
and the frame maps add their own rotation (``d Ad^-1 m = -Ad^-1 (oS_k x m)``) or point
motion (``dp_k``) terms.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import UnknownNameError
from .kinematics import ReferenceFrame, frame_placement_world, world_jacobian
from .manifold import jlog6, log6, rotation_to_quat
from .spatial import (
    act_inv_motion,
    cross,
    eye,
    force_cross,
    matmul,
    matvec,
    motion_cross,
    shift_motion,
    skew,
    transpose,
)

COMPONENTS = ("x", "y", "z", "rx", "ry", "rz")


def _parse_kind(kind) -> tuple:
    if kind == "3D":
        return (0, 1, 2)
    if kind == "6D":
        return tuple(range(6))
    text = str(kind)
    tokens = text.replace(",", " ").split() if (" " in text or "," in text) else list(text)
    if not tokens or any(t not in COMPONENTS for t in tokens) or len(set(tokens)) != len(tokens):
        raise ValueError(
            f"contact kind {kind!r}: expected '3D', '6D' or distinct components among {', '.join(COMPONENTS)} "
            "(e.g. 'z', 'xy', 'x y z rz')"
        )
    return tuple(sorted(COMPONENTS.index(t) for t in tokens))


@dataclass(frozen=True)
class Contact:
    """A frame held by the world (or by ``frame2``: a loop closure). See the module docstring.

    ``placement``: target of the Baumgarte position error, ``p (3,)`` or ``(R, p)`` (arrays
    with a leading batch axis are fine); needed when ``kp > 0`` for a world contact.

    ``rotation``: translational kinds only, a constant rotation ``R_c (3, 3)`` whose columns
    are the contact's axes in the reference's axes (the frame's in LOCAL, the world's
    otherwise); rows and position errors are ``R_c^T R_ref^T (.)``, the force ``f`` is in
    those axes (world force ``R_ref R_c f_full``). ``None``: the identity. Stored read-only;
    ``rotation_key`` is its hashable copy, what ``==``, ``hash`` and slot keys compare.
    """

    frame: str
    kind: str = "3D"
    reference: ReferenceFrame | str = "LOCAL_WORLD_ALIGNED"
    kp: float = 0.0
    kd: float = 0.0
    frame2: str | None = None
    placement: object = None
    rotation: object = field(default=None, compare=False)
    rows: tuple = field(init=False, repr=False, compare=False)
    rotation_key: tuple | None = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "rows", _parse_kind(self.kind))
        object.__setattr__(self, "reference", ReferenceFrame.parse(self.reference))
        rotation = None if self.rotation is None else _check_rotation(self)
        object.__setattr__(self, "rotation", rotation)
        object.__setattr__(self, "rotation_key", None if rotation is None else tuple(rotation.ravel().tolist()))
        for name in ("kp", "kd"):
            value = getattr(self, name)
            if not (np.isscalar(value) and np.isfinite(value) and value >= 0):
                raise ValueError(f"contact on {self.frame!r}: {name} must be a finite number >= 0, got {value!r}")
        if self.frame2 is not None and not self.translational:
            if self.kp > 0:
                raise ValueError(
                    f"loop closure {self.frame!r}-{self.frame2!r}: a position gain kp > 0 needs a translational kind "
                    "('3D', 'x', ...); 6D loop closures take kd only"
                )
            if self.reference is ReferenceFrame.LOCAL_WORLD_ALIGNED:
                raise ValueError(
                    f"loop closure {self.frame!r}-{self.frame2!r}: 6D loop closures are expressed in LOCAL or WORLD"
                )
        self._check_placement(self.placement)

    def _check_placement(self, placement):
        if self.kp > 0 and self.frame2 is None and placement is None:
            raise ValueError(f"contact on {self.frame!r}: kp > 0 needs a target placement (placement=p or (R, p))")

    def with_placement(self, placement) -> Contact:
        """This contact with the target ``placement`` (as the field), its other fields as they
        were checked when it was made: what a controller that moves its contacts' targets at
        every update makes of one contact, without parsing its kind and frames again."""
        self._check_placement(placement)
        out = object.__new__(Contact)
        out.__dict__.update(self.__dict__, placement=placement)
        return out

    @property
    def translational(self) -> bool:
        return max(self.rows) < 3

    @property
    def dim(self) -> int:
        return len(self.rows)

    def target(self):
        """The target placement as ``(R (3, 3, B or 1) or None, p (3, B or 1))``, batch-last."""
        placement = self.placement
        R, p = placement if isinstance(placement, tuple) else (None, placement)
        p = np.asarray(p, dtype=float)
        if p.shape[-1:] != (3,) or p.ndim > 2:
            raise ValueError(
                f"contact on {self.frame!r}: target position must have shape (3,) or (B, 3), got {p.shape}"
            )
        p = p.reshape(-1, 3).T
        if R is None:
            return None, p
        R = np.asarray(R, dtype=float)
        if R.shape[-2:] != (3, 3) or R.ndim > 3:
            raise ValueError(
                f"contact on {self.frame!r}: target rotation must have shape (3, 3) or (B, 3, 3), got {R.shape}"
            )
        return R.reshape(-1, 3, 3).transpose(1, 2, 0), p


def _check_rotation(c: Contact) -> np.ndarray:
    """``c.rotation`` as a read-only ``(3, 3)`` array; ``ValueError`` unless it is a rotation
    (finite, ``R^T R = 1`` and ``det R = +1`` to 1e-9) of a translational contact."""
    if not c.translational:
        raise ValueError(
            f"contact on {c.frame!r}: a rotation of the contact's axes needs a translational kind "
            f"('3D' or among 'x', 'y', 'z'), got kind {c.kind!r}"
        )
    R = np.array(c.rotation, dtype=float)
    if R.shape != (3, 3):
        raise ValueError(f"contact on {c.frame!r}: rotation must be a (3, 3) matrix, got shape {R.shape}")
    if not np.all(np.isfinite(R)):
        raise ValueError(f"contact on {c.frame!r}: rotation must be finite")
    orthonormal = np.max(np.abs(R.T @ R - np.eye(3))) <= 1e-9
    if not (orthonormal and abs(np.linalg.det(R) - 1.0) <= 1e-9):
        raise ValueError(f"contact on {c.frame!r}: rotation must be orthonormal with determinant +1 (to 1e-9)")
    R.setflags(write=False)
    return R


@dataclass(frozen=True)
class ResolvedContact:
    """A contact bound to a model: its frames' joints and the offset of its rows in ``f``."""

    contact: Contact
    frame: int
    joint: int
    frame2: int | None
    joint2: int | None
    offset: int

    @property
    def slice(self):
        return slice(self.offset, self.offset + self.contact.dim)


def check(model, contacts) -> list:
    """``contacts`` (one :class:`Contact` or several) as a list, checked against ``model``:
    ``ValueError`` for an empty set, ``TypeError`` for another object, :class:`UnknownNameError`
    for a frame ``model`` does not have."""
    return [c for c, _, _ in _frame_indices(model, contacts)]


def resolve(model, contacts) -> tuple:
    """Bind ``contacts`` to ``model``; raise on an empty set or unknown frames (:func:`check`)."""
    out, offset = [], 0
    for c, f, f2 in _frame_indices(model, contacts):
        out.append(
            ResolvedContact(
                c, f, int(model.frame_parent[f]), f2, None if f2 is None else int(model.frame_parent[f2]), offset
            )
        )
        offset += c.dim
    return tuple(out)


def _frame_indices(model, contacts) -> list:
    """``(contact, frame, frame2)`` of each of ``contacts``, its frames' indices in ``model``
    (``frame2`` None without a second frame), checked as :func:`check` says."""
    if isinstance(contacts, Contact):
        contacts = [contacts]
    contacts = list(contacts)
    if not contacts:
        raise ValueError("empty contact set: constrained and impulse dynamics need at least one Contact")
    out = []
    for c in contacts:
        if not isinstance(c, Contact):
            raise TypeError(f"expected dynamics.Contact objects, got {type(c).__name__}")
        out.append((c, _frame_id(model, c.frame), None if c.frame2 is None else _frame_id(model, c.frame2)))
    return out


def _frame_id(model, name):
    try:
        return model.frame_id(name)
    except UnknownNameError as err:
        raise UnknownNameError(f"contact: {err}") from None


def dimension(resolved) -> int:
    return sum(r.contact.dim for r in resolved)


# ----------------------------------------------------------------------------- the rows


@dataclass(frozen=True)
class _Point:
    """World quantities of a frame origin ``p`` on body ``j``: placement, body motions, point motions."""

    j: int
    R: np.ndarray  # (3, 3, B)
    p: np.ndarray  # (3, B)
    Jw: np.ndarray  # (6, nv, B) body Jacobian (world, origin)
    v: np.ndarray  # (6, B) body velocity
    a: np.ndarray  # (6, B) body acceleration
    pdot: np.ndarray  # (3, B)
    pddot: np.ndarray  # (3, B) classical acceleration


def _point(model, kin, f, j) -> _Point:
    R, p = frame_placement_world(model, kin, f, j)
    B = kin.batch_size
    v = np.zeros((6, B)) if j < 0 else kin.ov[:, j]
    a = np.zeros((6, B)) if j < 0 or kin.oa is None else kin.oa[:, j]
    pdot = shift_motion(v, p)[:3]
    pddot = shift_motion(a, p)[:3] + cross(v[3:], pdot)
    return _Point(j, R, p, world_jacobian(model, kin, j), v, a, pdot, pddot)


def _point_rows(R_ref_t, p):
    """``K = R_ref^T [1, -[p]x]``: point velocity rows from a world spatial motion, ``(3, 6, B)``."""
    return np.concatenate((R_ref_t, -matmul(R_ref_t, skew(p))), axis=1)


def _frame_map(reference, R, p):
    """``X_ref (6, 6, B)``: the frame's spatial motion in ``reference`` from the world one."""
    identity = np.broadcast_to(np.eye(6)[..., None], (6, 6, p.shape[-1]))
    if reference is ReferenceFrame.WORLD:
        return identity
    if reference is ReferenceFrame.LOCAL:
        return act_inv_motion(R[:, :, None], p[:, None], identity)
    return shift_motion(identity, p[:, None])


@dataclass(frozen=True)
class ContactRows:
    """One contact's rows: world row maps ``K`` per body, Jacobian, velocity, drift, target.

    ``error`` is the full position error (3 or 6 components) in the world axes for
    translational kinds and in the contact's reference for 6D kinds."""

    bodies: tuple  # ((joint, K (m, 6, B)), ...): rows = sum K (world motion of the body)
    J: np.ndarray  # (m, nv, B)
    velocity: np.ndarray  # (m, B)  J v
    drift: np.ndarray  # (m, B)  acceleration rows at zero acceleration
    target: np.ndarray  # (m, B)  alpha* = -kp e - kd J v
    points: tuple  # the _Point of each frame (for derivatives)
    R_ref_t: np.ndarray | None  # translational kinds: R_c^T R_ref^T (3, 3, B)
    X: np.ndarray | None  # 6D kinds: X_ref (6, 6, B)
    error: np.ndarray | None


def contact_rows(model, kin, rc: ResolvedContact) -> ContactRows:
    """The rows of ``rc`` from world kinematics ``kin`` at zero acceleration and without
    gravity (so that the acceleration rows are the drift)."""
    c = rc.contact
    sel = list(c.rows)
    pt = _point(model, kin, rc.frame, rc.joint)
    if c.translational:
        R_ref_t = _rotated(c, transpose(pt.R) if c.reference is ReferenceFrame.LOCAL else eye(3, pt.p))
        bodies = [(pt.j, _point_rows(R_ref_t, pt.p))]
        vel, acc, points, error = pt.pdot, pt.pddot, (pt,), None
        if rc.frame2 is not None:
            pt2 = _point(model, kin, rc.frame2, rc.joint2)
            bodies.append((pt2.j, -_point_rows(R_ref_t, pt2.p)))
            vel, acc, points, error = vel - pt2.pdot, acc - pt2.pddot, (pt, pt2), pt.p - pt2.p
        elif c.placement is not None:
            error = pt.p - np.broadcast_to(c.target()[1], pt.p.shape)
        vel, acc = matvec(R_ref_t, vel), matvec(R_ref_t, acc)
        error_rows = None if error is None else matvec(R_ref_t, error)
        X = None
    elif rc.frame2 is not None:  # 6D loop closure: the time derivative of the velocity rows
        X = _frame_map(c.reference, pt.R, pt.p)
        R_ref_t, error = None, None
        pt2 = _point(model, kin, rc.frame2, rc.joint2)
        bodies, points = [(pt.j, X), (pt2.j, -X)], (pt, pt2)
        vel, acc = matvec(X, pt.v - pt2.v), matvec(X, pt.a - pt2.a) + _loop_drift(c.reference, X, pt, pt2)
        error_rows = None
    else:
        X = _frame_map(c.reference, pt.R, pt.p)
        R_ref_t = None
        bodies = [(pt.j, X)]
        vel, acc, points = matvec(X, pt.v), matvec(X, pt.a), (pt,)
        error = error_rows = None if c.placement is None else _error_6d(c, pt)
    J = sum(_apply_rows(K, p.Jw) for (_, K), p in zip(bodies, points))
    target = -c.kd * vel
    if error_rows is not None and c.kp > 0:
        target = target - c.kp * error_rows
    bodies = tuple((j, K[sel]) for j, K in bodies)
    return ContactRows(bodies, J[sel], vel[sel], acc[sel], target[sel], points, R_ref_t, X, error)


def _rotated(c: Contact, R_ref_t):
    """``R_c^T R_ref^T (3, 3, B)``: the contact's axes (``R_ref_t`` itself without a rotation)."""
    return R_ref_t if c.rotation is None else matmul(c.rotation.T[:, :, None], R_ref_t)


def _loop_drift(reference, X, pt, pt2):
    """The term of ``d/dt (X_ref (v1 - v2))`` besides ``X_ref (a1 - a2)`` for world motions
    ``v1, v2`` of the two bodies: the frame's turn in LOCAL, ``X (v1 x v2)`` (Pinocchio's
    CONTACT_6D between two joints); none in WORLD."""
    if reference is ReferenceFrame.LOCAL:
        return matvec(X, motion_cross(pt.v, pt2.v))
    return np.zeros_like(pt.v)


def _apply_rows(K, X):
    """``K (m, 6, B)`` applied to motions ``X (6, ..., B)``."""
    return np.einsum("rcb,c...b->r...b", K, X)


def _target_placement(c: Contact, B):
    R, p = c.target()
    if R is None:
        raise ValueError(f"contact on {c.frame!r}: a 6D position error needs placement=(R, p)")
    return np.broadcast_to(R, (3, 3, B)), np.broadcast_to(p, (3, B))


def _error_6d(c: Contact, pt: _Point):
    """Position error of a 6D contact in its reference (see the module docstring)."""
    Rt, p_t = _target_placement(c, pt.p.shape[-1])
    if c.reference is ReferenceFrame.LOCAL:  # log6(Mt^-1 M)
        return log6(rotation_to_quat(matmul(transpose(Rt), pt.R)), matvec(transpose(Rt), pt.p - p_t))
    if c.reference is ReferenceFrame.WORLD:  # log6(M Mt^-1)
        R = matmul(pt.R, transpose(Rt))
        return log6(rotation_to_quat(R), pt.p - matvec(R, p_t))
    local = log6(rotation_to_quat(matmul(transpose(Rt), pt.R)), matvec(transpose(Rt), pt.p - p_t))
    return np.concatenate((matvec(pt.R, local[:3]), matvec(pt.R, local[3:])))


# ----------------------------------------------------------------------------- derivatives


@dataclass(frozen=True)
class BodyDerivatives:
    """Derivatives ``(6, nv, B)`` of the world velocity and acceleration of one body."""

    S: np.ndarray  # oS masked to the body's support: d v/dv = d a/da
    dv_dq: np.ndarray
    da_dq: np.ndarray
    da_dv: np.ndarray


def body_derivatives(model, kin, j) -> BodyDerivatives:
    """For ``kin`` with velocities and accelerations (no gravity), see the module docstring."""
    S = world_jacobian(model, kin, j)
    if j < 0:
        return BodyDerivatives(S, S, S, S)
    support = model.tree.support[j][:, None]
    v_par, a_par = kin.parent_velocity(model), kin.parent_acceleration(model)
    u = motion_cross(v_par, S)
    v, a = kin.ov[:, j][:, None], kin.oa[:, j][:, None]
    dv_dq = (motion_cross(S, v) + u) * support
    da_dq = (motion_cross(S, a) - motion_cross(S, a_par) - motion_cross(u, v_par) - motion_cross(v, u)) * support
    da_dv = (u - motion_cross(S, kin.ov[:, model.tree.dof_joint]) - motion_cross(v, S)) * support
    return BodyDerivatives(S, dv_dq, da_dq, da_dv)


def _point_derivatives(pt: _Point, bd: BodyDerivatives):
    """``dp/dq, d pdot/dq, d pddot/dq, d pddot/dv`` (3, nv, B) of a frame origin."""
    p = pt.p[:, None]
    w, wdot, pdot = pt.v[3:, None], pt.a[3:, None], pt.pdot[:, None]
    dp = shift_motion(bd.S, p)[:3]
    dpdot_dq = shift_motion(bd.dv_dq, p)[:3] - cross(dp, w)
    dpddot_dq = shift_motion(bd.da_dq, p)[:3] - cross(dp, wdot) + cross(bd.dv_dq[3:], pdot) + cross(w, dpdot_dq)
    dpddot_dv = shift_motion(bd.da_dv, p)[:3] + cross(bd.S[3:], pdot) + cross(w, dp)
    return dp, dpdot_dq, dpddot_dq, dpddot_dv


@dataclass(frozen=True)
class RowDerivatives:
    """Derivatives ``(m, nv, B)`` of a contact's velocity rows (at ``v``), acceleration rows
    (at ``v, a``) with respect to ``q`` and ``v``, and of its position error wrt ``q``."""

    velocity_dq: np.ndarray
    acceleration_dq: np.ndarray
    acceleration_dv: np.ndarray
    error_dq: np.ndarray | None


def _frames(rc: ResolvedContact):
    return [(rc.frame, rc.joint)] + ([(rc.frame2, rc.joint2)] if rc.frame2 is not None else [])


def row_derivatives(model, kin, rc: ResolvedContact, rows: ContactRows) -> RowDerivatives:
    """Derivatives of the rows of ``rc`` at the velocity and acceleration of ``kin`` (without
    gravity); ``rows`` from :func:`contact_rows` at the same configuration."""
    c = rc.contact
    sel = list(c.rows)
    points = [_point(model, kin, f, j) for f, j in _frames(rc)]
    if c.translational:
        dp = dvel = dacc_dq = dacc_dv = vel = acc = 0.0
        for sign, pt in zip((1.0, -1.0), points):
            d = _point_derivatives(pt, body_derivatives(model, kin, pt.j))
            dp, dvel, dacc_dq, dacc_dv = (
                dp + sign * d[0],
                dvel + sign * d[1],
                dacc_dq + sign * d[2],
                dacc_dv + sign * d[3],
            )
            vel, acc = vel + sign * pt.pdot, acc + sign * pt.pddot
        derr = None if rows.error is None else dp
        if c.reference is ReferenceFrame.LOCAL:  # d(R^T x)/dq_k = R^T (dx - w_k x x)
            w_k = world_jacobian(model, kin, points[0].j)[3:]
            dvel = dvel - cross(w_k, vel[:, None])
            dacc_dq = dacc_dq - cross(w_k, acc[:, None])
            derr = None if derr is None else derr - cross(w_k, rows.error[:, None])
        Rt = rows.R_ref_t[:, :, None]  # R_c is constant: d(R_c^T R^T x) = R_c^T d(R^T x)
        dvel, dacc_dq, dacc_dv = (matvec(Rt, x) for x in (dvel, dacc_dq, dacc_dv))
        derr = None if derr is None else matvec(Rt, derr)
    elif rc.frame2 is not None:  # 6D loop closure: X (v1 - v2), X (a1 - a2 + v1 x v2) in LOCAL
        (pt, pt2), (bd, bd2) = points, [body_derivatives(model, kin, p.j) for p in points]
        v, dv_dq = pt.v - pt2.v, bd.dv_dq - bd2.dv_dq
        a, da_dq, da_dv = pt.a - pt2.a, bd.da_dq - bd2.da_dq, bd.da_dv - bd2.da_dv
        if c.reference is ReferenceFrame.LOCAL:
            v1, v2 = pt.v[:, None], pt2.v[:, None]
            a = a + motion_cross(pt.v, pt2.v)
            da_dq = da_dq + motion_cross(bd.dv_dq, v2) + motion_cross(v1, bd2.dv_dq)
            da_dv = da_dv + motion_cross(bd.S, v2) + motion_cross(v1, bd2.S)
        dvel = _map_derivative(c.reference, rows.X, pt, bd.S, v, dv_dq)
        dacc_dq = _map_derivative(c.reference, rows.X, pt, bd.S, a, da_dq)
        dacc_dv = matvec(rows.X[:, :, None], da_dv)
        derr = None
    else:
        pt = points[0]
        bd = body_derivatives(model, kin, pt.j)
        dvel = _map_derivative(c.reference, rows.X, pt, bd.S, pt.v, bd.dv_dq)
        dacc_dq = _map_derivative(c.reference, rows.X, pt, bd.S, pt.a, bd.da_dq)
        dacc_dv = matvec(rows.X[:, :, None], bd.da_dv)
        derr = None if rows.error is None else _error_6d_derivative(c.reference, rows.X, pt, bd.S, rows.error)
    return RowDerivatives(dvel[sel], dacc_dq[sel], dacc_dv[sel], None if derr is None else derr[sel])


def _map_derivative(reference, X, pt: _Point, S, m, dm):
    """``d(X_ref m)/dq`` for a world motion ``m (6, B)`` of derivative ``dm (6, nv, B)``."""
    if reference is ReferenceFrame.WORLD:
        return dm
    if reference is ReferenceFrame.LOCAL:  # d Ad^-1 m = Ad^-1 (dm - S_k x m)
        return matvec(X[:, :, None], dm - motion_cross(S, m[:, None]))
    out = shift_motion(dm, pt.p[:, None])  # d shift(m, p) = shift(dm, p) - (dp_k x w, 0)
    out[:3] -= cross(shift_motion(S, pt.p[:, None])[:3], m[3:, None])
    return out


def _error_6d_derivative(reference, X, pt: _Point, S, error):
    if reference is ReferenceFrame.LOCAL:  # d log6(Mt^-1 M) = Jlog6 J_local
        return matvec(jlog6(error)[:, :, None], matvec(X[:, :, None], S))
    if reference is ReferenceFrame.WORLD:  # d log6(M Mt^-1) = Jlog6_left S = jlog6(-e) S
        return matvec(jlog6(-error)[:, :, None], S)
    # e = blockdiag(R, R) e_local: de = (w_k x e_lin, w_k x e_ang) + blockdiag(R, R) Jlog6 J_local
    Rt = transpose(pt.R)
    local = np.concatenate((matvec(Rt, error[:3]), matvec(Rt, error[3:])))
    J_local = act_inv_motion(pt.R[:, :, None], pt.p[:, None], S)
    d_local = matvec(jlog6(local)[:, :, None], J_local)
    R = pt.R[:, :, None]
    w_k = S[3:]
    return np.concatenate(
        (cross(w_k, error[:3, None]) + matvec(R, d_local[:3]), cross(w_k, error[3:, None]) + matvec(R, d_local[3:]))
    )


def generalized_force_derivative(model, kin, rc: ResolvedContact, rows: ContactRows, f):
    """``d (J^T f)/dq (B, nv, nv)`` for the contact force ``f (m, B)`` held fixed in its frame.

    Per body, ``tau_l = oS_l . F`` with the world wrench ``F = K^T f``: ``d oS_l/dq_k =
    oS_k x oS_l`` for ``k`` moving ``l``, and ``F`` turns with the frame (LOCAL) or stays in
    the world axes with its point moving (``dp_k x force``)."""
    c = rc.contact
    out = 0.0
    lower = model.tree.lower
    S_frame = world_jacobian(model, kin, rc.joint)  # the motions that turn the contact's frame
    g_rot = S_frame[3:] if c.reference is ReferenceFrame.LOCAL else None
    for (j, K), pt in zip(rows.bodies, rows.points):
        S = world_jacobian(model, kin, j)
        F = np.einsum("rcb,rb->cb", K, f)[:, None]
        turn = force_cross(S, F)
        if c.translational:  # F = (g, p x g), g = R_ref R_c f_full: dF = (dg, dp x g + p x dg),
            # dg = w_k x g in LOCAL (R_c is constant), none otherwise
            dp = shift_motion(S, pt.p[:, None])[:3]
            dg = np.zeros_like(dp) if g_rot is None else cross(g_rot, F[:3])
            dF = np.concatenate((dg, cross(dp, F[:3]) + cross(pt.p[:, None], dg)))
        elif c.reference is ReferenceFrame.LOCAL:  # F turns with the first frame (a loop's second body too)
            dF = force_cross(S_frame, F)
        elif c.reference is ReferenceFrame.LOCAL_WORLD_ALIGNED:
            dF = np.concatenate((np.zeros_like(S[:3]), cross(shift_motion(S, pt.p[:, None])[:3], F[:3])))
        else:
            dF = np.zeros_like(S)
        out = out - _pairwise(S, turn) * lower + _pairwise(S, dF)
    return out


def _pairwise(X, Y):
    """``out[b, l, k] = X[:, l, b] . Y[:, k, b]``."""
    return np.einsum("clb,ckb->blk", X, Y)
