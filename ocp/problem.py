"""The optimal control problem on a known contact sequence (seed 004 Sec. II).

Knots ``x_0 .. x_K`` with ``x = (q, v)`` are joined by stages, in time order:

- :class:`ContactStage` (time step ``dt``, active contacts): variables ``(q, v, u, a, f)``;
- :class:`ImpulseStage` at a touchdown (no time elapses): variables ``(q, v, dv, Lambda)``,
  with the contacts active right after the impact (landing and standing feet alike);

and a terminal cost on ``x_K``. With a ``torque_filter`` (seed 001 eq. 46-49) the joint
torques ``tau`` are part of the state, ``x = (q, v, tau)``, and the control ``u`` is the
unfiltered torque ``w`` of the first-order filter ``tau_dot = omega0 (w - tau)``, ``omega0 =
2 pi f_c``, discretized with a zero-order hold: ``tau_{k+1} = g tau_k + (1 - g) u_k`` with
``g = exp(-omega0 dt)`` over a contact stage, ``tau_{k+1} = tau_k`` over an impulse.

Each stage carries its own cost terms (:mod:`ocp.costs`, references for that stage) and
contacts (Baumgarte targets for that stage). Inequalities:
the friction cone of every 3D contact force in the world frame (:mod:`ocp.friction`) and the
URDF's joint position, velocity and torque limits on the actuated joints of contact stages.

Stages of the same kind, contacts and cost terms form a :class:`StageGroup`: they are
evaluated together, with their references and targets stacked along a leading axis.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import itertools
import math
import operator
import weakref
from dataclasses import dataclass

import numpy as np

from liftoff import dynamics

from .costs import CostSum

LIMITS = ("position", "velocity", "torque")


@dataclass(frozen=True)
class SlidingFriction:
    """Coulomb friction on a tool that the plan slides along a surface: the force

        F = -mu f_n d

    at the origin of the frame of ``contact`` (the index of a 1D contact in the stage's contacts,
    whose force row is the surface's normal force ``f_n``), ``d (3,)`` the world unit direction
    in which the plan slides the tool at this stage (a polishing circle's tangent). An
    approximation of Coulomb's law, whose direction is the tool's actual sliding velocity: it
    keeps the stage's equations smooth (a direction that turns with the velocity makes the Newton
    steps oscillate near rest), and a controller's disturbance observer takes the difference. Its
    generalized force ``J^T F`` enters the inverse dynamics of the lifted contact stage; the
    non-lifted formulation, whose forward dynamics has no such term, refuses it."""

    contact: int
    mu: float
    direction: np.ndarray

    def __post_init__(self):
        d = np.asarray(self.direction, dtype=float)  # (3,), or stacked (S, 3); checked in floats (an OCP has many)
        if d.shape[-1:] != (3,) or any(abs(math.hypot(*row) - 1.0) > 1e-9 for row in d.reshape(-1, 3).tolist()):
            raise ValueError(f"sliding friction: the direction must be a unit vector (3,), got {self.direction!r}")
        mus = (self.mu,) if isinstance(self.mu, (int, float)) else np.ravel(self.mu).astype(float).tolist()
        if not all(math.isfinite(mu) and mu >= 0 for mu in mus):
            raise ValueError(f"sliding friction: expected mu >= 0, got {self.mu!r}")
        object.__setattr__(self, "direction", d)


class _Stage:
    """A stage keeps what is computed from its immutable fields in private attributes (its group
    key, the model it was checked against, its row of a compiled backend's inputs); its copies
    and pickles leave them out."""

    def __getstate__(self):
        return {name: value for name, value in self.__dict__.items() if not name.startswith("_")}


@dataclass(frozen=True)
class ContactStage(_Stage):
    """``dt`` seconds with ``contacts`` (a tuple of :class:`dynamics.Contact`) active, the
    ``sliding`` friction (:class:`SlidingFriction`) of some of them, and ``soft`` contacts (a
    tuple of :class:`dynamics.SoftContact`): not constraints (no rows, no force variables) but a
    force of the state, whose generalized force ``J^T F(q, v)`` enters the inverse dynamics of
    the stage (lifted) or its forward dynamics (non-lifted) as an applied force."""

    contacts: tuple
    dt: float
    costs: tuple = ()
    sliding: tuple = ()
    soft: tuple = ()

    kind = "contact"


@dataclass(frozen=True)
class ImpulseStage(_Stage):
    """A touchdown: the impact with ``contacts`` (everything in contact after it). The contact
    position of the landing feet is a cost term here (a quadratic penalty, as in seed 004's
    experiments)."""

    contacts: tuple
    costs: tuple = ()

    kind = "impulse"
    sliding = ()  # no time passes: nothing slides
    soft = ()  # a finite force gives no impulse


@dataclass(frozen=True)
class OCP:
    """The problem: ``model``, initial state ``(q0, v0)``, ``stages`` in time order,
    ``terminal_costs`` on ``x_K``, the friction coefficient of the cones (``None``: no cones)
    and which URDF ``limits`` are imposed (a subset of ``position, velocity, torque``; with a
    filter the torque limits bound ``tau``). ``torque_filter``: the filter's cut-off
    frequency ``f_c`` [Hz] (module docstring; ``None``: the torques are the controls), with
    the initial torques ``tau0`` (default zero). The joints' damping and Coulomb friction are
    the model's (:mod:`dynamics.joint_friction`), the friction smoothed over
    ``joint_friction_width`` [rad/s]. ``disturbance (nv,)``: a generalized force the model
    misses, estimated from measurements by the controller (offset-free MPC); it acts on the
    joints over the whole horizon as an applied torque (None: zero)."""

    model: object
    q0: np.ndarray
    v0: np.ndarray
    stages: tuple
    terminal_costs: tuple = ()
    friction: float | None = 0.7
    limits: tuple = LIMITS
    torque_filter: float | None = None
    tau0: np.ndarray | None = None
    joint_friction_width: float = dynamics.joint_friction.DEFAULT_WIDTH
    disturbance: np.ndarray | None = None

    def __post_init__(self):
        model = self.model
        object.__setattr__(self, "q0", _vector(self.q0, model.nq, "q0"))
        object.__setattr__(self, "v0", _vector(self.v0, model.nv, "v0"))
        if self.torque_filter is not None and not (np.isfinite(self.torque_filter) and self.torque_filter > 0):
            raise ValueError(f"torque filter cut-off must be a frequency > 0 (Hz), got {self.torque_filter!r}")
        tau0 = np.zeros(self.ntau) if self.tau0 is None else self.tau0
        object.__setattr__(self, "tau0", _vector(tau0, self.ntau, "tau0"))
        object.__setattr__(self, "stages", tuple(self.stages))
        if not self.stages:
            raise ValueError("an OCP needs at least one stage")
        checked = set()  # the contact tuples checked (stages often share one)
        unchecked = [k for k, stage in enumerate(self.stages) if getattr(stage, "_checked", None) is not model]
        for k in unchecked:  # an MPC's horizons share their stages, checked when first met
            stage = self.stages[k]
            if not isinstance(stage, (ContactStage, ImpulseStage)):
                raise TypeError(f"stage {k}: expected ContactStage or ImpulseStage, got {type(stage).__name__}")
            if stage.kind == "contact" and not (math.isfinite(stage.dt) and stage.dt > 0):
                raise ValueError(f"stage {k}: the time step must be > 0, got {stage.dt}")
            if stage.kind == "impulse" and not stage.contacts:
                raise ValueError(f"stage {k}: an impulse stage needs contacts")
            if stage.contacts and id(stage.contacts) not in checked:
                dynamics.contacts.check(model, stage.contacts)  # unknown frames raise here
                checked.add(id(stage.contacts))
            for s in stage.sliding:
                if not (0 <= s.contact < len(stage.contacts) and stage.contacts[s.contact].dim == 1):
                    raise ValueError(f"stage {k}: sliding friction on contact {s.contact}, not a 1D contact")
            for s in stage.soft:
                if not isinstance(s, dynamics.SoftContact):
                    raise TypeError(f"stage {k}: expected dynamics.SoftContact soft contacts, got {type(s).__name__}")
                model.frame_id(s.frame)  # an unknown frame raises here
            object.__setattr__(stage, "_checked", model)  # immutable: checked once for this model
        if self.disturbance is not None:
            object.__setattr__(self, "disturbance", _vector(self.disturbance, model.nv, "disturbance"))
        if not (np.isfinite(self.joint_friction_width) and self.joint_friction_width > 0):
            raise ValueError(f"the joint friction's smoothing width must be > 0, got {self.joint_friction_width!r}")
        if self.friction is not None and not (np.isfinite(self.friction) and self.friction > 0):
            raise ValueError(f"friction coefficient must be > 0, got {self.friction}")
        unknown = set(self.limits) - set(LIMITS)
        if unknown:
            raise ValueError(f"unknown limits {sorted(unknown)}; expected a subset of {LIMITS}")

    @property
    def K(self) -> int:
        """The number of stages (knots ``0 .. K``)."""
        return len(self.stages)

    @property
    def nu(self) -> int:
        return self.model.nv - 6 if self.model.has_free_flyer else self.model.nv

    @property
    def ntau(self) -> int:
        """The size of the torque state: ``nu`` with a torque filter, else 0."""
        return 0 if self.torque_filter is None else self.nu

    @property
    def nx(self) -> int:
        """The size of the state's tangent ``(dq, dv, dtau)``."""
        return 2 * self.model.nv + self.ntau

    def filter_gain(self, dt):
        """``g = exp(-2 pi f_c dt)`` of the torque filter over time steps ``dt`` (module docstring)."""
        return np.exp(-2 * np.pi * self.torque_filter * np.asarray(dt, dtype=float))

    def retimed(self, dt) -> OCP:
        """This problem with its first stage, a contact stage, ``dt`` seconds long (``dt > 0``):
        its other fields and stages are this one's, checked as they were (not again)."""
        first = self.stages[0]
        if first.kind != "contact" or not (math.isfinite(dt) and dt > 0):
            message = f"a first contact stage is retimed to a time step > 0, not a first {first.kind} stage to {dt!r}"
            raise ValueError(message)
        stage = dataclasses.replace(first, dt=dt)
        object.__setattr__(stage, "_checked", first.__dict__.get("_checked"))
        new = object.__new__(OCP)
        new.__dict__.update({name: self.__dict__[name] for name in _OCP_FIELDS}, stages=(stage, *self.stages[1:]))
        return new

    def times(self) -> np.ndarray:
        """The time of each knot (an impulse stage takes no time); read-only, made once."""
        return self._times

    @functools.cached_property
    def _times(self) -> np.ndarray:
        times = knot_times([s.dt if s.kind == "contact" else 0.0 for s in self.stages])
        times.flags.writeable = False
        return times

    @classmethod
    def of_groups(cls, groups, **fields) -> OCP:
        """The OCP of ``fields`` (those of the constructor but ``stages``) whose stages are those
        of ``groups``, :class:`StageGroup` s whose knot indices partition ``0 .. K-1``, kept as its
        :meth:`groups`: a builder that makes its stages group by group, alike by construction,
        spares the OCP finding each stage's key (:meth:`StageGroup.of_stacked`). The groups must
        be those :meth:`groups` would find: one per key."""
        groups = tuple(sorted(groups, key=lambda g: int(g.index[0])))
        index = np.concatenate([g.index for g in groups])
        if not np.array_equal(np.sort(index), np.arange(len(index))) or len({id(g.key) for g in groups}) < len(groups):
            raise ValueError("the groups' knot indices must partition the stages, one group per key")
        stages = [None] * len(index)
        for group in groups:
            for k, stage in zip(group.index.tolist(), group.stages):
                stages[k] = stage
        ocp = cls(stages=tuple(stages), **fields)
        object.__setattr__(ocp, "_groups", groups)  # not a field: a copy made by replace finds its own
        return ocp

    def groups(self) -> tuple:
        """The stages grouped for batched evaluation (module docstring), in first-stage order."""
        kept = self.__dict__.get("_groups")
        if kept is not None:
            return kept
        known: dict = {}  # the keys of the contact tuples and cost terms met, by identity (stages share them)
        keys = [stage.__dict__.get("_key") or _stage_key(stage, known) for stage in self.stages]  # kept: no call
        if keys.count(keys[0]) == len(keys):  # one structure (a manipulator's horizon): one group
            return (StageGroup(self.stages, np.arange(len(keys)), keys[0]),)
        by_key: dict = {}  # by the identity of the key (interned: one object per key)
        for k, key in enumerate(keys):
            by_key.setdefault(id(key), (key, []))[1].append(k)
        return tuple(_group(self.stages, index, key) for key, index in by_key.values())

    def stage_groups(self) -> tuple:
        """Each stage as a group of its own, in time order (for stage-by-stage rollouts)."""
        return tuple(_group(self.stages, [k], _stage_key(s, {})) for k, s in enumerate(self.stages))

    def terminal(self) -> CostSum:
        return CostSum(tuple(_stack_term([t]) for t in self.terminal_costs))


_OCP_FIELDS = tuple(f.name for f in dataclasses.fields(OCP))


def knot_times(dts) -> np.ndarray:
    """The time of each knot of stages of time steps ``dts`` (a list; 0 for an impulse stage),
    from 0: their sums in order (:meth:`OCP.times`)."""
    return np.fromiter(itertools.accumulate(dts, initial=0.0), float, len(dts) + 1)


@dataclass(frozen=True)
class StageGroup:
    """The ``stages`` at knot indices ``index`` (increasing), of one kind with the same contacts
    and cost terms (``key``, :func:`_stage_key`: groups of one key have one structure). Their
    data stacked along a leading axis are made on first read: the contacts with stacked targets,
    the stacked cost, the time steps ``dt (S,)`` and the stacked sliding friction. What they
    share is read from the first stage: its ``kind``, its ``soft`` contacts and its
    ``contact_set``. ``stacked``: its builder gave the stacked costs (:meth:`of_stacked`)."""

    stages: tuple
    index: np.ndarray
    key: tuple
    stacked: bool = False

    @classmethod
    def of_stacked(cls, stages, index, costs: tuple, key=None, contacts=None) -> StageGroup:
        """The group of ``stages`` at the knot indices ``index`` (increasing) that their builder
        made alike and group by group: ``costs``, their cost terms stacked (one term per slot, as
        :attr:`costs` would stack them; each stage's terms their rows, :class:`TermRows`), and
        ``key``, theirs if the builder knows it (default: the first stage's); ``contacts``, their
        contacts with the targets stacked, as :attr:`contacts` would stack them, if the builder
        has them (default: stacked from the stages on first read). ``stacked``: a backend writes
        the group's inputs from these terms, not from each stage's."""
        key = _stage_key(stages[0], {}) if key is None else key
        group = cls(tuple(stages), np.asarray(index), key, stacked=True)
        group.__dict__["costs"] = CostSum(tuple(costs))  # the cached properties' values
        if contacts is not None:
            group.__dict__["contacts"] = tuple(contacts)
        return group

    @property
    def size(self) -> int:
        return len(self.index)

    @property
    def kind(self) -> str:
        return self.stages[0].kind

    @property
    def soft(self) -> tuple:
        return self.stages[0].soft

    @property
    def contact_set(self) -> tuple:
        """The first stage's contacts: the frames, kinds and gains of every stage's (their
        targets are each stage's own, :attr:`contacts`)."""
        return self.stages[0].contacts

    @functools.cached_property
    def rows(self):
        """The knots of the stages: a slice when they follow each other (the iterate's rows read
        as a view), else :attr:`index`."""
        first, last = int(self.index[0]), int(self.index[-1])
        return slice(first, last + 1) if last - first + 1 == len(self.index) else self.index

    @functools.cached_property
    def next_rows(self):
        """The knots that end the stages (:attr:`rows` plus one)."""
        rows = self.rows
        return slice(rows.start + 1, rows.stop + 1) if isinstance(rows, slice) else rows + 1

    @functools.cached_property
    def contacts(self) -> tuple:
        members = self.stages
        return tuple(_stack_contact([m.contacts[i] for m in members]) for i in range(len(members[0].contacts)))

    @functools.cached_property
    def costs(self) -> CostSum:
        members = self.stages
        return CostSum(tuple(_stack_term([m.costs[i] for m in members]) for i in range(len(members[0].costs))))

    @functools.cached_property
    def dt(self) -> np.ndarray | None:
        return np.array([m.dt for m in self.stages]) if self.kind == "contact" else None

    @functools.cached_property
    def sliding(self) -> tuple:
        members = self.stages
        return tuple(
            _stacked(
                s,
                mu=np.array([float(m.sliding[i].mu) for m in members]),
                direction=np.array([m.sliding[i].direction for m in members]),
            )
            for i, s in enumerate(members[0].sliding)
        )

    def subset(self, positions) -> StageGroup:
        """The group of its stages at ``positions`` (indices into :attr:`stages`)."""
        return StageGroup(tuple(self.stages[i] for i in positions), self.index[positions], self.key)

    def after(self, stage) -> StageGroup:
        """``stage`` alone, as the group of the knot after this group's last; ``ValueError`` for a
        stage of another key (kind, contacts, cost terms, sliding or soft contacts)."""
        if _stage_key(stage, {}) is not self.key:
            raise ValueError("the stage's kind, contacts or cost terms are not those of the group's stages")
        return StageGroup((stage,), self.index[-1:] + 1, self.key)


@dataclass(frozen=True)
class GroupNumbers:
    """The numbers of the stages of a group without the stages: their cost terms stacked
    ``costs`` (as :attr:`StageGroup.costs` stacks them), their contacts with the targets stacked
    ``contacts`` (:attr:`StageGroup.contacts`), their time steps ``dt (S,)`` (contact stages; None
    for impulse stages) and their sliding friction stacked ``sliding``
    (:attr:`StageGroup.sliding`): what changes between two OCPs of one structure, the stages of
    each group alike (an MPC's horizons moved within their first stage)."""

    costs: tuple
    contacts: tuple
    dt: np.ndarray | None
    sliding: tuple = ()


def _vector(x, n, name):
    x = np.asarray(x, dtype=float)
    if x.shape != (n,):
        raise dynamics.DimensionError(f"{name} must have shape ({n},), got {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} must be finite")
    return x


def _stage_key(stage, known: dict) -> tuple:
    """What stages must share to be evaluated together: their kind, contacts (gains and whether
    they have targets), cost terms, sliding contacts and soft contacts. ``known``: the keys of
    contact tuples and terms already computed, by ``id`` (alive as long as the stages are). A
    stage keeps its key (a function of its immutable fields): a builder that hands the same
    stage to several OCPs (an MPC's overlapping horizons) has it computed once. Equal keys are
    one object (:data:`_KEYS`): stages are grouped by its identity, without hashing it."""
    key = stage.__dict__.get("_key")
    if key is None:
        key = _new_stage_key(stage, known)
        key = _KEYS.setdefault(key, key)
        object.__setattr__(stage, "_key", key)
    return key


_KEYS: dict = {}  # every stage key met, interned (as many as the structures of the stages)


def _new_stage_key(stage, known: dict) -> tuple:
    contacts = known.get(id(stage.contacts))
    if contacts is None:
        contacts = known[id(stage.contacts)] = tuple(map(_contact_key, stage.contacts))
    terms = []
    for term in stage.costs:
        key = known.get(id(term))
        if key is None:
            key = known[id(term)] = term_key(term)
        terms.append(key)
    return (stage.kind, contacts, tuple(terms), tuple(s.contact for s in stage.sliding), stage.soft)


def _contact_key(c):
    return (c.frame, c.kind, c.reference, c.kp, c.kd, c.frame2, c.placement is None, c.rotation_key)


def term_key(term):
    """A term's type and its text fields (frame, variable, name): what makes two cost terms of
    different stages the same term."""
    return _key_of(type(term))(term)


@functools.cache
def _text_fields(cls) -> tuple:
    """The fields of the cost-term dataclass ``cls`` declared ``str``; the others are arrays."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.type in ("str", str))


@functools.cache
def _key_of(cls):
    """A function of an instance of ``cls`` giving its :func:`term_key`: the class's name, then
    its text fields' values."""
    name, names = cls.__name__, _text_fields(cls)
    if not names:
        return lambda obj: (name,)
    get = operator.attrgetter(*names)
    return (lambda obj: (name,) + get(obj)) if len(names) > 1 else (lambda obj: (name, get(obj)))


@functools.cache
def _array_fields(cls) -> tuple:
    return tuple(f.name for f in dataclasses.fields(cls) if f.name not in _text_fields(cls))


def _stacked(first, **fields):
    """A copy of the frozen dataclass ``first`` with ``fields`` replaced by the stacks of its
    stages' values, not checked again: each stage's was checked when it was made."""
    out = object.__new__(type(first))
    out.__dict__.update(first.__dict__, **fields)
    return out


def _shared(obj, n, stack):
    """``stack(obj, n)``: the stack of ``obj``, a contact that ``n`` stages share, made once per
    ``n`` while ``obj`` lives (its arrays read-only, :func:`_repeat`): the horizons of an MPC
    share their contacts, and the compiled backend reads their stacked targets at every update.
    Kept by identity in :data:`_STACKS`, not on ``obj``, whose copies and pickles stay its own
    fields."""
    key = id(obj)
    kept = _STACKS.get(key)
    if kept is None or kept[0]() is not obj:
        kept = _STACKS[key] = (weakref.ref(obj, lambda _, key=key: _STACKS.pop(key, None)), {})
    stacks = kept[1]
    if n not in stacks:
        stacks[n] = stack(obj, n)
    return stacks[n]


_STACKS: dict = {}  # id(contact) -> (a weak reference to it, {n: its stack over n stages})


def _stack_term(terms):
    """One term with its array fields stacked over its stages (one term per stage, a leading axis)."""
    first, fields = terms[0], _array_fields(type(terms[0]))
    if all(t is first for t in terms):  # a term every stage shares: its arrays repeated
        return _stacked(first, **{name: _repeat(getattr(first, name), len(terms)) for name in fields})
    return _stacked(first, **{name: stage_stack([getattr(t, name) for t in terms]) for name in fields})


class TermRows(collections.abc.Sequence):
    """The cost terms of one stage of a group whose builder stacked them: row ``r`` of the
    stacked ``terms`` (:func:`_stack_term`), a stage's ``costs``. The terms are made when first
    read, their array fields views of the stacks' rows: a backend that writes the group's inputs
    from the stacked terms (:attr:`StageGroup.stacked`) never makes them. Compares, adds and
    pickles as the tuple of its terms."""

    def __init__(self, terms, r):
        self._stacks, self._r, self._terms = terms, r, None

    def _made(self) -> tuple:
        if self._terms is None:
            r = self._r
            self._terms = tuple(
                _stacked(t, **{name: getattr(t, name)[r] for name in _array_fields(type(t))}) for t in self._stacks
            )
        return self._terms

    def __getitem__(self, i):
        return self._made()[i]

    def __len__(self) -> int:
        return len(self._stacks)

    def __iter__(self):
        return iter(self._made())

    def __eq__(self, other):
        return isinstance(other, (tuple, TermRows)) and self._made() == tuple(other)

    def __add__(self, other):
        return self._made() + tuple(other)

    def __radd__(self, other):
        return tuple(other) + self._made()

    def __repr__(self):
        return repr(self._made())

    def __reduce__(self):
        return tuple, (self._made(),)


def _repeat(value, n) -> np.ndarray:
    """``value`` (made at least 1D) repeated along a new leading axis of ``n``: :func:`stage_stack`
    of ``n`` copies, read-only (a shared contact's is kept for every problem, :func:`_shared`)."""
    out = np.repeat(np.atleast_1d(np.asarray(value, dtype=float))[None], n, axis=0)
    out.flags.writeable = False
    return out


def stage_stack(values) -> np.ndarray:
    """``values`` (one per stage, each made at least 1D) stacked along a new leading axis; those
    of another shape than the first's broadcast to it."""
    try:
        stacked = np.array(values, dtype=float)  # one call when the shapes agree (the usual case)
    except ValueError:  # shapes differ
        arrays = [np.atleast_1d(np.asarray(x, dtype=float)) for x in values]
        return np.stack([np.broadcast_to(a, arrays[0].shape) for a in arrays])
    return stacked.reshape(len(values), 1) if stacked.ndim == 1 else stacked


def _stack_contact(contacts):
    """One contact with its Baumgarte target stacked over its stages (as :func:`_stack_term`)."""
    first = contacts[0]
    if first.placement is None:
        return first
    if len(contacts) > 1 and all(c is first for c in contacts):
        return _shared(first, len(contacts), _repeated_contact)
    if isinstance(first.placement, tuple):
        R = np.array([c.placement[0] for c in contacts], dtype=float)
        p = np.array([c.placement[1] for c in contacts], dtype=float)
        return _stacked(first, placement=(R, p))
    return _stacked(first, placement=np.array([c.placement for c in contacts], dtype=float))


def _repeated_contact(contact, n):
    if isinstance(contact.placement, tuple):
        return _stacked(contact, placement=tuple(_repeat(x, n) for x in contact.placement))
    return _stacked(contact, placement=_repeat(contact.placement, n))


def _group(stages, index, key):
    """The :class:`StageGroup` of the ``stages`` at the knot indices ``index`` (a list), which
    share ``key``."""
    return StageGroup(tuple(map(stages.__getitem__, index)), np.array(index), key)
