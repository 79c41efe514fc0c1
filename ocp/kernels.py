"""The compiled backend of stage evaluation: :mod:`ocp.symbolic_stages` generated to C and
called once per stage group (:mod:`dynamics.codegen`).

For an OCP, :class:`CompiledStages` builds (or loads from the cache) one kernel per stage kind
over the OCP's :class:`ocp.symbolic_stages.Layout`; the forward-dynamics kernel only for the
non-lifted formulation. Per group it keeps a :class:`GroupMap`: the inputs that do not change
between iterations (time steps, Baumgarte gains and targets, cost references and weights),
and the rows and columns of the group's contacts within the layout's. An evaluation stacks
the variables with those inputs, calls the kernel on all the group's stages, and reads the
group's rows and columns out of its output: the same :class:`ocp.stages.StageEval` as the
numpy reference. The non-lifted ``w`` solves the KKT system of the forward (impulse)
dynamics, ``M a = S u - h + J^T f``, ``J a = r``.

A contact listed twice in a stage (redundant contacts) fills its slot twice: the kernel sees
the sum of the two forces (``J^T f_1 + J^T f_2``, the only way they enter the equations), the
group reads the slot's rows and columns once per copy, and its friction cones (one per copy, on
each copy's force) come from the numpy reference. A cost on the forces of such a stage, or
copies with other gains or targets (inconsistent contacts: a slot has one target), are refused
(:class:`ValueError`, before compiling). The forward dynamics of such a group is the least-norm
solution of its singular KKT system, the limit of the numpy backend's proximal iterations
(seed 000).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import numpy as np

from liftoff.dynamics import codegen

from . import symbolic_stages as sym
from .condensing import compile_condensing
from .friction import ROWS
from .inequalities import Inequalities, bound_rows
from .lifted import actuation
from .problem import term_key
from .stages import NumpyStages, StageEval

KINDS = ("contact", "impulse", "forward", "terminal")


@dataclass(frozen=True)
class GroupMap:
    """A group within the layout: ``f_cols`` its force rows in ``f_all``; ``y`` its columns of
    ``y``, ``rows`` its rows of ``c`` (``None``: all), and ``take`` the flat indices of its
    blocks of ``H, C, A, G`` in the kernel's (one gather each); ``supports`` the rows and
    columns of its ``H_zw, H_ww, A_w`` that are not zero by structure (for the condensing:
    from the kernels' patterns, with the friction cones' barrier terms); ``cones`` its cone rows,
    ``bounds`` the Jacobian rows of its limits; the kernel's constant inputs ``static`` and
    the forward kernel's ``forward (S, .)``."""

    f_cols: np.ndarray
    y: np.ndarray | None
    rows: np.ndarray | None
    take: dict
    supports: tuple
    cones: np.ndarray
    bounds: np.ndarray
    static: np.ndarray
    forward: np.ndarray
    scatter: np.ndarray | None = None  # (m, lay.m): the group's forces into f_all, when a slot is filled twice


