"""The stage equations of :mod:`ocp.lifted`, :mod:`ocp.costs` and :mod:`ocp.friction` as CasADi
SX functions: the source of the compiled stage kernels (:mod:`ocp.kernels`).

One :class:`Layout` covers every stage of an OCP: the union of its contacts (each with its
row offset in the stacked forces ``f_all``, the forces of contacts inactive at a stage being
zero), the union of its soft contacts (a slot per frame and law, its plane and gains inputs,
switched off where a stage has none) and the union of its cost terms (a term absent from a
stage gets zero weights). Each
stage kind then has one function of a flat input row:

- **contact**: ``(q, v, a, f_all, u, q_next, v_next, tau, tau_next | dt, filter gain,
  disturbance, contact gains and targets, sliding frictions, soft contacts, term parameters)``
  -> ``(cost, g, H, c, C, b, A, g_in, G)``: the Gauss-Newton cost in ``y = (dq, dv, dtau, du,
  da, df_all)``, the local equalities ``ID - S u`` (``ID - S tau`` with a torque filter; ``ID``
  with the joints' passive torques, the sliding frictions, the soft contacts' forces of the
  state and the disturbance, :mod:`ocp.lifted`), ``alpha``
  (seed 004 eq. 16-17, 5), the state equation
  (eq. 3; seed 001 eq. 49) and the inequalities (friction cones of every 3D contact, eq. 36,
  then the joint limits) with the Jacobian ``G`` of the cones;
- **impulse**: ``(q, v, dv, Lambda_all, q_next, v_next, tau, tau_next | term parameters)`` ->
  ``(cost, g, H, c, C, b, A)`` with ``M dv - J^T Lambda``, ``J (v + dv)`` (eq. 9, 12);
- **forward**: ``(q, v | disturbance, contact gains and targets, soft contacts)`` -> ``(M, h,
  J_all, r_all, J_all v)``: what the constrained forward and impulse dynamics solve, ``M a = S u
  - h + J^T f``, ``J a = r`` (``h`` with the passive torques, the soft contacts' forces and the
  disturbance on its side);
- **terminal**: ``(q, v, tau | term parameters)`` -> ``(cost, g, H)`` in ``(dq, dv, dtau)``;
- **curvature** of each of the contact, impulse and terminal stages: its input followed by the
  multipliers of its equalities -> what the exact Hessian adds to its ``H`` (:func:`_curvature`).

The torque state ``tau`` (and the filter gain) are empty inputs without a torque filter
(:class:`ocp.problem.OCP`).

Each function has one input row and its outputs in the order listed, matrices flattened row
by row. A stage of a group reads its own rows and columns out of
these (:class:`ocp.kernels.GroupMap`). The derivatives of the RNEA are the analytical ones
(:func:`dynamics.symbolic.rnea_derivatives`); the others in ``q`` are CasADi's AD along
tangent perturbations (:func:`dynamics.symbolic.configuration`), and the
configuration-manifold terms use the closed forms of :mod:`dynamics.symbolic`.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import casadi as ca
import numpy as np

from liftoff import dynamics
from liftoff.dynamics import codegen
from liftoff.dynamics import symbolic as sx
from liftoff.dynamics.kinematics import ReferenceFrame

from .costs import (
    CenterOfMassCost,
    FrameRotationCost,
    FrameVelocityCost,
    PlaneDistanceCost,
    StateCost,
    VariableCost,
    checked_weights,
)
from .friction import pyramid
from .inequalities import limit_rows
from .problem import stage_stack, term_key

# ----------------------------------------------------------------------------- layout


def contact_key(c):
    """What makes two contacts the same slot of a :class:`Layout` (gains and targets are inputs;
    the rotation of a contact's axes is a constant of the generated code)."""
    key = (c.frame, c.kind, str(c.reference), c.frame2)
    return key if c.rotation_key is None else key + (c.rotation_key,)


@dataclass(frozen=True)
class ContactSlot:
    contact: object  # a dynamics.Contact without placement
    offset: int  # first row in f_all
    cone: int | None  # index among the friction cones, or None

    @property
    def dim(self):
        return self.contact.dim

    @property
    def target_size(self):
        """Baumgarte target inputs: ``p (3)`` for translational kinds, ``(R, p)`` (12) otherwise."""
        return 3 if self.contact.translational else 12


@dataclass(frozen=True)
class Layout:
    """The union of contacts and cost terms of an OCP's stages (module docstring)."""

    model: object
    contacts: tuple  # ContactSlot
    contact_terms: tuple  # a prototype term per slot, in slot order
    impulse_terms: tuple
    terminal_terms: tuple
    friction: float | None
    limits: dict  # ocp.inequalities.limit_rows
    ntau: int = 0  # the size of the torque state (0: no torque filter)
    friction_width: float = dynamics.joint_friction.DEFAULT_WIDTH  # the joints' Coulomb friction smoothing
    soft: tuple = ()  # the soft contacts' slots: (frame, law) keys, sorted

    @property
    def m(self):
        return sum(s.dim for s in self.contacts)

    @property
    def nu(self):
        return self.model.nv - 6 if self.model.has_free_flyer else self.model.nv

    @property
    def ncones(self):
        return sum(s.cone is not None for s in self.contacts)

    def slot(self, contact) -> ContactSlot:
        return next(s for s in self.contacts if contact_key(s.contact) == contact_key(contact))

    def signature(self) -> dict:
        """Everything of the layout that changes the generated code (a kernel cache key)."""
        model = self.model
        return {
            "model": codegen.model_key(model),
            "contacts": [contact_key(s.contact) for s in self.contacts],
            "terms": [
                [term_key(t) for t in terms] for terms in (self.contact_terms, self.impulse_terms, self.terminal_terms)
            ],
            "friction": self.friction,
            "ntau": self.ntau,
            "friction_width": self.friction_width,
            "soft": list(self.soft),
            "limits": {k: [np.asarray(x) for x in (*rows, *bounds)] for k, (rows, bounds) in self.limits.items()},
        }


def layout(ocp) -> Layout:
    """The :class:`Layout` of ``ocp`` (an :class:`ocp.problem.OCP`). Slots are sorted by key, so
    that OCPs with the same contacts and terms in other orders (the gaits of one robot) share
    their kernels."""
    contacts, terms = {}, {"contact": {}, "impulse": {}, "terminal": {}}
    soft = set()
    for stage in ocp.stages:
        for c in stage.contacts:
            contacts.setdefault(contact_key(c), c)
        soft.update(soft_key(s) for s in stage.soft)
        for t in stage.costs:
            terms[stage.kind].setdefault(term_key(t), t)
    for t in ocp.terminal_costs:
        terms["terminal"].setdefault(term_key(t), t)
    slots, offset, cones = [], 0, 0
    for key in sorted(contacts, key=repr):
        c = contacts[key]
        cone = cones if (c.kind == "3D" and ocp.friction is not None) else None
        cones += cone is not None
        slots.append(ContactSlot(dataclasses.replace(c, placement=None, kp=0.0, kd=0.0), offset, cone))
        offset += c.dim

    def ordered(kind):
        return tuple(terms[kind][key] for key in sorted(terms[kind], key=repr))

    return Layout(
        ocp.model,
        tuple(slots),
        ordered("contact"),
        ordered("impulse"),
        ordered("terminal"),
        ocp.friction,
        limit_rows(ocp.model, ocp.limits),
        ocp.ntau,
        ocp.joint_friction_width,
        tuple(sorted(soft)),
    )


# ----------------------------------------------------------------------------- term parameters


def term_size(layout: Layout, term) -> int:
    """Number of inputs of a cost term slot: its references then its weights."""
    return _reference_size(layout, term) + _residual_size(layout, term)


def _reference_size(layout, term):
    """A term's reference inputs: a configuration and a velocity, a rotation matrix (row by
    row), a plane's normal and offset, or one per residual."""
    if isinstance(term, StateCost):
        return layout.model.nq + layout.model.nv
    if isinstance(term, FrameRotationCost):
        return 9
    return 4 if isinstance(term, PlaneDistanceCost) else _residual_size(layout, term)


def _residual_size(layout, term):
    if isinstance(term, VariableCost):
        return {"u": layout.nu, "a": layout.model.nv, "f": layout.m, "tau": layout.ntau}[term.variable]
    if isinstance(term, StateCost):
        return 2 * layout.model.nv
    return 1 if isinstance(term, PlaneDistanceCost) else 3


@dataclass(frozen=True)
class TermColumns:
    """Where the term parameters of a kernel's term ``slots`` go: ``neutral (n,)`` the row of a
    stage that has none of them (zero weights, the neutral configuration as a state reference,
    the identity as a rotation reference), ``slots`` each slot's first column and numbers of
    references and of residuals, by :func:`ocp.problem.term_key`, and
    ``weights`` the weights' columns."""

    neutral: np.ndarray
    slots: dict
    weights: np.ndarray


def term_columns(layout: Layout, slots) -> TermColumns:
    """The :class:`TermColumns` of the term ``slots`` (prototype terms, in slot order) of ``layout``."""
    model, blocks, starts, weights, start = layout.model, [], {}, [], 0
    for proto in slots:
        if isinstance(proto, StateCost):
            ref = np.concatenate((dynamics.neutral(model), np.zeros(model.nv)))
        elif isinstance(proto, FrameRotationCost):  # log3 is defined at the identity
            ref = np.eye(3).ravel()
        else:
            ref = np.zeros(_reference_size(layout, proto))
        n = _residual_size(layout, proto)
        starts[term_key(proto)] = (start, len(ref), n)
        blocks += [ref, np.zeros(n)]
        weights.append(np.arange(start + len(ref), start + len(ref) + n))
        start += len(ref) + n
    neutral = np.concatenate(blocks) if blocks else np.zeros(0)
    neutral.flags.writeable = False
    return TermColumns(neutral, starts, np.concatenate(weights + [np.zeros(0, int)]))


def term_parameters(layout: Layout, columns: TermColumns, stage_terms, f_cols, base=None) -> np.ndarray:
    """``(S, sum term_size)``: each slot's references and weights (``columns``, of
    :func:`term_columns`) for the ``S`` stages whose cost terms are ``stage_terms[s]`` (the
    terms of one group: the same slots, in the same order), which fill some of the slots;
    absent slots keep the neutral row. ``f_cols``: the group's force columns in ``f_all``.
    ``base``: ``(terms, row)``, the terms of a stage of the same slots and its row: the rows
    start from it, and a term that every stage shares with it (the same object) is not
    written again. ``ValueError`` for weights that are negative or not finite."""
    out = np.empty((len(stage_terms), len(columns.neutral)))
    out[:] = columns.neutral if base is None else base[1]
    for i, term in enumerate(stage_terms[0]):
        if base is not None and all(terms[i] is base[0][i] for terms in stage_terms):
            continue
        value = _field(stage_terms, i)  # the terms written are checked: the others were when they were
        _fill_term(out, layout, term, value, checked_weights(value("weights")), *columns.slots[term_key(term)], f_cols)
    return out


def stacked_term_parameters(layout: Layout, columns: TermColumns, terms, S, f_cols) -> np.ndarray:
    """:func:`term_parameters` of ``S`` stages whose cost ``terms`` are given stacked (one per
    slot, its array fields with a leading axis over the stages: :attr:`ocp.problem.StageGroup.costs`);
    ``ValueError`` for weights that are negative or not finite."""
    out = np.empty((S, len(columns.neutral)))
    out[:] = columns.neutral
    for term in terms:
        _fill_term(
            out, layout, term, functools.partial(getattr, term), term.weights, *columns.slots[term_key(term)], f_cols
        )
    checked_weights(out[:, columns.weights])  # every slot's at once
    return out


def _field(stage_terms, i):
    """``value(name)``: the field ``name`` of the stages' ``i``-th term, stacked over the stages
    (:func:`ocp.problem.stage_stack`); that of the term itself, for every row, when they share it."""
    first = stage_terms[0][i]
    if all(terms[i] is first for terms in stage_terms):
        return functools.partial(getattr, first)
    return lambda name: stage_stack([getattr(terms[i], name) for terms in stage_terms])


def _fill_term(out, layout, term, value, weights, start, k, n, f_cols):
    """Write the references ``value(name)`` and the ``weights`` of a term like ``term`` (stacked
    over the rows of ``out``, or one for every row) into the columns of its slot (``k``
    references, ``n`` residuals) from ``start``."""
    if isinstance(term, VariableCost) and term.variable == "f":  # only the group's force columns
        out[:, start + f_cols] = value("reference")
        out[:, start + k + f_cols] = weights
        return
    if isinstance(term, StateCost):
        nq = layout.model.nq
        out[:, start : start + nq] = value("q_ref")
        out[:, start + nq : start + k] = value("v_ref")
    elif isinstance(term, PlaneDistanceCost):
        out[:, start : start + 3] = np.asarray(value("normal"), dtype=float)
        out[:, start + 3 : start + k] = value("reference")
    elif isinstance(term, FrameRotationCost):
        out[:, start : start + k] = np.reshape(value("reference"), (-1, k))
    else:
        out[:, start : start + k] = value("reference")
    out[:, start + k : start + k + n] = weights


# ----------------------------------------------------------------------------- symbolic pieces


class _Inputs:
    """Consecutive slices of one flat SX input."""

    def __init__(self, sizes):
        self.x = ca.SX.sym("x", sum(sizes.values()))
        self.parts, start = {}, 0
        for name, n in sizes.items():
            self.parts[name] = self.x[start : start + n]
            start += n

    def __getitem__(self, name):
        return self.parts[name]


def variable_inputs(layout: Layout, kind) -> dict:
    """The sizes of the variables that open the input of the stage function of ``kind``
    (``contact`` or ``impulse``), in their order: the knot ``(q, v)``, the stage's ``w`` (``a`` or
    the impulse's ``dv``, then the forces ``f`` of every slot) and control ``u`` (contact stages),
    the next knot and the torque states; the constant inputs follow them."""
    nq, nv, ntau = layout.model.nq, layout.model.nv, layout.ntau
    stage = {"a": nv, "f": layout.m, "u": layout.nu} if kind == "contact" else {"dv": nv, "f": layout.m}
    return {"q": nq, "v": nv, **stage, "q_next": nq, "v_next": nv, "tau": ntau, "tau_next": ntau}


def _contact_inputs(layout):
    sizes = {}
    for i, s in enumerate(layout.contacts):
        sizes[f"gains{i}"] = 2
        sizes[f"target{i}"] = s.target_size
    return sizes


def _sliding_inputs(layout):
    """Per 1D contact slot, its sliding friction (:class:`ocp.problem.SlidingFriction`):
    ``mu d``; zero where a stage has none."""
    return {f"sliding{i}": 3 for i, s in enumerate(layout.contacts) if s.dim == 1}


def sliding_size(layout: Layout) -> int:
    """The number of columns of :func:`sliding_parameters`."""
    return sum(_sliding_inputs(layout).values())


def sliding_parameters(layout: Layout, slots, sliding, S) -> np.ndarray:
    """``(S, 3 per 1D slot)``: the :func:`_sliding_inputs` of a group whose contacts fill the
    layout's ``slots`` (one per contact, in order) with ``sliding`` frictions (stacked over its
    stages)."""
    by_slot = {slots[s.contact].offset: s for s in sliding}
    ones = [slot.offset for slot in layout.contacts if slot.dim == 1]
    out = np.zeros((S, 3 * len(ones)))
    for i, offset in enumerate(ones):
        s = by_slot.get(offset)
        if s is not None:
            out[:, 3 * i : 3 * i + 3] = np.asarray(s.mu, dtype=float)[..., None] * s.direction
    return out


def soft_key(contact):
    """What makes two soft contacts the same slot of a :class:`Layout`: the frame and the law
    (the plane, gains and widths are inputs)."""
    return (contact.frame, contact.law)


def _soft_inputs(layout):
    """Per soft-contact slot: its :meth:`dynamics.SoftContact.parameters` and whether the stage
    has it (1) or not (0)."""
    return {f"soft{i}": dynamics.soft_contact.NPARAMETERS + 1 for i in range(len(layout.soft))}


_NO_SOFT = np.array([0.0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 1, 1, 1, 0])  # a finite, inactive slot


def soft_parameters(layout: Layout, soft, S) -> np.ndarray:
    """``(S, 14 per soft slot)``: the :func:`_soft_inputs` of a group with the soft contacts
    ``soft`` (the same at each of its ``S`` stages)."""
    by_key = {soft_key(s): s for s in soft}
    blocks = []
    for key in layout.soft:
        s = by_key.get(key)
        row = _NO_SOFT if s is None else np.append(s.parameters(), 1.0)
        blocks.append(np.broadcast_to(row, (S, len(row))))
    return np.concatenate(blocks, axis=1) if blocks else np.zeros((S, 0))


def _soft_wrenches(layout, kin, inputs):
    """The wrenches ``[(joint, (F, p x F))]`` of the soft-contact slots (their forces of the
    state, :func:`dynamics.symbolic.soft_contact_force`), zero where a stage has none."""
    out = []
    for i, (frame, law) in enumerate(layout.soft):
        x = inputs[f"soft{i}"]
        _, _, wrenches = sx.soft_contact_force(layout.model, kin, frame, law, x[:-1])
        out += [(j, x[-1] * w) for j, w in wrenches]
    return out


def _sliding_wrenches(layout, kin, f_all, inputs):
    """The wrenches ``[(joint, (F, p x F))]`` of the sliding frictions of the 1D contact slots:
    ``F = -f_n mu d`` at each slot's frame (:class:`ocp.problem.SlidingFriction`)."""
    out = []
    for i, slot in enumerate(layout.contacts):
        if slot.dim != 1:
            continue
        f = layout.model.frame_id(slot.contact.frame)
        j = int(layout.model.frame_parent[f])
        if j < 0:
            continue
        _, p = sx.frame_placement(layout.model, kin, f)
        F = -f_all[slot.offset] * inputs[f"sliding{i}"]
        out.append((j, ca.vertcat(F, sx.cross(p, F))))
    return out


def _term_inputs(layout, slots):
    return {f"term{i}": term_size(layout, t) for i, t in enumerate(slots)}


def _target(slot, x):
    if slot.contact.translational:
        return x
    return ca.reshape(x[:9], 3, 3).T, x[9:]


def _contacts(layout, kin, f_all, inputs=None):
    """``[(slot, ContactRows)]`` of every contact slot with its force rows of ``f_all``."""
    out = []
    for i, slot in enumerate(layout.contacts):
        force = f_all[slot.offset : slot.offset + slot.dim]
        target = None if inputs is None else _target(slot, inputs[f"target{i}"])
        out.append((slot, sx.contact_rows(layout.model, kin, slot.contact, force, target)))
    return out


def _wrenches(rows):
    return [w for _, r in rows for w in r.wrenches]


def _residuals(layout, slots, inputs, cfg, q, v, variables):
    """``[(r, R_analytic or None, weights)]`` of each cost slot: ``R_analytic`` is the Jacobian
    in ``y`` for terms on the configuration manifold, else ``r`` is differentiated by AD."""
    model = layout.model
    kin = moving = None
    out = []
    for i, term in enumerate(slots):
        p = inputs[f"term{i}"]
        n = _residual_size(layout, term)
        if isinstance(term, StateCost):
            q_ref, v_ref = p[: model.nq], p[model.nq : model.nq + model.nv]
            r = ca.vertcat(sx.difference(model, q_ref, q), v - v_ref)
            _, d_dq = sx.difference_jacobians(model, q_ref, q)
            R = ca.SX.zeros(n, variables.numel())
            R[: model.nv, : model.nv] = d_dq
            R[model.nv :, model.nv : 2 * model.nv] = ca.SX.eye(model.nv)
            out.append((r, R, p[model.nq + model.nv :]))
            continue
        k = _reference_size(layout, term)
        ref, weights = p[:k], p[k:]
        if isinstance(term, VariableCost):
            r = variables.named[term.variable] - ref
        elif isinstance(term, FrameVelocityCost):
            moving = moving or sx.forward(model, cfg, v)
            r = sx.frame_velocity(model, moving, term.frame) - ref
        elif isinstance(term, PlaneDistanceCost):
            kin = kin or sx.forward(model, cfg)
            r = ca.dot(ref[:3], sx.frame_placement(model, kin, term.frame)[1]) - ref[3]
        elif isinstance(term, FrameRotationCost):
            kin = kin or sx.forward(model, cfg)
            R_moved, _ = sx.frame_placement(model, kin, term.frame)
            R, _ = sx.frame_placement(model, sx.forward(model, sx.configuration(model, q)), term.frame)
            R_ref = ca.reshape(ref, 3, 3).T  # given row by row
            r = sx.log3(R_ref.T @ R_moved)
            E = R.T @ R_moved  # exp(J_w dq) to first order: its skew part is J_w dq
            J_w = ca.jacobian(0.5 * ca.vertcat(E[2, 1] - E[1, 2], E[0, 2] - E[2, 0], E[1, 0] - E[0, 1]), variables.dq)
            R_r = ca.SX.zeros(n, variables.numel())
            R_r[:, : model.nv] = sx.jlog3(r) @ J_w
            out.append((r, R_r, weights))
            continue
        else:
            kin = kin or sx.forward(model, cfg)
            x = (
                sx.center_of_mass(model, kin)
                if isinstance(term, CenterOfMassCost)
                else sx.frame_placement(model, kin, term.frame)[1]
            )
            r = x - ref
        out.append((r, None, weights))
    return out


class _Variables:
    """The differentiation variables ``y`` of a stage: ``dq`` then the named variables."""

    def __init__(self, model, **named):
        self.dq = ca.SX.sym("dq", model.nv)
        self.named = named
        self.y = ca.vertcat(self.dq, *named.values())

    def numel(self):
        return self.y.numel()


def _gauss_newton(residuals, variables):
    """``(cost, g, H)``: ``1/2 r^T W r``, ``R^T W r``, ``R^T W R`` summed over the terms."""
    ny = variables.numel()
    cost, g, H = 0, ca.SX.zeros(ny), ca.SX.zeros(ny, ny)
    for r, R, w in residuals:
        R = ca.jacobian(r, variables.y) if R is None else R
        Wr = w * r
        cost += 0.5 * ca.dot(r, Wr)
        g += R.T @ Wr
        H += R.T @ (ca.diag(w) @ R)
    return cost, g, H


def _state_equation(model, q, v, w_v, q_next, v_next, dt, nu, nw, tau, tau_next, u=None, gain=None):
    """:func:`ocp.lifted.state_equation` of one stage (``dt = None``: an impulse stage), with
    the torque state ``tau`` (empty without a filter) filtered with ``gain`` (held at impulses)."""
    nv, ntau = model.nv, tau.numel()
    nx = 2 * nv + ntau
    h = 0 if dt is None else dt
    F_q = sx.difference(model, q_next, q) + h * v
    _, D_q = sx.difference_jacobians(model, q_next, q)
    D_inv = sx.difference_jacobian_inverse(model, q_next, q)
    A = ca.SX.zeros(nx, nx + nu + nw)
    A[:nv, :nv] = -D_inv @ D_q
    A[:nv, nv : 2 * nv] = -h * D_inv
    A[nv : 2 * nv, nv : 2 * nv] = ca.SX.eye(nv)
    A[nv : 2 * nv, nx + nu : nx + nu + nv] = (1 if dt is None else h) * ca.SX.eye(nv)
    b = [-D_inv @ F_q, v + (w_v if dt is None else h * w_v) - v_next]
    if ntau:
        keep = 1 if dt is None else gain
        A[2 * nv :, 2 * nv : nx] = keep * ca.SX.eye(ntau)
        if dt is not None:
            A[2 * nv :, nx : nx + nu] = (1 - keep) * ca.SX.eye(ntau)
        b.append(keep * tau + (0 if dt is None else (1 - keep) * u) - tau_next)
    return A, ca.vertcat(*b)


def _rows(x):
    """A matrix flattened row by row."""
    return ca.vec(x.T)


def _at_zero(variables, *exprs):
    return [ca.substitute(e, variables.dq, ca.SX.zeros(variables.dq.numel())) for e in exprs]


def _inequalities(layout, rows, cfg_kin, q, v, torque, variables):
    """Friction cones of the 3D contact slots (world forces, eq. 36) then the joint limits, as
    :func:`ocp.inequalities.inequalities` orders them, and the Jacobian of the cones (that of
    the limits is constant); ``q`` moved along ``dq``; ``torque`` what the torque limits bound."""
    model = layout.model
    blocks = []
    if layout.friction is not None:
        P = sx.const(pyramid(layout.friction))
        for slot, _ in rows:
            if slot.cone is None:
                continue
            f = variables.named["f"][slot.offset : slot.offset + 3]
            if slot.contact.rotation is not None:  # R_c f: in the reference's axes
                f = sx.const(slot.contact.rotation) @ f
            if slot.contact.reference is ReferenceFrame.LOCAL:
                R, _ = sx.frame_placement(model, cfg_kin, slot.contact.frame)
                f = R @ f
            blocks.append(P @ f)
    cones = ca.vertcat(*blocks) if blocks else ca.SX.zeros(0)
    values = {"position": q, "velocity": v, "torque": torque}
    for name, ((cols, _), (lower, upper)) in layout.limits.items():
        x = ca.vertcat(*[values[name][int(i)] for i in cols]) if len(cols) else ca.SX.zeros(0)
        blocks += [x - sx.const(lower), sx.const(upper) - x]
    g = ca.vertcat(*blocks) if blocks else ca.SX.zeros(0)
    return g, ca.jacobian(cones, variables.y)


# ----------------------------------------------------------------------------- stage functions


def _moving(model, q, dq, exact):
    """The configuration ``q (+) dq``: to first order (what first derivatives need), or by the
    exponential map (``exact``: second derivatives)."""
    return sx.configuration(model, sx.integrate(model, q, dq)) if exact else sx.configuration(model, q, dq)


def _contact_stage(layout, extra=None, exact=False):
    """The symbolic contact stage (module docstring): its :class:`_Inputs` (with ``extra``
    inputs after the kernel's), :class:`_Variables`, moving configuration (:func:`_moving`) and
    kinematics, contact rows, ``J^T f`` with the applied wrenches, the passive torques with the
    disturbance and the torques the actuated joints receive."""
    model, nv = layout.model, layout.model.nv
    sizes = variable_inputs(layout, "contact") | {"dt": 1, "gain": 1 if layout.ntau else 0, "disturbance": nv}
    sizes |= _contact_inputs(layout) | _sliding_inputs(layout) | _soft_inputs(layout)
    x = _Inputs(sizes | _term_inputs(layout, layout.contact_terms) | (extra or {}))
    v, tau, u = x["v"], x["tau"], x["u"]
    var = _Variables(model, v=v, tau=tau, u=u, a=x["a"], f=x["f"])
    cfg = _moving(model, x["q"], var.dq, exact)
    kin = sx.forward(model, cfg, v, x["a"])
    rows = _contacts(layout, kin, x["f"], x)
    applied_wrenches = _sliding_wrenches(layout, kin, x["f"], x) + _soft_wrenches(layout, kin, x)
    tau_f = sx.generalized_forces(model, kin, _wrenches(rows) + applied_wrenches)  # J^T f
    passive = sx.passive_torque(model, v, layout.friction_width) + x["disturbance"]
    applied = ca.vertcat(ca.SX.zeros(nv - layout.nu), tau if layout.ntau else u)
    return x, var, cfg, kin, rows, tau_f, passive, applied


def _alpha(rows, x):
    """The contact acceleration equalities ``alpha`` (seed 004 eq. 5) of the contact rows."""
    alpha = []
    for i, (slot, r) in enumerate(rows):
        kp, kd = x[f"gains{i}"][0], x[f"gains{i}"][1]
        alpha.append(r.acceleration + kd * r.velocity + (0 if r.error is None else kp * r.error))
    return ca.vertcat(*alpha) if alpha else ca.SX.zeros(0)


def contact_function(layout: Layout) -> ca.Function:
    """The :class:`casadi.Function` of the contact stage (module docstring)."""
    model, m, nu, ntau = layout.model, layout.m, layout.nu, layout.ntau
    nv = model.nv
    x, var, cfg, kin, rows, tau_f, passive, applied = _contact_stage(layout)
    q, v, a, f, u, tau = x["q"], x["v"], x["a"], x["f"], x["u"], x["tau"]
    kin0 = sx.forward(model, sx.configuration(model, q), v, a)
    dtau_dq, dtau_dv, M = sx.rnea_derivatives(model, kin0)
    ID = sx.rnea(model, kin0) - tau_f - passive - applied
    selection = ca.horzcat(ca.SX.zeros(nu, nv - nu), ca.SX.eye(nu)).T
    d_tau, d_u = (-selection, ca.SX.zeros(nv, nu)) if ntau else (ca.SX.zeros(nv, 0), -selection)
    dID_dv = dtau_dv - ca.jacobian(tau_f + passive, v)
    C_ID = ca.horzcat(dtau_dq - ca.jacobian(tau_f, var.dq), dID_dv, d_tau, d_u, M, -ca.jacobian(tau_f, f))
    alpha = _alpha(rows, x)
    c = ca.vertcat(ID, alpha)
    C = ca.vertcat(C_ID, ca.jacobian(alpha, var.y))
    q_moved = cfg.q
    g_in, G = _inequalities(layout, rows, kin, q_moved, v, tau if ntau else u, var)
    cost, g, H = _gauss_newton(_residuals(layout, layout.contact_terms, x, cfg, q, v, var), var)
    c, C, g_in, G, cost, g, H = _at_zero(var, c, C, g_in, G, cost, g, H)
    A, b = _state_equation(
        model, q, v, a, x["q_next"], x["v_next"], x["dt"], nu, nv + m, tau, x["tau_next"], u, x["gain"]
    )
    return ca.Function("contact", [x.x], [cost, g, _rows(H), c, _rows(C), b, _rows(A), g_in, _rows(G)])


def _curvature(name, layout, slots, x, cfg, var, c, dt=None):
    """The function ``name`` of ``x`` (the input of a stage kind's function, then the
    multipliers ``beta`` of the local equalities ``c`` and ``lam`` of the next knot's
    configuration rows): the Hessian in ``y`` at ``dq = 0`` of the stage's Lagrangian beyond
    Gauss-Newton, row by row: ``sum_k (W r)_k d2 r_k`` over the residuals of the cost term
    ``slots``, ``sum_j beta_j d2 c_j``, and the derivative of ``A_q^T lam`` (symmetrized), with
    ``A_q = -D^-1 [D_q, dt I]`` the state equation's configuration rows (:func:`_state_equation`;
    ``dt`` None at an impulse): the derivative of the stationarity's ``A^T lam`` term as the
    stages write it, ``A`` without the derivative of ``D^-1``, which multiplies the residual
    ``F_q``. The next knot is held: its coupling with this stage has no place in the stage-wise
    LQR. ``cfg`` is the configuration moved by the exponential map (:func:`_moving`)."""
    model, nv, ny = layout.model, layout.model.nv, var.numel()
    D_inv = sx.difference_jacobian_inverse(model, x["q_next"], cfg.q)
    _, D_q = sx.difference_jacobians(model, x["q_next"], cfg.q)
    lam = x["lam"]
    At_lam = ca.vertcat(-(D_inv @ D_q).T @ lam, (0 if dt is None else -dt) * (D_inv.T @ lam))  # in (dq, dv)
    J = ca.vertcat(ca.jacobian(At_lam, var.y), ca.SX.zeros(ny - 2 * nv, ny))
    H = _cost_curvature(layout, slots, x, cfg, var, ca.dot(x["beta"], c)) + 0.5 * _at_zero(var, J + J.T)[0]
    return ca.Function(name, [x.x], [_rows(H)])


def _cost_curvature(layout, slots, x, cfg, var, more=0):
    """``sum_k (W r)_k d2 r_k`` over the residuals of the cost term ``slots``, plus the Hessian of
    ``more``, in ``y`` at ``dq = 0`` (``cfg`` moved by the exponential map)."""
    residuals = _residuals(layout, slots, x, cfg, cfg.q, x["v"], var)
    r = ca.vertcat(*[r for r, _, _ in residuals] + [ca.SX.zeros(0)])
    w = ca.vertcat(*[w for _, _, w in residuals] + [ca.SX.zeros(0)])
    rho = ca.SX.sym("rho", r.numel())  # W r, held while differentiating
    H, Wr = _at_zero(var, ca.hessian(ca.dot(rho, r) + more, var.y)[0], w * r)
    return ca.substitute(H, rho, Wr)


def _base_frame_rnea(model, cfg, v, a, gravity=True):
    """:func:`dynamics.symbolic.rnea` at the configuration ``cfg``, computed with the free flyer
    at the origin and gravity rotated into its frame (the joint torques and the base's wrench in
    its own frame do not depend on where the base is, only on gravity's direction in it). The
    same values; but the base's placement enters through three components of gravity instead of
    every body's placement, which makes the Hessian four times smaller on ANYmal."""
    if cfg.base is None:
        return sx.rnea(model, sx.forward(model, cfg, v, a), gravity)
    R, _ = cfg.base
    if gravity:  # as an acceleration of the base: -g, in its frame
        a = ca.vertcat(a[:3] - R.T @ sx.const(model.gravity), a[3:])
    origin = sx.Configuration(cfg.q, (ca.SX.eye(3), ca.SX.zeros(3)))
    return sx.rnea(model, sx.forward(model, origin, v, a), gravity=False)


def contact_curvature_function(layout: Layout) -> ca.Function:
    """The :class:`casadi.Function` of :func:`_curvature` at a contact stage: the input of
    :func:`contact_function` followed by ``beta`` (``nv + m``) and ``lam`` (``nv``)."""
    model = layout.model
    extra = {"beta": model.nv + layout.m, "lam": model.nv}
    x, var, cfg, kin, rows, tau_f, passive, applied = _contact_stage(layout, extra, True)
    c = ca.vertcat(_base_frame_rnea(model, cfg, x["v"], x["a"]) - tau_f - passive - applied, _alpha(rows, x))
    return _curvature("contact_curvature", layout, layout.contact_terms, x, cfg, var, c, x["dt"])


def _impulse_stage(layout, extra=None, exact=False):
    """The symbolic impulse stage (module docstring): its :class:`_Inputs` (with ``extra``),
    :class:`_Variables`, moving configuration (:func:`_moving`) and kinematics, ``J^T Lambda``
    and the contact velocities after the impulse."""
    model = layout.model
    x = _Inputs(variable_inputs(layout, "impulse") | _term_inputs(layout, layout.impulse_terms) | (extra or {}))
    v, dv, impulse = x["v"], x["dv"], x["f"]
    var = _Variables(model, v=v, tau=x["tau"], dv=dv, f=impulse)
    cfg = _moving(model, x["q"], var.dq, exact)
    kin = sx.forward(model, cfg, ca.SX.zeros(model.nv), dv)
    tau_f = sx.generalized_forces(model, kin, _wrenches(_contacts(layout, kin, impulse)))  # J^T Lambda
    after = [r.velocity for _, r in _contacts(layout, sx.forward(model, cfg, v + dv), impulse)]
    return x, var, cfg, kin, tau_f, ca.vertcat(*after + [ca.SX.zeros(0)])


def impulse_function(layout: Layout) -> ca.Function:
    """The :class:`casadi.Function` of the impulse stage (module docstring)."""
    model, m, ntau = layout.model, layout.m, layout.ntau
    nv = model.nv
    x, var, cfg, kin, tau_f, after = _impulse_stage(layout)
    q, v, dv, impulse = x["q"], x["v"], x["dv"], x["f"]
    kin0 = sx.forward(model, sx.configuration(model, q), ca.SX.zeros(nv), dv)
    dM_dq, _, M = sx.rnea_derivatives(model, kin0, gravity=False)
    E = sx.rnea(model, kin0, gravity=False) - tau_f
    C_E = ca.horzcat(dM_dq - ca.jacobian(tau_f, var.dq), ca.SX.zeros(nv, nv + ntau), M, -ca.jacobian(tau_f, impulse))
    c = ca.vertcat(E, after)
    C = ca.vertcat(C_E, ca.jacobian(after, var.y))
    cost, g, H = _gauss_newton(_residuals(layout, layout.impulse_terms, x, cfg, q, v, var), var)
    c, C, cost, g, H = _at_zero(var, c, C, cost, g, H)
    A, b = _state_equation(model, q, v, dv, x["q_next"], x["v_next"], None, 0, nv + m, x["tau"], x["tau_next"])
    return ca.Function("impulse", [x.x], [cost, g, _rows(H), c, _rows(C), b, _rows(A)])


def impulse_curvature_function(layout: Layout) -> ca.Function:
    """The :class:`casadi.Function` of :func:`_curvature` at an impulse stage: the input of
    :func:`impulse_function` followed by ``beta`` (``nv + m``) and ``lam`` (``nv``)."""
    model = layout.model
    x, var, cfg, kin, tau_f, after = _impulse_stage(layout, {"beta": model.nv + layout.m, "lam": model.nv}, True)
    c = ca.vertcat(_base_frame_rnea(model, cfg, ca.SX.zeros(model.nv), x["dv"], gravity=False) - tau_f, after)
    return _curvature("impulse_curvature", layout, layout.impulse_terms, x, cfg, var, c)


def forward_function(layout: Layout) -> ca.Function:
    """The :class:`casadi.Function` of the forward-dynamics pieces (module docstring)."""
    model, m = layout.model, layout.m
    nv = model.nv
    sizes = {"q": model.nq, "v": nv, "disturbance": nv} | _contact_inputs(layout) | _soft_inputs(layout)
    x = _Inputs(sizes)
    q, v = x["q"], x["v"]
    a = ca.SX.sym("a", nv)
    kin = sx.forward(model, sx.configuration(model, q), v, a)
    tau = sx.rnea(model, kin) - sx.passive_torque(model, v, layout.friction_width) - x["disturbance"]
    if layout.soft:
        tau = tau - sx.generalized_forces(model, kin, _soft_wrenches(layout, kin, x))
    rows = _contacts(layout, kin, ca.SX.zeros(m), x)
    acc, vel, target = [], [], []
    for i, (_, r) in enumerate(rows):
        kp, kd = x[f"gains{i}"][0], x[f"gains{i}"][1]
        acc.append(r.acceleration)
        vel.append(r.velocity)
        target.append(-kd * r.velocity - (0 if r.error is None else kp * r.error))
    acc, vel, target = (ca.vertcat(*z) if z else ca.SX.zeros(0) for z in (acc, vel, target))
    M, J = ca.jacobian(tau, a), ca.jacobian(acc, a)
    h, drift = (ca.substitute(e, a, ca.SX.zeros(nv)) for e in (tau, acc))
    return ca.Function("forward", [x.x], [_rows(M), h, _rows(J), target - drift, vel])


def terminal_function(layout: Layout) -> ca.Function:
    """The :class:`casadi.Function` of the terminal cost (module docstring)."""
    model = layout.model
    sizes = {"q": model.nq, "v": model.nv, "tau": layout.ntau} | _term_inputs(layout, layout.terminal_terms)
    x = _Inputs(sizes)
    q, v = x["q"], x["v"]
    var = _Variables(model, v=v, tau=x["tau"], u=ca.SX.zeros(0), a=ca.SX.zeros(0), f=ca.SX.zeros(0))
    cfg = sx.configuration(model, q, var.dq)
    cost, g, H = _at_zero(var, *_gauss_newton(_residuals(layout, layout.terminal_terms, x, cfg, q, v, var), var))
    return ca.Function("terminal", [x.x], [cost, g, _rows(H)])


def terminal_curvature_function(layout: Layout) -> ca.Function:
    """The :class:`casadi.Function` of the terminal cost's curvature beyond Gauss-Newton, ``sum_k
    (W r)_k d2 r_k`` in ``(dq, dv, dtau)``, row by row, of the input of :func:`terminal_function`."""
    model = layout.model
    sizes = {"q": model.nq, "v": model.nv, "tau": layout.ntau} | _term_inputs(layout, layout.terminal_terms)
    x = _Inputs(sizes)
    var = _Variables(model, v=x["v"], tau=x["tau"], u=ca.SX.zeros(0), a=ca.SX.zeros(0), f=ca.SX.zeros(0))
    H = _cost_curvature(layout, layout.terminal_terms, x, _moving(model, x["q"], var.dq, True), var)
    return ca.Function("terminal_curvature", [x.x], [_rows(H)])
