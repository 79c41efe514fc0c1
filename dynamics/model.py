"""The immutable robot model: kinematic tree, inertias, frames, limits.

Joints are numbered as Pinocchio numbers them for the same URDF, without the universe:
joint ``i`` has parent ``parents[i]`` (``-1`` for the universe), configuration slice
``q[idx_q[i]: idx_q[i] + nqs[i]]`` and velocity slice ``v[idx_v[i]: idx_v[i] + nvs[i]]``.
Each joint carries one rigid body: the link after it merged with every link attached to it
through fixed (or locked) joints. ``Tree`` holds the index tables the algorithms use to
work on all joints at once instead of looping over them.
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass, replace

import numpy as np

from .errors import ModelError, UnknownNameError
from .spatial import rigid_from_com, rigid_to_com, rotation_about
from .urdf import Urdf

FREE_FLYER, REVOLUTE, CONTINUOUS, PRISMATIC = "free_flyer", "revolute", "continuous", "prismatic"
JOINT_NQ = {FREE_FLYER: 7, REVOLUTE: 1, CONTINUOUS: 2, PRISMATIC: 1}
JOINT_NV = {FREE_FLYER: 6, REVOLUTE: 1, CONTINUOUS: 1, PRISMATIC: 1}
FREE_FLYER_TRANSLATION_LIMIT = 1.0  # bounds of random base positions, as example-robot-data sets them


def _frozen(array, dtype=float):
    out = np.array(array, dtype=dtype)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class Tree:
    """Index tables of the kinematic tree (joint ``i``, degree of freedom ``k``).

    ``support[i, k] = 1`` when dof ``k`` moves body ``i`` (its joint is ``i`` or an ancestor);
    ``descendants[j, i] = 1`` when body ``i`` is in the subtree of joint ``j``;
    ``owner[i, k] = 1`` when dof ``k`` belongs to joint ``i``. Masks over (dof ``l``, dof ``k``):
    ``lower`` when ``k`` moves the body of ``l`` (the sparsity of the lower triangle of M),
    ``below`` when ``l`` moves the body of ``k`` and the two belong to different joints.
    """

    levels: tuple  # joints grouped by depth, root level first
    dof_joint: np.ndarray
    dof_parent: np.ndarray  # parent joint of the joint of each dof (-1: universe)
    support: np.ndarray
    descendants: np.ndarray
    owner: np.ndarray
    lower: np.ndarray
    below: np.ndarray
    motion_subspace: np.ndarray  # (6, nv, 1) joint motion subspace columns, in the joint frame
    mass_lower: np.ndarray  # lower triangle of ``lower`` (float), the entries CRBA computes
    mass_strict: np.ndarray  # the same without the diagonal
    dof_descendants: np.ndarray  # (nv, n): ``descendants`` at the joint of each dof
    # placement of each joint in its parent at angle t: R0 + sin(t) R0 [a]x + (1 - cos(t)) R0 [a]x^2
    placement_sin: np.ndarray  # (3, 3, n, 1) R0 [a]x
    placement_cos: np.ndarray  # (3, 3, n, 1) R0 [a]x^2
    # joints (and their first configuration index) grouped by type
    revolute: np.ndarray
    revolute_q: np.ndarray
    continuous: np.ndarray
    continuous_q: np.ndarray
    prismatic: np.ndarray
    prismatic_q: np.ndarray
    free_flyer: bool  # joint 0 is a free flyer (the only multi-dof joint liftoff supports)


def _tree(parents, nvs, types, idx_q, axis, R0) -> Tree:
    n = len(parents)
    depth = np.zeros(n, dtype=int)
    for i in range(n):
        depth[i] = 0 if parents[i] < 0 else depth[parents[i]] + 1
    levels = tuple(_frozen(np.flatnonzero(depth == d), int) for d in range(depth.max() + 1)) if n else ()
    dof_joint = np.repeat(np.arange(n), nvs)
    ancestors = np.eye(n, dtype=bool)  # ancestors[i, j]: j is i or an ancestor of i
    for i in range(n):
        if parents[i] >= 0:
            ancestors[i] |= ancestors[parents[i]]
    support = ancestors[:, dof_joint]
    lower = support[dof_joint]
    S = np.zeros((len(dof_joint), 6))
    for i, t in enumerate(types):
        k = int(np.flatnonzero(dof_joint == i)[0])
        if t == FREE_FLYER:
            S[k : k + 6] = np.eye(6)
        elif t == PRISMATIC:
            S[k, :3] = axis[i]
        else:
            S[k, 3:] = axis[i]

    K = np.array([[[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]] for a in axis]).reshape(n, 3, 3)
    R0K = R0 @ K

    def group(kind, q=False):
        return _frozen([idx_q[i] if q else i for i, t in enumerate(types) if t == kind], int)

    return Tree(
        levels=levels,
        dof_joint=_frozen(dof_joint, int),
        dof_parent=_frozen(np.asarray(parents, int)[dof_joint], int),
        support=_frozen(support),
        descendants=_frozen(ancestors.T),
        owner=_frozen(dof_joint[None, :] == np.arange(n)[:, None]),
        lower=_frozen(lower, bool),
        below=_frozen(lower.T & (dof_joint[:, None] != dof_joint[None, :]), bool),
        motion_subspace=_frozen(S.T[..., None]),
        mass_lower=_frozen(np.tril(lower)),
        mass_strict=_frozen(np.tril(lower, -1)),
        dof_descendants=_frozen(ancestors.T[dof_joint]),
        placement_sin=_frozen(R0K.transpose(1, 2, 0)[..., None]),
        placement_cos=_frozen((R0K @ K).transpose(1, 2, 0)[..., None]),
        revolute=group(REVOLUTE),
        revolute_q=group(REVOLUTE, True),
        continuous=group(CONTINUOUS),
        continuous_q=group(CONTINUOUS, True),
        prismatic=group(PRISMATIC),
        prismatic_q=group(PRISMATIC, True),
        free_flyer=bool(types) and types[0] == FREE_FLYER,
    )


@dataclass(frozen=True, eq=False)
class Model:
    """A rigid multibody system. Build it with :func:`dynamics.load`.

    Per joint: ``joint_rotation, joint_translation`` place the joint frame in its parent's
    frame (at zero motion); ``axis`` is the axis of 1-dof joints; the body inertia is
    ``body_mass``, ``body_com`` and ``body_inertia`` (about the centre of mass) in the joint
    frame. Per frame: parent joint ``frame_parent`` (``-1``: universe) and placement
    ``frame_rotation, frame_translation`` in that joint's frame. Per degree of freedom: the
    URDF's limits, and its ``<dynamics>``: viscous ``damping`` [N m s/rad] and Coulomb
    ``friction`` [N m] (zero for a free flyer; see :mod:`dynamics.joint_friction`).
    """

    name: str
    nq: int
    nv: int
    joint_names: tuple
    joint_types: tuple
    parents: np.ndarray
    idx_q: np.ndarray
    idx_v: np.ndarray
    nqs: np.ndarray
    nvs: np.ndarray
    joint_rotation: np.ndarray
    joint_translation: np.ndarray
    axis: np.ndarray
    body_mass: np.ndarray
    body_com: np.ndarray
    body_inertia: np.ndarray
    frame_names: tuple
    frame_types: tuple
    frame_parent: np.ndarray
    frame_rotation: np.ndarray
    frame_translation: np.ndarray
    lower_position_limit: np.ndarray
    upper_position_limit: np.ndarray
    velocity_limit: np.ndarray
    effort_limit: np.ndarray
    gravity: np.ndarray
    tree: Tree
    damping: np.ndarray | None = None
    friction: np.ndarray | None = None

    def __post_init__(self):
        for name in ("damping", "friction"):
            if getattr(self, name) is None:
                object.__setattr__(self, name, _frozen(np.zeros(self.nv)))

    @property
    def njoints(self) -> int:
        return len(self.joint_names)

    @property
    def nframes(self) -> int:
        return len(self.frame_names)

    @property
    def mass(self) -> float:
        return float(self.body_mass.sum())

    @property
    def has_free_flyer(self) -> bool:
        return self.njoints > 0 and self.joint_types[0] == FREE_FLYER

    def frame_id(self, name: str) -> int:
        """Index of the frame called ``name`` (the first one, if several share it)."""
        index = self._frame_index.get(name) if type(name) is str else None
        return _lookup(name, self.frame_names, "frame", self.name) if index is None else index

    def joint_id(self, name: str) -> int:
        index = self._joint_index.get(name) if type(name) is str else None
        return _lookup(name, self.joint_names, "joint", self.name) if index is None else index

    @functools.cached_property
    def _frame_index(self) -> dict:
        """The index of each frame name (its first frame): :meth:`frame_id` in one lookup."""
        return _first_indices(self.frame_names)

    @functools.cached_property
    def _joint_index(self) -> dict:
        return _first_indices(self.joint_names)

    def __repr__(self):
        return f"Model({self.name!r}, nq={self.nq}, nv={self.nv}, njoints={self.njoints}, nframes={self.nframes})"


def add_frame(model: Model, name: str, parent: str, rotation=None, translation=None) -> Model:
    """``model`` with one more frame ``name`` (an operational frame, Pinocchio's ``addFrame``)
    rigidly attached to the frame ``parent`` at ``(rotation, translation)`` in that frame:
    a tool tip, a sensor, a contact point. The model is not modified."""
    if name in model.frame_names:
        raise ModelError(f"model {model.name!r} already has a frame {name!r}")
    f = model.frame_id(parent)
    R = np.eye(3) if rotation is None else np.asarray(rotation, dtype=float)
    p = np.zeros(3) if translation is None else np.asarray(translation, dtype=float)
    if R.shape != (3, 3) or p.shape != (3,) or not (np.all(np.isfinite(R)) and np.all(np.isfinite(p))):
        raise ModelError(f"frame {name!r}: expected a finite rotation (3, 3) and translation (3,)")
    if not np.allclose(R.T @ R, np.eye(3), atol=1e-9) or np.linalg.det(R) < 0:
        raise ModelError(f"frame {name!r}: the rotation is not a rotation matrix")
    Rf, pf = model.frame_rotation[f], model.frame_translation[f]
    return replace(
        model,
        frame_names=model.frame_names + (name,),
        frame_types=model.frame_types + ("op_frame",),
        frame_parent=_frozen(np.append(model.frame_parent, model.frame_parent[f]), int),
        frame_rotation=_frozen(np.concatenate((model.frame_rotation, (Rf @ R)[None]))),
        frame_translation=_frozen(np.concatenate((model.frame_translation, (Rf @ p + pf)[None]))),
    )


def _first_indices(names) -> dict:
    """``{name: index}`` of the first of ``names`` of each name."""
    out: dict = {}
    for i, name in enumerate(names):
        out.setdefault(name, i)
    return out


def _lookup(name, names, what, model_name) -> int:
    if isinstance(name, (int, np.integer)):
        if not 0 <= name < len(names):
            raise UnknownNameError(f"{what} index {name} out of range [0, {len(names)}) in model {model_name!r}")
        return int(name)
    try:
        return names.index(name)
    except ValueError:
        close = close_names(str(name), names)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownNameError(f"unknown {what} {name!r} in model {model_name!r}{hint}") from None


def close_names(name: str, names, n=5) -> list:
    """The ``names`` closest to ``name``, best first: spelled alike, or alike once the letters
    of each ``_``-separated part are sorted (``LF_FOOT`` and ``FL_FOOT``, two robots' orders
    of the same abbreviation)."""

    def shuffled(x):
        return "_".join("".join(sorted(part)) for part in x.split("_"))

    def score(candidate):
        return max(
            difflib.SequenceMatcher(None, name, candidate).ratio(),
            difflib.SequenceMatcher(None, shuffled(name), shuffled(candidate)).ratio(),
        )

    scored = sorted(((score(c), i, c) for i, c in enumerate(names)), key=lambda t: (-t[0], t[1]))
    return [c for s, _, c in scored[:n] if s >= 0.6]


class _Builder:
    """Depth-first walk of a URDF tree in Pinocchio's order, merging fixed and locked joints."""

    def __init__(self, urdf: Urdf, floating_base: bool, locked: dict):
        self.urdf = urdf
        self.locked = locked
        self.joints = []  # dicts with name, type, parent, R, p, axis, limits
        self.inertias = []  # 6x6 spatial inertia per joint, in the joint frame
        self.frames = [("universe", "fixed_joint", -1, np.eye(3), np.zeros(3))]
        if floating_base:
            self._add_joint("root_joint", FREE_FLYER, -1, np.eye(3), np.zeros(3), np.zeros(3), None)
        parent = 0 if floating_base else -1
        self._visit(urdf.root, parent, np.eye(3), np.zeros(3))

    def _add_joint(self, name, kind, parent, R, p, axis, urdf_joint):
        self.joints.append(dict(name=name, type=kind, parent=parent, R=R, p=p, axis=axis, urdf=urdf_joint))
        self.inertias.append((0.0, np.zeros(3), np.zeros((3, 3))))
        self.frames.append((name, "joint", len(self.joints) - 1, np.eye(3), np.zeros(3)))

    def _add_body(self, link_name, joint, R, p):
        self.frames.append((link_name, "body", joint, R, p))
        link = self.urdf.links[link_name]
        if joint >= 0 and link.mass > 0:
            added = rigid_from_com(link.mass, R @ link.com + p, R @ link.inertia @ R.T)
            self.inertias[joint] = tuple(x + y for x, y in zip(self.inertias[joint], added))

    def _visit(self, link_name, joint, R, p):
        """Add ``link_name``, placed at ``(R, p)`` in the frame of ``joint``, and its subtree."""
        self._add_body(link_name, joint, R, p)
        for jname in self.urdf.children[link_name]:
            uj = self.urdf.joints[jname]
            Rj, pj = R @ uj.rotation, R @ uj.translation + p
            if uj.type == "fixed" or jname in self.locked:
                if jname in self.locked:
                    Rm, pm = _joint_motion(uj, self.locked[jname])
                    Rj, pj = Rj @ Rm, Rj @ pm + pj
                self.frames.append((jname, "fixed_joint", joint, Rj, pj))
                self._visit(uj.child, joint, Rj, pj)
            else:
                self._add_joint(jname, uj.type, joint, Rj, pj, uj.axis, uj)
                self._visit(uj.child, len(self.joints) - 1, np.eye(3), np.zeros(3))


def _joint_motion(uj, value):
    """Placement of a 1-dof URDF joint moved to ``value`` (used to lock it)."""
    if uj.type == "prismatic":
        return np.eye(3), uj.axis * value
    return rotation_about(uj.axis, np.cos(value), np.sin(value)), np.zeros(3)


def build_model(urdf: Urdf, floating_base: bool, locked_joints=None, name=None) -> Model:
    """Model of ``urdf`` with a free-flyer root if ``floating_base``, some joints locked.

    ``locked_joints`` maps joint names to the position they are locked at (a list of
    names locks them at zero).
    """
    locked = _locked_positions(urdf, locked_joints)
    b = _Builder(urdf, floating_base, locked)
    n = len(b.joints)
    types = [j["type"] for j in b.joints]
    nqs = np.array([JOINT_NQ[t] for t in types], dtype=int)
    nvs = np.array([JOINT_NV[t] for t in types], dtype=int)
    parents = np.array([j["parent"] for j in b.joints], dtype=int)
    lower, upper, velocity, effort, damping, friction = [], [], [], [], [], []
    for j in b.joints:
        uj = j["urdf"]
        if j["type"] == FREE_FLYER:
            t = FREE_FLYER_TRANSLATION_LIMIT
            lower += [-t] * 3 + [-1.0] * 4
            upper += [t] * 3 + [1.0] * 4
            velocity += [np.inf] * 6
            effort += [np.inf] * 6
            damping += [0.0] * 6
            friction += [0.0] * 6
            continue
        damping.append(uj.damping)
        friction.append(uj.friction)
        if j["type"] == CONTINUOUS:
            lower += [-1.0, -1.0]
            upper += [1.0, 1.0]
            velocity.append(uj.velocity)
            effort.append(uj.effort)
        else:
            lower.append(uj.lower)
            upper.append(uj.upper)
            velocity.append(uj.velocity)
            effort.append(uj.effort)
    idx_q = np.concatenate(([0], np.cumsum(nqs)[:-1])) if n else np.zeros(0, int)
    idx_v = np.concatenate(([0], np.cumsum(nvs)[:-1])) if n else np.zeros(0, int)
    mass = np.array([m for m, _, _ in b.inertias])
    mc = np.array([x for _, x, _ in b.inertias]).reshape(n, 3).T
    Io = np.array([x for _, _, x in b.inertias]).reshape(n, 3, 3).transpose(1, 2, 0)
    mass, com, inertia = rigid_to_com(mass, mc, Io)
    com, inertia = com.T, inertia.transpose(2, 0, 1)
    frames = b.frames
    return Model(
        name=name or urdf.name,
        nq=int(nqs.sum()),
        nv=int(nvs.sum()),
        joint_names=tuple(j["name"] for j in b.joints),
        joint_types=tuple(types),
        parents=_frozen(parents, int),
        idx_q=_frozen(idx_q, int),
        idx_v=_frozen(idx_v, int),
        nqs=_frozen(nqs, int),
        nvs=_frozen(nvs, int),
        joint_rotation=_frozen(np.array([j["R"] for j in b.joints]).reshape(n, 3, 3)),
        joint_translation=_frozen(np.array([j["p"] for j in b.joints]).reshape(n, 3)),
        axis=_frozen(np.array([j["axis"] for j in b.joints]).reshape(n, 3)),
        body_mass=_frozen(mass),
        body_com=_frozen(com),
        body_inertia=_frozen(inertia),
        frame_names=tuple(f[0] for f in frames),
        frame_types=tuple(f[1] for f in frames),
        frame_parent=_frozen([f[2] for f in frames], int),
        frame_rotation=_frozen(np.array([f[3] for f in frames])),
        frame_translation=_frozen(np.array([f[4] for f in frames])),
        lower_position_limit=_frozen(lower),
        upper_position_limit=_frozen(upper),
        velocity_limit=_frozen(velocity),
        effort_limit=_frozen(effort),
        gravity=_frozen([0.0, 0.0, -9.81]),
        damping=_frozen(damping),
        friction=_frozen(friction),
        tree=_tree(
            parents,
            nvs,
            types,
            idx_q,
            np.array([j["axis"] for j in b.joints]).reshape(n, 3),
            np.array([j["R"] for j in b.joints]).reshape(n, 3, 3),
        ),
    )


def _locked_positions(urdf: Urdf, locked_joints) -> dict:
    if locked_joints is None:
        return {}
    if not isinstance(locked_joints, dict):
        locked_joints = {name: 0.0 for name in locked_joints}
    movable = sorted(n for n, j in urdf.joints.items() if j.type != "fixed")
    out = {}
    for name, value in locked_joints.items():
        if name not in movable:
            close = difflib.get_close_matches(str(name), movable, n=5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UnknownNameError(f"cannot lock unknown joint {name!r} of {urdf.name!r}{hint}")
        try:
            out[name] = float(value)
        except (TypeError, ValueError):
            raise ModelError(f"locked joint {name!r}: expected one number, got {value!r}") from None
    return out