class CompiledStages:
    """Stage evaluation by compiled kernels (module docstring); ``forward``: build the
    forward-dynamics kernel (the non-lifted formulation needs it). ``quiet``: no message
    while compiling. Raises :class:`dynamics.codegen.CompileError` without a compiler.
    ``compile=False`` runs the same functions in CasADi's interpreter (slow; for checks)."""

    name = "compiled"

    def __init__(self, ocp, forward=False, quiet=False, compile=True):
        self.ocp, self.model = ocp, ocp.model
        _check_duplicates(ocp)
        self.layout = sym.layout(ocp)
        self.S = actuation(self.model)
        kinds = {s.kind for s in ocp.stages} | {"terminal"} | ({"forward"} if forward else set())
        key = {"layout": self.layout.signature(), "source": codegen.source_digest(sym)}
        builders = {
            "contact": sym.contact_function,
            "impulse": sym.impulse_function,
            "forward": sym.forward_function,
            "terminal": sym.terminal_function,
        }
        self.kernels = {}
        for kind in KINDS:
            if kind not in kinds:
                continue
            name = f"{kind}_{self.model.name}"
            if compile:
                self.kernels[kind] = codegen.load(
                    name, {**key, "kind": kind}, lambda k=kind: builders[k](self.layout), quiet
                )
            else:
                self.kernels[kind] = codegen.Interpreted(builders[kind](self.layout), name)
        compile_condensing()  # the compiled condensing, before any timing
        self.kernel_seconds = 0.0  # spent in kernel calls, for benchmarks
        self._structures = {}  # the index maps of a group's kind and contact slots (shared by for_problem's copies)
        self._set_problem(ocp, ocp.groups())

    def _set_problem(self, ocp, groups):
        """The inputs of ``ocp``'s ``groups`` (its data: references, targets, time steps)."""
        self.ocp = ocp
        self._reference = NumpyStages(ocp)  # for the one-off inequalities of the initial iterate
        self.maps = {int(g.index[0]): self._map(g) for g in groups}
        self._terminal_static = sym.term_parameters(
            self.layout, self.layout.terminal_terms, ocp.terminal().terms, 1, np.zeros(0, int)
        )

    def for_problem(self, ocp, groups) -> CompiledStages:
        """The same kernels for ``ocp`` (grouped in ``groups``): its contacts and cost terms must
        be slots of this layout (``ValueError`` otherwise), its stage kinds among the kernels'."""
        keys = {sym.contact_key(s.contact) for s in self.layout.contacts}
        slots = {kind: {term_key(t) for t in terms} for kind, terms in self._slot_terms().items()}
        for group in groups:
            if group.kind not in self.kernels:
                raise ValueError(f"no {group.kind} kernel in this formulation")
            if (
                any(sym.contact_key(c) not in keys for c in group.contacts)
                or any(term_key(t) not in slots[group.kind] for t in group.costs.terms)
                or any(sym.soft_key(s) not in self.layout.soft for s in group.soft)
            ):
                raise ValueError("the OCP has contacts or cost terms that are not slots of this formulation's kernels")
        if any(term_key(t) not in slots["terminal"] for t in ocp.terminal_costs):
            raise ValueError("the OCP has terminal cost terms that are not slots of this formulation's kernels")
        _check_duplicates(ocp)
        new = copy.copy(self)
        new._set_problem(ocp, groups)
        return new

    def _slot_terms(self) -> dict:
        lay = self.layout
        return {"contact": lay.contact_terms, "impulse": lay.impulse_terms, "terminal": lay.terminal_terms}

    # ------------------------------------------------------------------ layout of a group

    def _structure(self, kind, slots):
        """The index maps of a group of ``kind`` whose contacts fill ``slots`` (cached): its force
        columns, its columns ``y`` and rows of the layout's, whether it fills them all, the
        entries taken from the kernel's outputs, their supports, its cone rows and bounds."""
        key = (kind, tuple(s.offset for s in slots))
        if key in self._structures:
            return self._structures[key]
        lay, nv = self.layout, self.model.nv
        nx = 2 * nv + lay.ntau
        f_cols = np.concatenate([np.arange(s.offset, s.offset + s.dim) for s in slots] + [np.zeros(0, int)]).astype(int)
        nu = lay.nu if kind == "contact" else 0
        nf = nx + nu + nv  # the first force column of y
        y = np.concatenate((np.arange(nf), nf + f_cols))
        rows = np.concatenate((np.arange(nv), nv + f_cols))
        full = len(f_cols) == lay.m and np.array_equal(f_cols, np.arange(lay.m))
        if kind == "contact":
            cones = [s.cone for s in slots if s.cone is not None]
            cones = np.concatenate([np.arange(ROWS * k, ROWS * k + ROWS) for k in cones] + [np.zeros(0)]).astype(int)
            bounds = bound_rows(lay.limits, nv, nu, len(y))
        else:
            cones, bounds = np.zeros(0, int), np.zeros((0, len(y)))
        ny = nf + lay.m
        take = {
            "H": (y[:, None] * ny + y).ravel(),
            "C": (rows[:, None] * ny + y).ravel(),
            "A": (np.arange(nx)[:, None] * ny + y).ravel(),
            "G": (cones[:, None] * ny + y).ravel(),
        }
        supports = self._supports(kind, y, cones, nx + nu)
        self._structures[key] = (f_cols, y, rows, full, take, supports, cones, bounds)
        return self._structures[key]

    def _map(self, group) -> GroupMap:
        lay, nv, S = self.layout, self.model.nv, group.size
        slots = [lay.slot(c) for c in group.contacts]
        f_cols, y, rows, full, take, supports, cones, bounds = self._structure(group.kind, slots)
        scatter = None
        if len({s.offset for s in slots}) < len(slots):  # a contact listed twice: its forces add up
            scatter = np.zeros((len(f_cols), lay.m))
            scatter[np.arange(len(f_cols)), f_cols] = 1.0
        gains = {s.offset: (c, s) for c, s in zip(group.contacts, slots)}
        contact_inputs = []
        for slot in lay.contacts:
            c = gains.get(slot.offset, (None, slot))[0]
            contact_inputs += [np.tile([c.kp, c.kd] if c is not None else [0.0, 0.0], (S, 1)), _target(c, slot, S)]
        contact_inputs = np.concatenate(contact_inputs, axis=1) if contact_inputs else np.zeros((S, 0))
        disturbance = np.tile(np.zeros(nv) if self.ocp.disturbance is None else self.ocp.disturbance, (S, 1))
        if group.kind == "contact":
            terms = sym.term_parameters(lay, lay.contact_terms, group.costs.terms, S, f_cols)
            gain = self.ocp.filter_gain(group.dt)[:, None] if lay.ntau else np.zeros((S, 0))
            sliding = sym.sliding_parameters(lay, group.contacts, group.sliding, S)
            soft = sym.soft_parameters(lay, group.soft, S)
            static = np.concatenate(
                (group.dt[:, None], gain, disturbance, contact_inputs, sliding, soft, terms), axis=1
            )
        else:
            static = sym.term_parameters(lay, lay.impulse_terms, group.costs.terms, S, f_cols)
        forward = np.concatenate((disturbance, contact_inputs, sym.soft_parameters(lay, group.soft, S)), axis=1)
        return GroupMap(
            f_cols, None if full else y, None if full else rows, take, supports, cones, bounds, static, forward, scatter
        )

    def _supports(self, kind, y, cones, nz):
        """``(zw, ww, ar, ac)``: the columns of ``H_zw``, the rows and columns of ``H_ww``, the
        rows and the columns of ``A_w`` of a group (``y``: its columns, ``nz``: the size of
        ``(dx, du)``) that can be nonzero, from the structural nonzeros of the kernel's
        outputs and the columns its cone rows touch (their barrier terms join ``H``)."""
        kernel, nx = self.kernels[kind], 2 * self.model.nv + self.layout.ntau
        n = int(round(np.sqrt(kernel.sizes[2])))  # y of the layout
        H, A = np.zeros(n * n, dtype=bool), np.zeros(nx * n, dtype=bool)
        H[kernel.patterns[2]], A[kernel.patterns[6]] = True, True
        H, A = H.reshape(n, n)[np.ix_(y, y)], A.reshape(nx, n)[:, y]
        if kind == "contact" and len(cones):
            G = np.zeros(kernel.sizes[8], dtype=bool)
            G[kernel.patterns[8]] = True
            touched = np.flatnonzero(G.reshape(-1, n)[np.ix_(cones, y)].any(axis=0))
            H[np.ix_(touched, touched)] = True
        Hzw, Hww, Aw = H[:nz, nz:], H[nz:, nz:], A[:, nz:]
        return tuple(
            np.flatnonzero(x)
            for x in (Hzw.any(axis=0), Hww.any(axis=0) | Hww.any(axis=1), Aw.any(axis=1), Aw.any(axis=0))
        )

    # ------------------------------------------------------------------ evaluation

    def inequalities(self, group, q, v, u, f, tau=None):
        return self._reference.inequalities(group, q, v, u, f, tau)

    def _call(self, kind, x):
        start = time.perf_counter()
        out = self.kernels[kind](x)
        self.kernel_seconds += time.perf_counter() - start
        return out

    def evaluate(self, group, q, v, u, w, q_next, v_next, tau=None, tau_next=None) -> StageEval:
        gm = self.maps[int(group.index[0])]
        lay, nv, S = self.layout, self.model.nv, group.size
        if gm.scatter is None:
            f_all = np.zeros((S, lay.m))
            f_all[:, gm.f_cols] = w[:, nv:]
        else:
            f_all = w[:, nv:] @ gm.scatter
        taus = (np.zeros((S, 0)),) * 2 if tau is None else (tau, tau_next)
        if group.kind == "contact":
            x = np.concatenate((q, v, w[:, :nv], f_all, u, q_next, v_next, *taus, gm.static), axis=1)
            nu = lay.nu
        else:
            x = np.concatenate((q, v, w[:, :nv], f_all, q_next, v_next, *taus, gm.static), axis=1)
            nu = 0
        nx = 2 * nv + lay.ntau
        nw, ny = nv + lay.m, nx + nu + nv + lay.m
        out = self._call(group.kind, x)
        cost, b = out[0][:, 0], out[5]
        if gm.y is None:
            g, H, c, C, A = (
                out[1],
                out[2].reshape(S, ny, ny),
                out[3],
                out[4].reshape(S, nw, ny),
                out[6].reshape(S, nx, ny),
            )
        else:
            g, c = out[1][:, gm.y], out[3][:, gm.rows]
            H, C, A = (
                np.take(out[i], gm.take[k], axis=1).reshape(S, -1, len(gm.y)) for i, k in ((2, "H"), (4, "C"), (6, "A"))
            )
        if group.kind != "contact":
            g_in, G = np.zeros((S, 0)), np.zeros((S, 0, H.shape[1]))
        elif gm.scatter is not None:  # a cone per copy of a contact listed twice, on its own force
            ineq = self._reference.inequalities(group, q, v, u, w[:, nv:], tau)
            return StageEval(cost, H, g, c, C, b, A, ineq, gm.supports)
        elif gm.y is None and len(gm.cones) == ROWS * lay.ncones:
            g_in, G = out[7], out[8].reshape(S, -1, ny)
        else:
            g_in = out[7][:, np.concatenate((gm.cones, ROWS * lay.ncones + np.arange(len(gm.bounds))))]
            G = np.take(out[8], gm.take["G"], axis=1).reshape(S, len(gm.cones), H.shape[1])
        return StageEval(cost, H, g, c, C, b, A, Inequalities(g_in, G, gm.bounds), gm.supports)

    def dynamics(self, group, q, v, torque):
        """``w`` of the forward (impulse) dynamics under the actuated joints' ``torque``: the
        solution of their KKT system ``[[M, -J^T], [J, 0]] w = (S torque - h, r)`` (impulses:
        ``(0, -J v)``) from the forward kernel.
        It is the proximal one of the numpy backend when ``J`` has full rank; with redundant
        contacts (a contact listed twice, or a singular system) the least-norm solution, the
        limit of the numpy backend's proximal iterations."""
        gm = self.maps[int(group.index[0])]
        lay, nv, S = self.layout, self.model.nv, group.size
        M, h, J, r, vel = self._call("forward", np.concatenate((q, v, gm.forward), axis=1))
        m = len(gm.f_cols)
        K = np.zeros((S, nv + m, nv + m))
        K[:, :nv, :nv] = M.reshape(S, nv, nv)
        J = J.reshape(S, lay.m, nv)[:, gm.f_cols]
        K[:, :nv, nv:], K[:, nv:, :nv] = -np.swapaxes(J, 1, 2), J
        if group.kind == "contact":
            rhs = np.concatenate((torque @ self.S.T - h, r[:, gm.f_cols]), axis=1)
        else:
            rhs = np.concatenate((np.zeros((S, nv)), -vel[:, gm.f_cols]), axis=1)
        if gm.scatter is None:
            try:
                return np.linalg.solve(K, rhs[..., None])[..., 0]
            except np.linalg.LinAlgError:
                pass
        return np.einsum("swr,sr->sw", np.linalg.pinv(K, rcond=1e-10), rhs)

    def terminal(self, q, v, tau=None):
        nx = 2 * self.model.nv + self.layout.ntau
        tau = np.zeros(0) if tau is None else tau
        cost, g, H = self._call("terminal", np.concatenate((q, v, tau, self._terminal_static[0]))[None])
        return float(cost[0, 0]), H[0].reshape(nx, nx), g[0]


