"""The compiled backend of stage evaluation: :mod:`ocp.symbolic_stages` generated to C and
called once per stage group (:mod:`dynamics.codegen`).

For an OCP, :class:`CompiledStages` builds (or loads from the cache) one kernel per stage kind
over the OCP's :class:`ocp.symbolic_stages.Layout`; the forward-dynamics kernel only for the
non-lifted formulation. Per group it keeps a :class:`GroupMap`: the inputs that do not change
between iterations (time steps, Baumgarte gains and targets, cost references and weights),
and the rows and columns of the group's contacts within the layout's; what the groups of one
key share (:class:`GroupPlan`: the slots, the index maps, the constant rows of the inputs) is
made once for every problem of the kernels (an MPC loop's horizons). An evaluation stacks
the variables with those inputs, calls the kernel on all the group's stages, and scatters the
structural nonzeros it returns (the stage kernels are sparse, :mod:`dynamics.codegen`) into the
group's rows and columns (``scatter.c``, or numpy without a compiler): the same
:class:`ocp.stages.StageEval` as the numpy reference. Its blocks are a workspace of the groups of
one key and size, kept from one evaluation to the next: the scatter writes the structural
nonzeros and clears the entries the interior-point terms add to (:mod:`ocp.interior`), the
others stay zero, so that no evaluation writes the blocks whole (on ANYmal, 94% of them zeros by
structure). An evaluation's arrays are therefore valid until the next evaluation of a group of
its key and size. The non-lifted ``w`` solves the KKT system of the forward (impulse) dynamics,
``M a = S u - h + J^T f``, ``J a = r``.

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
import ctypes
import operator
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from liftoff.dynamics import codegen
from liftoff.dynamics.memory import address

from . import condensing, interior
from . import group as grouped
from . import symbolic_stages as sym
from .friction import ROWS
from .inequalities import Inequalities, bound_rows, inequalities, inequality_values
from .lifted import actuation
from .problem import GroupNumbers, term_key
from .stages import NumpyStages, StageEval
from .static_terms import StaticTermsKernel

KINDS = ("contact", "impulse", "forward", "terminal")
SPARSE = ("contact", "impulse")  # the kinds whose kernels give their outputs' structural nonzeros


@dataclass(frozen=True)
class Blocks:
    """Where a group's blocks come from in its kind's sparse kernel: one block per output, of
    ``shapes[b]`` per stage (``sizes[b]`` entries, ``nnz[b]`` in the kernel's output); its
    ``counts[b]`` entries written at each evaluation, the next ones of ``dst_index`` (in the
    block) and ``src_index`` (in the output; -1: cleared, an entry of ``H`` that only the
    interior-point terms fill)."""

    shapes: tuple
    sizes: np.ndarray
    nnz: np.ndarray
    counts: np.ndarray
    src_index: np.ndarray
    dst_index: np.ndarray


class Workspace:
    """The arrays of the groups of one key and size ``S`` (module docstring): the ``kernel``'s
    input ``x`` and its outputs, the group's ``blocks`` (:class:`Blocks`), and the kernel's and
    the scatter's calls bound to them (no allocation, no argument conversion per evaluation);
    ``static``: the :class:`GroupMap` whose constant inputs ``x`` holds (they are copied in when
    another group's map evaluates); ``calls``: those of the interior-point terms and the
    condensing bound to the blocks."""

    def __init__(self, kernel, blocks: Blocks, S):
        self.x = np.zeros((S, kernel.n_in))
        self.outputs = [np.empty((S, n)) for n in kernel.sizes]
        self.blocks = [np.zeros((S, *shape)) for shape in blocks.shapes]
        self.kernel = kernel.bind(self.x, self.outputs)
        self.scatter = bind_scatter(self.outputs, blocks, self.blocks)
        self.static = None
        self.calls = {}  # the later steps' calls bound to the blocks (:attr:`ocp.stages.StageEval.calls`)
        self.exact = None  # H with the curvature (CompiledStages.curvature), a Curvature made on first use
        ny = self.blocks[1].shape[1]
        self.no_inequalities = (np.zeros((S, 0)), np.zeros((S, 0, ny)))  # an impulse stage's

    @property
    def linearize(self):
        """The group's linearization and expansion in one call each (:mod:`ocp.group`), kept in
        :attr:`calls` (the expansion finds it there); None before the first, False without one."""
        return self.calls.get("group")


@dataclass
class Curvature:
    """A workspace's arrays for :meth:`CompiledStages.curvature`: the curvature kernel's input
    ``x``, its output ``out`` and its ``call`` bound to them; ``H`` with the curvature added,
    the ``curvature`` dense ``(S, ny, ny)`` of the last fresh call and the ``problem`` it was
    made for; ``calls``: those of the later steps bound to ``H``."""

    x: np.ndarray
    out: np.ndarray
    call: object
    H: np.ndarray
    curvature: np.ndarray
    calls: dict
    problem: object = None


@dataclass(frozen=True)
class GroupMap:
    """A group within the layout: ``f_cols`` its force rows in ``f_all``; ``blocks`` where its
    rows and columns of the kernel's outputs are (:class:`Blocks`) and ``workspace`` its
    :class:`Workspace`; ``supports`` the rows and columns of its ``H_zw, H_ww, A_w`` that are not
    zero by structure (for the condensing: from the kernels' patterns, with the friction cones'
    barrier terms); ``cones`` its cone rows,
    ``bounds`` the Jacobian rows of its limits, ``touched`` the columns its cones' Jacobian can be
    nonzero in; the kernel's constant inputs ``static`` and
    the forward kernel's ``forward (S, .)`` (None without a forward kernel)."""

    f_cols: np.ndarray
    blocks: Blocks
    workspace: Workspace
    supports: tuple
    cones: np.ndarray
    bounds: np.ndarray
    touched: np.ndarray
    static: np.ndarray
    forward: np.ndarray | None
    scatter: np.ndarray | None = None  # (m, lay.m): the group's forces into f_all, when a slot is filled twice


@dataclass(frozen=True)
class GroupPlan:
    """What the groups of one key (:attr:`ocp.problem.StageGroup.key`) share: the layout's
    ``slots`` of their contacts, the index maps of :meth:`CompiledStages._structure`, the row
    of contact inputs ``contacts`` (the slots' gains, neutral targets) with the ``targets``
    still to fill, ``(contact index, (first column, translational))``, and the row of soft-contact
    inputs ``soft``."""

    slots: tuple
    structure: tuple
    contacts: np.ndarray
    targets: tuple
    soft: np.ndarray
    workspace: dict = field(default_factory=dict)  # the blocks of its groups of S stages, by S (module docstring)


class CompiledStages:
    """Stage evaluation by compiled kernels (module docstring); ``forward``: build the
    forward-dynamics kernel (the non-lifted formulation needs it). ``quiet``: no message
    while compiling. Raises :class:`dynamics.codegen.CompileError` without a compiler.
    ``compile=False`` runs the same functions in CasADi's interpreter (slow; for checks)."""

    name = "compiled"

    def __init__(self, ocp, forward=False, quiet=False, compile=True):
        self.ocp, self.model, self.quiet, self.compile = ocp, ocp.model, quiet, compile
        groups = ocp.groups()
        _check_duplicates(ocp, groups)
        self.layout = sym.layout(ocp)
        self.S = actuation(self.model)
        kinds = {s.kind for s in ocp.stages} | {"terminal"} | ({"forward"} if forward else set())
        key = self._key = {"layout": self.layout.signature(), "source": codegen.source_digest(sym)}
        builders = {
            "contact": sym.contact_function,
            "impulse": sym.impulse_function,
            "forward": sym.forward_function,
            "terminal": sym.terminal_function,
        }
        built = [kind for kind in KINDS if kind in kinds]
        requests = [
            (f"{k}_{self.model.name}", {**key, "kind": k}, lambda k=k: builders[k](self.layout), k in SPARSE)
            for k in built
        ]
        if compile:
            kernels = codegen.load_all(requests, quiet, LIBRARIES)
        else:
            kernels = [codegen.Interpreted(build(), name, sparse) for name, _, build, sparse in requests]
        self.kernels = dict(zip(built, kernels))
        condensing.compile_condensing()  # the compiled condensing, before any timing
        self.kernel_seconds = 0.0  # spent in kernel calls, for benchmarks
        self._term_columns = {kind: sym.term_columns(self.layout, terms) for kind, terms in self._slot_terms().items()}
        # cached for every problem of these kernels (shared by for_problem's copies): the index maps of
        # a group's kind and contact slots, and the plans of the groups of one key
        self._structures, self._plans = {}, {}
        self._donors = {}  # by group key: the last stage whose inputs were made, and its row (_new_inputs)
        self._last_rows = {}  # by group key: the plan, stages and rows of the last group's inputs (_stage_inputs)
        # what the problems of these kernels share: the static start's kernel, made on first use
        # (:meth:`static_terms`), and the inputs of the last terminal terms met
        self._kept = {}
        self._columns = {kind: self._input_columns(kind) for kind in ("contact", "impulse")}
        self._sliding_size = sym.sliding_size(self.layout)
        self._set_problem(ocp, groups)

    def _set_problem(self, ocp, groups):
        """The inputs of ``ocp``'s ``groups`` (its data: references, targets, time steps)."""
        self.ocp = ocp
        self._numpy = None  # the reference backend of ocp, made on first use (:attr:`_reference`)
        self._statics = None  # the static start's terms at ocp's q0 (:meth:`static_terms`)
        self._terminal_curvature = None  # the last fresh terminal curvature (:meth:`terminal`)
        self.maps = {int(g.index[0]): self._map(g) for g in groups}
        self._terminal_static = self.terminal_constants(ocp.terminal_costs)

    def for_problem(self, ocp, groups) -> CompiledStages:
        """The same kernels for ``ocp`` (grouped in ``groups``): its contacts and cost terms must
        be slots of this layout (``ValueError`` otherwise), its stage kinds among the kernels'."""
        for group in groups:
            self._plan(group)  # checks the groups of a key not met before
        if any(term_key(t) not in self._term_columns["terminal"].slots for t in ocp.terminal_costs):
            raise ValueError("the OCP has terminal cost terms that are not slots of this formulation's kernels")
        _check_duplicates(ocp, groups)
        new = copy.copy(self)
        new._set_problem(ocp, groups)
        return new

    def from_state(self, ocp) -> CompiledStages:
        """The same kernels for ``ocp``, this one's OCP from another initial state: its groups'
        inputs kept, what is made at the initial state (:meth:`static_terms`) made again."""
        new = copy.copy(self)
        new.ocp, new._numpy, new._statics = ocp, None, None
        return new

    def _input_columns(self, kind) -> dict:
        """The columns of the variables in the input of the stage kernel of ``kind``
        (:func:`ocp.symbolic_stages.variable_inputs`; ``w``'s first part named ``a`` at both
        kinds), and ``static``, those of the constant inputs after them."""
        sizes = sym.variable_inputs(self.layout, kind)
        ends = np.cumsum(list(sizes.values())).tolist()
        columns = {"a" if name == "dv" else name: slice(end - n, end) for (name, n), end in zip(sizes.items(), ends)}
        columns["static"] = slice(ends[-1], None)
        return columns

    def _slot_terms(self) -> dict:
        lay = self.layout
        return {"contact": lay.contact_terms, "impulse": lay.impulse_terms, "terminal": lay.terminal_terms}

    def _check(self, group):
        """``ValueError`` unless the kernels can evaluate ``group``: its kind's kernel exists, its
        contacts, cost terms and soft contacts are slots of the layout."""
        if group.kind not in self.kernels:
            raise ValueError(f"no {group.kind} kernel in this formulation")
        keys = {sym.contact_key(s.contact) for s in self.layout.contacts}
        if (
            any(sym.contact_key(c) not in keys for c in group.contact_set)
            or any(term_key(t) not in self._term_columns[group.kind].slots for t in group.stages[0].costs)
            or any(sym.soft_key(s) not in self.layout.soft for s in group.soft)
        ):
            raise ValueError("the OCP has contacts or cost terms that are not slots of this formulation's kernels")

    # ------------------------------------------------------------------ layout of a group

    def _structure(self, kind, slots):
        """The index maps of a group of ``kind`` whose contacts fill ``slots`` (cached): its force
        columns, its :class:`Blocks` in the kernel's outputs, the supports of its columns, its
        cone rows and bounds, the columns its cones touch."""
        key = (kind, tuple(s.offset for s in slots))
        if key in self._structures:
            return self._structures[key]
        lay, nv = self.layout, self.model.nv
        f_cols = np.concatenate([np.arange(s.offset, s.offset + s.dim) for s in slots] + [np.zeros(0, int)]).astype(int)
        y = self._y_columns(kind, f_cols)
        rows = np.concatenate((np.arange(nv), nv + f_cols))
        if kind == "contact":
            cones = [s.cone for s in slots if s.cone is not None]
            cones = np.concatenate([np.arange(ROWS * k, ROWS * k + ROWS) for k in cones] + [np.zeros(0)]).astype(int)
            bounds = bound_rows(lay.limits, nv, lay.nu, len(y))
        else:
            cones, bounds = np.zeros(0, int), np.zeros((0, len(y)))
        touched = self._cone_columns(kind, y, cones)
        supports = self._supports(kind, y, touched)
        blocks = self._blocks(kind, y, rows, cones, bounds, touched)
        self._structures[key] = (f_cols, blocks, supports, cones, bounds, touched.astype(np.intc))
        return self._structures[key]

    def _nz(self, kind) -> int:
        """The size of ``(dx, du)`` at a stage of ``kind`` (no controls at an impulse)."""
        return 2 * self.model.nv + self.layout.ntau + (self.layout.nu if kind == "contact" else 0)

    def _y_columns(self, kind, f_cols) -> np.ndarray:
        """A group's columns of the layout's ``y``: all but the forces, then its force columns ``f_cols``."""
        nf = self._nz(kind) + self.model.nv  # the first force column of y
        return np.concatenate((np.arange(nf), nf + f_cols))

    def _cone_columns(self, kind, y, cones) -> np.ndarray:
        """The columns of a group (``y``: its columns of the layout's) that its cone rows
        ``cones`` touch, by the structural nonzeros of the kernel's ``G``."""
        if kind != "contact" or not len(cones):
            return np.zeros(0, int)
        kernel = self.kernels[kind]
        G = np.zeros(kernel.numel[8], dtype=bool)
        G[kernel.patterns[8]] = True
        return np.flatnonzero(G.reshape(-1, kernel.numel[1])[np.ix_(cones, y)].any(axis=0))

    def _blocks(self, kind, y, rows, cones, bounds, touched) -> Blocks:
        """The :class:`Blocks` of a group of ``kind`` with the columns ``y`` and rows ``rows`` of
        the layout's, the cone rows ``cones``, the Jacobian rows ``bounds`` of its limits and the
        columns ``touched`` by its cones: its cost, ``g, H, c, C, b, A`` and, at contact stages,
        the values of its inequalities (cones, then every bound row) and the cones' ``G``."""
        kernel, nx = self.kernels[kind], 2 * self.model.nv + self.layout.ntau
        every, ny = np.arange(nx), kernel.numel[1]
        # (rows, columns) of each output, a matrix of the layout's ny columns; None: a vector
        selections = [(None, [0]), (None, y), (y, y), (None, rows), (rows, y), (None, every), (every, y)]
        if kind == "contact":
            inequalities = np.concatenate((cones, np.arange(ROWS * self.layout.ncones, kernel.numel[7])))
            selections += [(None, inequalities), (cones, y)]
        shapes, src, dst = [], [], []
        for j, (r, c) in enumerate(selections):
            width = kernel.numel[j] if r is None else ny
            index = _selection(kernel.patterns[j], kernel.numel[j], [0] if r is None else r, c, width)
            shapes.append((len(c),) if r is None else (len(r), len(c)))
            src.append(index[0])
            dst.append(index[1])
        if kind == "contact":  # the entries of H the interior-point terms add to, cleared where the kernel has none
            n = len(y)
            diagonal = np.flatnonzero(np.any(bounds != 0, axis=0))
            added = np.union1d((touched[:, None] * n + touched).ravel(), diagonal * (n + 1))
            cleared = np.setdiff1d(added, dst[2])
            src[2], dst[2] = np.concatenate((src[2], np.full(len(cleared), -1))), np.concatenate((dst[2], cleared))
        intc = lambda x: np.ascontiguousarray(x, dtype=np.intc)  # noqa: E731
        return Blocks(
            tuple(shapes),
            intc([int(np.prod(s)) for s in shapes]),
            intc(kernel.sizes[: len(shapes)]),
            intc(list(map(len, src))),
            intc(np.concatenate(src)),
            intc(np.concatenate(dst)),
        )

    def _plan(self, group) -> GroupPlan:
        """The :class:`GroupPlan` of the groups of ``group``'s key (made once, after
        :meth:`_check`)."""
        plan = self._plans.get(group.key)
        if plan is not None:
            return plan
        self._check(group)
        lay = self.layout
        slots = tuple(lay.slot(c) for c in group.contact_set)
        row, start, targets = [], 0, {}
        by_offset = {s.offset: (i, c) for i, (c, s) in enumerate(zip(group.contact_set, slots))}  # the last copy
        for slot in lay.contacts:
            i, c = by_offset.get(slot.offset, (None, None))
            row += [[0.0, 0.0] if c is None else [c.kp, c.kd], _NEUTRAL_TARGET[slot.target_size]]
            if c is not None and c.placement is not None:
                targets[i] = (start + 2, slot.contact.translational)
            start += 2 + slot.target_size
        contacts = np.concatenate(row) if row else np.zeros(0)
        soft = sym.soft_parameters(lay, group.soft, 1)[0]
        plan = GroupPlan(slots, self._structure(group.kind, slots), contacts, tuple(targets.items()), soft)
        self._plans[group.key] = plan
        return plan

    def _map(self, group) -> GroupMap:
        lay, S = self.layout, group.size
        plan = self._plan(group)
        f_cols, blocks, supports, cones, bounds, touched = plan.structure
        scatter = None
        if len({s.offset for s in plan.slots}) < len(plan.slots):  # a contact listed twice: its forces add up
            scatter = np.zeros((len(f_cols), lay.m))
            scatter[np.arange(len(f_cols)), f_cols] = 1.0
        disturbance = self._disturbance_rows(self.ocp.disturbance, S)
        rows = self._stage_inputs(group, plan)
        static = self._contact_constants(rows, disturbance) if group.kind == "contact" else rows
        forward = None
        if "forward" in self.kernels:
            forward = np.concatenate(
                (disturbance, self._contact_inputs(group.contacts, S, plan), _rows(plan.soft, S)), axis=1
            )
        workspace = plan.workspace.get(S)
        if workspace is None:
            workspace = plan.workspace[S] = Workspace(self.kernels[group.kind], blocks, S)
        return GroupMap(f_cols, blocks, workspace, supports, cones, bounds, touched, static, forward, scatter)

    def _contact_constants(self, rows, disturbance) -> np.ndarray:
        """The constant inputs of contact stages from their own ``rows`` (:meth:`_stage_inputs`) and
        the ``disturbance`` on each: the time step, the filter's gain, the disturbance, then the
        rest of their rows."""
        gain = self.ocp.filter_gain(rows[:, 0])[:, None] if self.layout.ntau else np.zeros((len(rows), 0))
        return np.concatenate((rows[:, :1], gain, disturbance, rows[:, 1:]), axis=1)

    def moving_rows(self, group) -> MovingRows:
        """The constant inputs of ``group`` (contact stages) as :class:`MovingRows`."""
        return MovingRows(self, group)

    def held_rows(self, group) -> HeldRows:
        """The constant inputs of ``group`` as :class:`HeldRows`."""
        return HeldRows(self, group)

    def _stage_inputs(self, group, plan) -> np.ndarray:
        """``(S, n)``: the constant inputs that are each stage's own (contact stages: the time
        step, the contacts' gains and targets, the sliding friction, the soft contacts and the
        cost terms; impulse stages: the cost terms). A stage keeps its row for the ``plan`` it
        was made for (the row is a function of the stage's immutable fields and of the plan): the
        overlapping horizons of an MPC make each once. New stages' rows start from a kept stage's
        of the group, else from the last one made for the plan (:meth:`_new_inputs`): the terms an
        MPC's builder shares between its horizons are not written again. A group whose builder
        stacked its costs (:attr:`ocp.problem.StageGroup.stacked`, its stages new at each problem)
        has its rows written from those, one assignment per term field. A group whose stages
        begin with the last ones of the previous group of its key (an MPC's horizon moved by
        whole stages) takes their rows from that group's, in one copy."""
        if group.stacked:
            return self._new_inputs(group, plan)
        stages, last = group.stages, self._last_rows.get(group.key)
        shift = None if last is None or last[0] is not plan else _shift(last[1], stages)
        if shift is None:
            rows = self._kept_inputs(group, plan)
        elif len(last[1]) - shift == len(stages):
            rows = last[2][shift:]
        else:  # the stages after those the groups share
            tail = self._kept_inputs(group.subset(range(len(last[1]) - shift, len(stages))), plan)
            rows = np.concatenate((last[2][shift:], tail))
        self._last_rows[group.key] = (plan, stages, rows)
        return rows

    def _kept_inputs(self, group, plan) -> np.ndarray:
        """:meth:`_stage_inputs` of a group that is not stacked: the rows its stages keep, the
        others made (:meth:`_new_inputs`)."""
        stages = group.stages
        kept = [s.__dict__.get("_inputs") for s in stages]
        missing = [i for i, k in enumerate(kept) if k is None or k[0] is not plan]
        if not missing:
            return np.array([k[1] for k in kept])
        new = group if len(missing) == len(stages) else group.subset(missing)
        keeping = (i for i in reversed(range(len(stages))) if kept[i] and kept[i][0] is plan)
        donor = next(((stages[i], kept[i][1]) for i in keeping), self._donors.get(group.key))
        rows = self._new_inputs(new, plan, donor)
        for i, row in zip(missing, rows):
            object.__setattr__(stages[i], "_inputs", (plan, row))
        self._donors[group.key] = (stages[missing[-1]], rows[-1])
        return rows if new is group else np.array([s.__dict__["_inputs"][1] for s in stages])

    def _new_inputs(self, group, plan, donor=None) -> np.ndarray:
        """The rows of :meth:`_stage_inputs` of ``group``'s stages. ``donor``: ``(stage, row)``, a
        stage of ``plan`` and its row: what every stage of ``group`` shares with it (the same
        contacts, the same sliding friction, the same cost term objects) is copied from its row."""
        if group.stacked:
            numbers = GroupNumbers(group.costs.terms, group.contacts, group.dt, group.sliding)
            return self._stacked_inputs(group, plan, numbers)
        lay, S, stages = self.layout, group.size, group.stages
        f_cols, columns = plan.structure[0], self._term_columns[group.kind]
        donor, kept = (None, None) if donor is None else donor
        base = None if kept is None else (donor.costs, kept[len(kept) - len(columns.neutral) :])
        terms = sym.term_parameters(lay, columns, [s.costs for s in stages], f_cols, base)
        if group.kind != "contact":
            return terms
        first = 1 + len(plan.contacts)  # a row: the time step, the contacts, the sliding friction, ...
        if _shared(stages, donor, "contacts"):
            contacts = _rows(kept[1:first], S)
        else:
            contacts = self._contact_inputs(group.contacts, S, plan)
        if _shared(stages, donor, "sliding"):
            sliding = _rows(kept[first : first + self._sliding_size], S)
        else:
            sliding = sym.sliding_parameters(lay, plan.slots, group.sliding, S)
        return np.concatenate((group.dt[:, None], contacts, sliding, _rows(plan.soft, S), terms), axis=1)

    def _stacked_inputs(self, group, plan, numbers: GroupNumbers) -> np.ndarray:
        """The rows of :meth:`_stage_inputs` of stages of ``group``'s structure whose numbers are
        ``numbers`` (a group whose builder stacked its costs: one assignment per term field)."""
        lay, S = self.layout, group.size
        terms = sym.stacked_term_parameters(lay, self._term_columns[group.kind], numbers.costs, S, plan.structure[0])
        if group.kind != "contact":
            return terms
        contacts = self._contact_inputs(numbers.contacts, S, plan)
        sliding = sym.sliding_parameters(lay, plan.slots, numbers.sliding, S)
        return np.concatenate((numbers.dt[:, None], contacts, sliding, _rows(plan.soft, S), terms), axis=1)

    def static_inputs(self, group, numbers: GroupNumbers, disturbance=None) -> np.ndarray:
        """The constant inputs of ``group``'s stages (those its map holds, :meth:`write_constants`)
        with the numbers ``numbers`` of an OCP of the same structure and its ``disturbance (nv,)``
        (None: zero): those of that OCP's map of the group, bitwise, made without its stages."""
        rows = self._stacked_inputs(group, self._plan(group), numbers)
        if group.kind != "contact":
            return rows
        return self._contact_constants(rows, self._disturbance_rows(disturbance, group.size))

    def _disturbance_rows(self, disturbance, S) -> np.ndarray:
        """``disturbance (nv,)`` (None: zero) on each of ``S`` rows."""
        return _rows(np.zeros(self.model.nv) if disturbance is None else disturbance, S)

    def terminal_constants(self, terminal) -> np.ndarray:
        """The terminal kernel's constant inputs (:attr:`terminal_inputs`) for the terminal cost
        terms ``terminal`` (kept for the last terms met, by identity)."""
        kept = self._kept.get("terminal")
        if kept is None or len(kept[0]) != len(terminal) or any(a is not b for a, b in zip(kept[0], terminal)):
            row = sym.term_parameters(self.layout, self._term_columns["terminal"], [terminal], np.zeros(0, int))
            kept = self._kept["terminal"] = (terminal, row)
        return kept[1][0]

    def _contact_inputs(self, contacts, S, plan) -> np.ndarray:
        """``(S, n)``: the gains and Baumgarte targets of the layout's contact slots for a group's
        ``contacts`` (their targets stacked over its ``S`` stages)."""
        inputs = _rows(plan.contacts, S)
        for i, (start, translational) in plan.targets:
            _fill_target(inputs, contacts[i], start, translational)
        return inputs

    def _supports(self, kind, y, touched, curvature=None):
        """``(zw, ww, ar, ac)``: the columns of ``H_zw``, the rows and columns of ``H_ww``, the
        rows and the columns of ``A_w`` of a group of ``kind`` (``y``: its columns) that can be
        nonzero, from the structural nonzeros of the kernel's outputs, of the ``curvature``
        kernel's if given, and the columns ``touched`` by its cones (their barrier terms join
        ``H``)."""
        kernel, nx = self.kernels[kind], 2 * self.model.nv + self.layout.ntau
        n = kernel.numel[1]  # y of the layout
        H, A = np.zeros(n * n, dtype=bool), np.zeros(nx * n, dtype=bool)
        H[kernel.patterns[2]], A[kernel.patterns[6]] = True, True
        if curvature is not None:
            H[curvature.patterns[0]] = True
        H, A = H.reshape(n, n)[np.ix_(y, y)], A.reshape(nx, n)[:, y]
        H[np.ix_(touched, touched)] = True
        nz = self._nz(kind)
        Hzw, Hww, Aw = H[:nz, nz:], H[nz:, nz:], A[:, nz:]
        return tuple(  # in the C condensing's integers
            np.flatnonzero(x).astype(np.intc)
            for x in (Hzw.any(axis=0), Hww.any(axis=0) | Hww.any(axis=1), Aw.any(axis=1), Aw.any(axis=0))
        )

    # ------------------------------------------------------------------ evaluation

    @property
    def _reference(self) -> NumpyStages:
        """The numpy backend of this problem: the static start's terms without a compiler."""
        if self._numpy is None:
            self._numpy = NumpyStages(self.ocp)
        return self._numpy

    def inequalities(self, group, q, v, u, f, tau=None):
        """:func:`ocp.inequalities.inequalities` in numpy (the one-off inequalities of an initial
        iterate, the cones of a contact listed twice) with the layout's friction and limits,
        those of every problem of these kernels."""
        lay = self.layout
        return inequalities(self.model, lay.friction, lay.limits, group, q, v, u, f, tau)

    def inequality_values(self, group, q, v, u, f, tau=None):
        lay = self.layout
        return inequality_values(self.model, lay.friction, lay.limits, group, q, v, u, f, tau)

    def static_terms(self, group) -> tuple:
        """:meth:`ocp.stages.NumpyStages.static_terms` from one call of the kernel of
        :mod:`ocp.static_terms` per problem (compiled on first use; the numpy reference, with a
        warning, when it cannot be)."""
        if self._statics is None:
            kernel = self._kept.get("kernel")
            if kernel is None:
                try:
                    kernel = StaticTermsKernel(self.layout, self.quiet, self.compile)
                except codegen.CompileError as e:
                    print(f"liftoff: warning: {e}; the static start's terms in numpy", file=sys.stderr)
                    kernel = False
                self._kept["kernel"] = kernel
            if not kernel:
                return self._reference.static_terms(group)
            self._statics = kernel(self.ocp.q0)
        gravity, J = self._statics
        return gravity, J[self.maps[int(group.index[0])].f_cols]

    def _call(self, kind, x):
        start = time.perf_counter()
        out = self.kernels[kind](x)
        self.kernel_seconds += time.perf_counter() - start
        return out

    def evaluate(self, group, q, v, u, w, q_next, v_next, tau=None, tau_next=None) -> StageEval:
        gm = self.maps[int(group.index[0])]
        nv = self.model.nv
        ws, cols = gm.workspace, self._columns[group.kind]
        x = ws.x  # the variables written in place, the constant inputs once per map
        x[:, cols["q"]], x[:, cols["v"]], x[:, cols["a"]] = q, v, w[:, :nv]
        if "u" in cols:
            x[:, cols["u"]] = u
        x[:, cols["q_next"]], x[:, cols["v_next"]] = q_next, v_next
        if tau is not None:
            x[:, cols["tau"]], x[:, cols["tau_next"]] = tau, tau_next
        if gm.scatter is None:
            x[:, cols["f"].start + gm.f_cols] = w[:, nv:]  # the slots of other contacts stay zero
        else:
            x[:, cols["f"]] = w[:, nv:] @ gm.scatter
        _write_constants(gm, cols)
        begin = time.perf_counter()
        ws.kernel()
        self.kernel_seconds += time.perf_counter() - begin
        ws.scatter()
        if gm.scatter is not None and group.kind == "contact":  # a cone per copy of a contact listed twice
            return replace(
                _evaluation(gm, group.kind),
                ineq=self.inequalities(group, q, v, u, w[:, nv:], tau),
                calls=None,
            )
        return _evaluation(gm, group.kind)

    def linearize_group(self, group, gv, it, eps, lqr):
        """The lifted linearization of ``group`` (its variables ``gv``) at the iterate ``it`` for
        the barrier ``eps``, condensed into ``lqr``, in one compiled call (:mod:`ocp.group`): the
        :class:`ocp.stages.StageEval` of :meth:`evaluate`, the :class:`ocp.interior.Terms` of
        :func:`ocp.interior.terms` and the :class:`ocp.condensing.Condensed` of
        :func:`ocp.condensing.condense` (None where ``Cw`` is singular), bitwise. None where the
        steps run one by one: a contact listed twice, an interpreted kernel, a library not compiled."""
        call = self.group_linearization(group)
        if call is None:
            return None
        gm = self.maps[int(group.index[0])]
        self.write_constants(group)
        terms, condensed, seconds = call(
            group.index, it.q, it.v, it.tau, gv.u, gv.w, gv.s, gv.z, eps, gv.beta, it.lam, lqr
        )
        self.kernel_seconds += seconds
        return _evaluation(gm, group.kind), terms, condensed

    def group_linearization(self, group, exact=False):
        """The :class:`ocp.group.GroupLinearization` of ``group``'s workspace (bound on first
        use), or None where its steps run one by one (:meth:`linearize_group`). ``exact``: that of
        the exact Hessian (:meth:`curvature`), which adds the curvature its workspace keeps or,
        fresh, computes it (with a compiled curvature kernel: its ``fresh``)."""
        gm = self.maps[int(group.index[0])]
        ws = gm.workspace
        if gm.scatter is not None:
            return None
        if ws.linearize is None:
            ws.calls["group"] = self._bind_group(group, gm, gm.supports) or False
        if not exact or not ws.linearize:
            return ws.linearize or None
        kernel, S = self._curvature_kernel(group.kind), group.size
        kept = self._kept_curvature(ws, kernel, S)
        if "group" not in kept.calls:
            src, dst, supports = self._curvature_structure(group.kind, gm, kernel)
            n, nv = ws.x.shape[1], self.model.nv
            batch = getattr(kernel, "_batch", None)
            binding = grouped.Exact(
                kept.H, kept.curvature, None if batch is None else ctypes.cast(batch, ctypes.c_void_p).value,
                kept.x, kept.out, src, dst, n + nv + gm.f_cols,
            )  # fmt: skip
            kept.calls["group"] = self._bind_group(group, gm, supports, binding) or False
        return kept.calls["group"] or None

    def _bind_group(self, group, gm, supports, exact=None):
        """:func:`ocp.group.bind` on ``group``'s workspace (its map ``gm``) with the condensing's
        ``supports`` (and ``exact``: see :class:`ocp.group.GroupLinearization`)."""
        ev, nu = _evaluation(gm, group.kind), self.layout.nu if group.kind == "contact" else 0
        columns, nx, ws = self._columns[group.kind], 2 * self.model.nv + self.layout.ntau, gm.workspace
        return grouped.bind(
            self.kernels[group.kind], _library(), ws.x, columns, columns["f"].start + gm.f_cols, ws.outputs,
            ws.blocks, gm.blocks, ev.ineq, supports, nx, nu, exact,
        )  # fmt: skip

    def keeps_curvature(self, group) -> bool:
        """Whether ``group``'s workspace keeps a curvature of this problem (made by a fresh
        :meth:`curvature`, or by a fresh compiled linearization marked by :meth:`keep_curvature`)."""
        kept = self.maps[int(group.index[0])].workspace.exact
        return kept is not None and kept.problem is self.ocp

    def keep_curvature(self, groups):
        """Mark the curvatures in the workspaces of ``groups`` as this problem's (a fresh compiled
        linearization computed them)."""
        for group in groups:
            self.maps[int(group.index[0])].workspace.exact.problem = self.ocp

    def write_constants(self, group):
        """``group``'s constant inputs into its workspace's kernel input, unless it holds them
        (before a compiled call evaluates the group's kernel)."""
        _write_constants(self.maps[int(group.index[0])], self._columns[group.kind])

    def evaluation(self, group, exact=False) -> StageEval:
        """The :class:`ocp.stages.StageEval` of ``group``'s latest evaluation (its workspace's
        blocks); ``exact``: with the exact Hessian's ``H`` (:meth:`curvature`), its supports and calls."""
        gm = self.maps[int(group.index[0])]
        ev = _evaluation(gm, group.kind)
        return self._with_curvature(ev, gm, group.kind) if exact else ev

    @property
    def terminal_inputs(self) -> tuple:
        """``(kernel, constants)``: the terminal kernel and its constant inputs for this OCP
        (after the knot's ``q, v, tau`` in its input)."""
        return self.kernels["terminal"], self._terminal_static

    def curvature(self, group, ev: StageEval, beta, lam_next, fresh=True) -> StageEval:
        """``ev``, the evaluation of ``group`` just made, with the curvature of its Lagrangian
        added to its ``H`` (:func:`ocp.symbolic_stages.contact_curvature_function`) at the
        multipliers ``beta (S, nv + m)`` of its local equalities and ``lam_next (S, nx)`` of its
        state equation; not ``fresh``: the curvature of the group's last fresh call, at the
        iterate and multipliers it was given (the workspace keeps it, dense; a group without one
        computes it). ``H`` is another block of the workspace, kept like the others (module
        docstring), with the supports of both kernels. The kernels are built on first use."""
        gm, nv, S = self.maps[int(group.index[0])], self.model.nv, group.size
        kernel, ws = self._curvature_kernel(group.kind), gm.workspace
        exact = self._kept_curvature(ws, kernel, S)
        src, dst, _ = self._curvature_structure(group.kind, gm, kernel)
        if fresh or exact.problem is not self.ocp:
            x, n = exact.x, ws.x.shape[1]
            x[:, :n], x[:, n : n + nv] = ws.x, beta[:, :nv]
            forces = slice(n + nv, n + nv + self.layout.m)
            if gm.scatter is None:
                x[:, forces] = 0.0
                x[:, n + nv + gm.f_cols] = beta[:, nv:]
            else:  # the copies of a contact listed twice act through one slot: their multipliers add up
                x[:, forces] = beta[:, nv:] @ gm.scatter
            x[:, forces.stop :] = lam_next[:, :nv]
            begin = time.perf_counter()
            exact.call()
            self.kernel_seconds += time.perf_counter() - begin
            exact.curvature.fill(0.0)
            exact.curvature.reshape(S, -1)[:, dst] = exact.out[:, src]
            exact.problem = self.ocp
        np.add(ev.H, exact.curvature, out=exact.H)
        return self._with_curvature(ev, gm, group.kind)

    @staticmethod
    def _kept_curvature(ws, kernel, S) -> Curvature:
        """The :class:`Curvature` of the workspace ``ws`` of ``S`` stages (made on first use)."""
        if ws.exact is None:
            x, out = np.empty((S, kernel.n_in)), np.empty((S, kernel.sizes[0]))
            H = ws.blocks[2]
            ws.exact = Curvature(x, out, kernel.bind(x, [out]), np.empty_like(H), np.empty_like(H), {})
        return ws.exact

    def _with_curvature(self, ev, gm, kind) -> StageEval:
        """``ev`` of a group of ``kind`` (its map ``gm``) with its workspace's exact ``H``
        (:meth:`curvature`), the supports of both kernels and the calls bound to that ``H``."""
        kept, supports = gm.workspace.exact, self._curvature_structure(kind, gm, self._curvature_kernel(kind))[2]
        return replace(ev, H=kept.H, supports=supports, calls=kept.calls)

    def _curvature_structure(self, kind, gm, kernel):
        """``(src, dst, supports)`` of a group of ``kind`` (its :class:`GroupMap` ``gm``): where
        its block of the curvature ``kernel``'s output is, and the supports of ``H`` with it."""
        key = ("curvature", kind, gm.f_cols.tobytes())
        if key not in self._structures:
            y = self._y_columns(kind, gm.f_cols)
            width = round(kernel.numel[0] ** 0.5)  # the layout's y
            supports = self._supports(kind, y, gm.touched, kernel)
            self._structures[key] = (*_selection(kernel.patterns[0], kernel.numel[0], y, y, width), supports)
        return self._structures[key]

    def _curvature_kernel(self, kind):
        """The kernel of :meth:`curvature` at stages of ``kind`` (built or loaded once, shared by
        the problems of these kernels; interpreted by CasADi, slowly, with one warning line, when
        it cannot be compiled)."""
        name = f"{kind}_curvature"
        if name not in self._kept:
            build = {
                "contact": sym.contact_curvature_function,
                "impulse": sym.impulse_curvature_function,
                "terminal": sym.terminal_curvature_function,
            }[kind]
            full, kernel, key = f"{name}_{self.model.name}", None, {**self._key, "kind": name}
            if self.compile:
                try:
                    kernel = codegen.load(full, key, lambda: build(self.layout), self.quiet, True)
                except codegen.CompileError as e:
                    print(f"liftoff: warning: {e}; the exact Hessian's {kind} terms interpreted", file=sys.stderr)
            self._kept[name] = kernel or codegen.Interpreted(build(self.layout), full, True)
        return self._kept[name]

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

    def terminal(self, q, v, tau=None, curvature=False, fresh=True):
        """``(cost, H, g)`` of the terminal cost at ``x_K`` in ``(dq, dv, dtau)``; ``curvature``:
        ``H`` with the residuals' curvature (:func:`ocp.symbolic_stages.terminal_curvature_function`),
        not ``fresh``: that of the last fresh call for this problem (:meth:`curvature`)."""
        nx = 2 * self.model.nv + self.layout.ntau
        tau = np.zeros(0) if tau is None else tau
        x = np.concatenate((q, v, tau, self._terminal_static))[None]
        cost, g, H = self._call("terminal", x)
        H = H[0].reshape(nx, nx)
        if curvature:
            H = H + self.terminal_curvature(q, v, tau, fresh)
        return float(cost[0, 0]), H, g[0]

    def terminal_curvature(self, q, v, tau=None, fresh=True) -> np.ndarray:
        """``(nx, nx)``: the curvature of the terminal cost's residuals at ``x_K``
        (:func:`ocp.symbolic_stages.terminal_curvature_function`), which :meth:`terminal` adds;
        not ``fresh``: that of the last fresh call (computed if there is none)."""
        if fresh or self._terminal_curvature is None:
            nx = 2 * self.model.nv + self.layout.ntau
            x = np.concatenate((q, v, np.zeros(0) if tau is None else tau, self._terminal_static))[None]
            kernel = self._curvature_kernel("terminal")
            values = np.zeros(kernel.numel[0])
            values[kernel.patterns[0]] = kernel(x)[0][0]
            self._terminal_curvature = values.reshape(nx, nx)
        return self._terminal_curvature


class HeldRows:
    """The constant inputs of a group of ``stages`` (a :class:`CompiledStages`) held apart from
    its map: another problem's of the group's structure (an MPC's horizon updated in place,
    :mod:`problems.mpc.in_place`). They start as the map's, and are written into the group's
    workspace before a call where the workspace holds another's (:func:`_write_constants`); the
    group's map keeps the rows of its problem."""

    def __init__(self, stages: CompiledStages, group):
        gm = stages.maps[int(group.index[0])]
        self.group, self.rows, self.workspace = group, gm.static.copy(), gm.workspace
        self._columns = stages._columns[group.kind]["static"]

    def set(self, rows):
        """Hold ``rows`` (written by the next call's :meth:`write`)."""
        self.rows, self.workspace.static = rows, None

    def write(self):
        """The rows into the group's workspace, unless it holds them."""
        ws = self.workspace
        if ws.static is not self:
            ws.x[:, self._columns], ws.static = self.rows, self


class MovingRows(HeldRows):
    """The constant inputs of a group of contact stages of ``stages`` moved stage by stage in
    place: the horizons of an MPC that recede by a stage per update (:mod:`problems.mpc.receding`)."""

    def __init__(self, stages: CompiledStages, group):
        super().__init__(stages, group)
        self._stages, self._plan = stages, stages._plan(group)
        first = 2 if stages.layout.ntau else 1  # the disturbance's columns: after the time step and the filter's gain
        self._disturbance = slice(first, first + stages.model.nv)

    def move(self, after, disturbance):
        """Drop the first stage's row, append that of the stage of ``after`` (a group of one
        stage after :attr:`group`'s, :meth:`ocp.problem.StageGroup.after`) made as its problem's
        would be, and write ``disturbance (nv,)`` (None: none) on every row."""
        stages = self._stages
        own = stages._kept_inputs(after, self._plan)
        disturbance = np.zeros(stages.model.nv) if disturbance is None else disturbance
        rows = self.rows
        rows[:-1] = rows[1:]
        rows[-1:] = stages._contact_constants(own, disturbance[None])
        rows[:, self._disturbance] = disturbance
        self.workspace.static = None  # written by the next call's write()


def _write_constants(gm: GroupMap, columns):
    """``gm``'s constant inputs into its workspace's kernel input (its ``columns["static"]``),
    unless the workspace holds them already: written once per map, not per evaluation."""
    ws = gm.workspace
    if ws.static is not gm:
        ws.x[:, columns["static"]], ws.static = gm.static, gm


def _evaluation(gm: GroupMap, kind) -> StageEval:
    """The :class:`ocp.stages.StageEval` on the blocks of ``gm``'s workspace (the kernel's
    latest evaluation, scattered)."""
    ws = gm.workspace
    cost, g, H, c, C, b, A, *inequalities = ws.blocks
    if kind == "contact":
        ineq = Inequalities(*inequalities, gm.bounds, gm.touched)
    else:
        ineq = Inequalities(*ws.no_inequalities, gm.bounds)
    return StageEval(cost[:, 0], H, g, c, C, b, A, ineq, gm.supports, ws.calls)


def _check_duplicates(ocp, groups):
    """:class:`ValueError`, before any kernel is compiled, for a stage with a contact listed twice
    (the kernels see the sum of the copies' forces) and a cost on the forces, or copies of other
    gains or targets (inconsistent: one slot has one target). The stages of a group share their
    contacts' frames: only those of groups with a frame twice are read."""
    twice = [g for g in groups if len({c.frame for c in g.contact_set}) < len(g.contact_set)]
    for k in sorted(int(k) for g in twice for k in g.index):
        stage = ocp.stages[k]
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


_NEUTRAL_TARGET = {3: np.zeros(3), 12: np.concatenate((np.eye(3).ravel(), np.zeros(3)))}  # no target: p = 0, R = I


def _selection(pattern, numel, rows, cols, width) -> tuple:
    """``(src, dst)``: the entries ``dst`` of the block ``output[rows][:, cols]`` of a kernel's
    output (``numel`` entries, rows of ``width``, row-major) that are among its structural
    nonzeros ``pattern``, and their positions ``src`` in it. A row or column listed twice (a
    contact listed twice) is read twice."""
    position = np.full(numel, -1)
    position[pattern] = np.arange(len(pattern))
    src = position[(np.asarray(rows)[:, None] * width + np.asarray(cols)[None, :]).ravel()]
    dst = np.flatnonzero(src >= 0)
    return src[dst], dst


def bind_scatter(outputs, blocks: Blocks, dense):
    """A call without arguments that writes the entries of :class:`Blocks` from a sparse
    kernel's ``outputs`` into its blocks ``dense`` (module docstring; the other entries are left
    as they are): ``scatter.c``, or numpy without a compiler. The arrays are the caller's, kept
    alive and in place."""
    S, n = len(dense[0]), len(dense)
    library = _library()
    if library is not None:
        args = (
            S, n, *map(address, (blocks.nnz, blocks.sizes, blocks.counts)),
            (ctypes.c_void_p * n)(*map(address, outputs[:n])),
            (ctypes.c_void_p * n)(*map(address, dense)),
            address(blocks.src_index), address(blocks.dst_index),
        )  # fmt: skip
        return lambda: library.liftoff_scatter(*args)
    end = np.cumsum(blocks.counts)
    pieces = list(zip(outputs, dense, np.split(blocks.src_index, end), np.split(blocks.dst_index, end)))

    def scatter():
        for out, block, src, dst in pieces:
            flat, read = block.reshape(S, -1), src >= 0
            flat[:, dst[read]] = out[:, src[read]]
            flat[:, dst[~read]] = 0.0

    return scatter


_SOURCE = Path(__file__).with_name("scatter.c")
# the C libraries that evaluate a group with the kernels' outputs, compiled alongside the kernels
LIBRARIES = (condensing._SOURCE, interior._SOURCE, grouped._SOURCE, _SOURCE)
_P, _I = ctypes.c_void_p, ctypes.c_int
_FUNCTIONS = {"liftoff_scatter": (None, (_I, _I) + (_P,) * 7)}


def _library():
    return codegen.compiled_library(_SOURCE, _FUNCTIONS)


def _shared(stages, donor, name) -> bool:
    """Whether each of ``stages`` has the field ``name`` of ``donor`` (the same object; False
    without a donor)."""
    return donor is not None and all(getattr(s, name) is getattr(donor, name) for s in stages)


def _shift(previous, stages):
    """The number ``d`` of the ``previous`` stages such that ``stages`` begin with the others
    (the same objects, in order), or None."""
    first = stages[0]
    d = next((i for i, stage in enumerate(previous) if stage is first), None)
    if d is None or len(previous) - d > len(stages) or not all(map(operator.is_, previous[d:], stages)):
        return None
    return d


def _rows(row, S) -> np.ndarray:
    """``row (n,)`` repeated in a new ``(S, n)`` array."""
    out = np.empty((S, len(row)))
    out[:] = row
    return out


def _fill_target(inputs, contact, start, translational):
    """Write the Baumgarte target of a group's ``contact`` (stacked over the rows of ``inputs``)
    into its slot's target columns from ``start``: ``p (3)``, or ``(R, p)`` flattened row by
    row (12; a target without a rotation keeps the slot's neutral one)."""
    R, p = contact.target()
    if translational:
        inputs[:, start : start + 3] = p.T
    elif R is not None:
        inputs[:, start : start + 9] = R.transpose(2, 0, 1).reshape(-1, 9)
        inputs[:, start + 9 : start + 12] = p.T