def _check_duplicates(ocp):
    """:class:`ValueError`, before any kernel is compiled, for a stage with a contact listed twice
    (the kernels see the sum of the copies' forces) and a cost on the forces, or copies of other
    gains or targets (inconsistent: one slot has one target)."""
    for k, stage in enumerate(ocp.stages):
        if len({c.frame for c in stage.contacts}) == len(stage.contacts):
            continue  # no frame twice (the common case: nothing more to check)
        seen = {}
        for c in stage.contacts:
            key = sym.contact_key(c)
            if key not in seen:
                seen[key] = c
                continue
            first = seen[key]
            if any(getattr(t, "variable", None) == "f" for t in stage.costs):
                problem = "weigh the forces of a contact listed twice"
            elif not _same_target(first, c):
                problem = f"hold {c.frame} twice with other gains or targets (inconsistent contacts)"
            else:
                continue
            raise ValueError(f"stage {k}: the compiled backend cannot {problem}; use the numpy backend")


def _same_target(a, b) -> bool:
    if (a.kp, a.kd) != (b.kp, b.kd) or (a.placement is None) != (b.placement is None):
        return False
    if a.placement is None:
        return True
    pa, pb = (x.placement if isinstance(x.placement, tuple) else (x.placement,) for x in (a, b))
    return len(pa) == len(pb) and all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(pa, pb))


def _target(contact, slot, S):
    """The Baumgarte target inputs of a slot for a group's ``contact`` (``None``: inactive):
    ``p (S, 3)``, or ``(R, p)`` flattened row by row ``(S, 12)``; the identity placement when
    there is no target."""
    if slot.contact.translational:
        p = np.zeros(3) if contact is None or contact.placement is None else contact.target()[1].T
        return np.broadcast_to(p, (S, 3))
    if contact is None or contact.placement is None:
        return np.tile(np.concatenate((np.eye(3).ravel(), np.zeros(3))), (S, 1))
    R, p = contact.target()
    if R is None:
        return np.tile(np.concatenate((np.eye(3).ravel(), np.zeros(3))), (S, 1))
    return np.concatenate(
        (np.broadcast_to(R.transpose(2, 0, 1), (S, 3, 3)).reshape(S, 9), np.broadcast_to(p.T, (S, 3))), axis=1
    )
