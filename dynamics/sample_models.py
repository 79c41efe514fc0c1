"""Mechanisms built in code: serial chains, balanced binary trees, a four-bar linkage.

They are the test and benchmark mechanisms of seed 003 (Sec. VII, Fig. 3) and seed 000
(Sec. V, the four-bar loop closure). Each is written as URDF text (``*_urdf`` functions,
so that Pinocchio can load exactly the same mechanism with ``pin.buildModelFromXML``) and
loaded with :func:`dynamics.load_urdf_string`. Everything is deterministic: the same
arguments give the same text, byte for byte.

Links are slender boxes of about 1 kg, 0.2 m long along their local z axis (x axis for the
four-bar), their centre of mass offset from the joint, their rotational inertia the box's
turned by a small fixed rotation (so that it has products of inertia; positive definite
and satisfying the triangle inequality by construction).
"""

from __future__ import annotations

import math

import numpy as np

from .errors import ModelError
from .kinematics import frame_jacobian, frame_placement
from .model import Model
from .robots import load_urdf_string
from .spatial import rpy_to_rotation

LINK_LENGTH = 0.2  # m, chains and trees
# Joint axes of chains and trees, cycled: aligned and unaligned, so that no two
# consecutive joints are parallel (a 6D end-effector constraint on a chain of >= 6 links
# has full rank at generic configurations).
AXES = ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.6, 0.8), (0.8, 0.0, 0.6))
REVOLUTE_LIMIT = math.pi  # position limits +-pi: random configurations cover the circle
EFFORT_LIMIT, VELOCITY_LIMIT = 100.0, 10.0


# ----------------------------------------------------------------------------- URDF pieces


def _num(x: float) -> str:
    """A float written so that parsing it gives back exactly ``x``."""
    x = float(x)
    return "0" if x == 0.0 else repr(x)


def _vec(xs) -> str:
    return " ".join(_num(x) for x in xs)


def _box_inertia(mass, size, rpy):
    """Rotational inertia of a box of ``size`` (3,) about its centre, turned by ``rpy``."""
    a, b, c = np.square(size)
    principal = np.diag([b + c, a + c, a + b]) * mass / 12.0  # triangle inequality holds
    R = rpy_to_rotation(np.asarray(rpy, dtype=float))
    return R @ principal @ R.T


def _link(name, k, length, along=2) -> str:
    """The ``k``-th link (deterministic variations in k): mass ~1 kg, com along the link."""
    mass = 0.8 + 0.1 * (k % 5)  # 0.8 .. 1.2 kg
    size = [0.04 + 0.005 * (k % 3), 0.05, 0.04]
    size[along] = length
    com = [0.01 * ((k % 3) - 1), -0.005 * ((k % 2) * 2 - 1), 0.0]
    com[along] = (0.45 + 0.05 * (k % 3)) * length
    I = _box_inertia(mass, size, (0.1 * (k % 4), -0.05 * (k % 3), 0.07))
    return (
        f'  <link name="{name}">\n'
        f'    <inertial><origin xyz="{_vec(com)}" rpy="0 0 0"/><mass value="{_num(mass)}"/>\n'
        f'      <inertia ixx="{_num(I[0, 0])}" ixy="{_num(I[0, 1])}" ixz="{_num(I[0, 2])}" '
        f'iyy="{_num(I[1, 1])}" iyz="{_num(I[1, 2])}" izz="{_num(I[2, 2])}"/></inertial>\n'
        f"  </link>\n"
    )


def _frame_link(name) -> str:
    """A massless link: a frame, attached by a fixed joint."""
    return f'  <link name="{name}"/>\n'


def _revolute(name, parent, child, xyz, rpy, axis) -> str:
    return (
        f'  <joint name="{name}" type="revolute">\n'
        f'    <parent link="{parent}"/><child link="{child}"/>\n'
        f'    <origin xyz="{_vec(xyz)}" rpy="{_vec(rpy)}"/><axis xyz="{_vec(axis)}"/>\n'
        f'    <limit lower="{_num(-REVOLUTE_LIMIT)}" upper="{_num(REVOLUTE_LIMIT)}" '
        f'effort="{_num(EFFORT_LIMIT)}" velocity="{_num(VELOCITY_LIMIT)}"/>\n'
        f"  </joint>\n"
    )


def _fixed(name, parent, child, xyz) -> str:
    return (
        f'  <joint name="{name}" type="fixed">\n'
        f'    <parent link="{parent}"/><child link="{child}"/>\n'
        f'    <origin xyz="{_vec(xyz)}" rpy="0 0 0"/>\n'
        f"  </joint>\n"
    )


def _robot(name, body) -> str:
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n{body}</robot>\n'


def _twist(k):
    """A small deterministic rotation of the ``k``-th joint frame (generic geometry)."""
    return (0.0, 0.0, 0.3 * ((k % 3) - 1))


# ----------------------------------------------------------------------------- serial chain


def _check_count(n, what):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise ModelError(f"{what}: the number of links must be an integer, got {n!r}")
    if n < 1:
        raise ModelError(f"{what}: the number of links must be >= 1, got {n}")
    return int(n)


def serial_chain_urdf(n: int) -> str:
    """URDF text of :func:`serial_chain`: ``base -> link_1 -> ... -> link_n -> end_effector``.

    Joint ``joint_i`` (revolute, axis ``AXES[(i - 1) % 5]``) carries ``link_i``; the fixed
    joint ``end_effector_joint`` puts the frame ``end_effector`` at the tip of ``link_n``.
    """
    n = _check_count(n, "serial_chain")
    body = _link("base", 0, LINK_LENGTH)
    parent = "base"
    for i in range(1, n + 1):
        xyz = (0.0, 0.0, LINK_LENGTH if i > 1 else 0.0)
        body += _link(f"link_{i}", i, LINK_LENGTH)
        body += _revolute(f"joint_{i}", parent, f"link_{i}", xyz, _twist(i), AXES[(i - 1) % len(AXES)])
        parent = f"link_{i}"
    body += _frame_link("end_effector")
    body += _fixed("end_effector_joint", parent, "end_effector", (0.0, 0.0, LINK_LENGTH))
    return _robot(f"serial_chain_{n}", body)


def serial_chain(n: int, floating_base: bool = False) -> Model:
    """A chain of ``n`` revolute links (axes varied); the frame ``"end_effector"`` at its tip.

    ``floating_base`` adds a free-flyer root under the base link.
    """
    return load_urdf_string(serial_chain_urdf(n), floating_base=floating_base)


# ----------------------------------------------------------------------------- binary tree

LINKS_PER_BRANCH = 3  # seed 003 Sec. VII: three links per branch before it splits in two
BRANCH_SPREAD = 0.1  # m: lateral offset of the two sub-branches from their parent's tip


def binary_tree_sizes(max_links: int = 1000) -> list[int]:
    """The allowed sizes of :func:`binary_tree` up to ``max_links``: 3, 9, 21, 45, 93, ..."""
    sizes, depth = [], 1
    while LINKS_PER_BRANCH * (2**depth - 1) <= max_links:
        sizes.append(LINKS_PER_BRANCH * (2**depth - 1))
        depth += 1
    return sizes


def _tree_depth(n) -> int:
    n = _check_count(n, "binary_tree")
    depth = (n // LINKS_PER_BRANCH + 1).bit_length() - 1
    if n % LINKS_PER_BRANCH or LINKS_PER_BRANCH * (2**depth - 1) != n:
        lower = LINKS_PER_BRANCH * (2**depth - 1)
        upper = LINKS_PER_BRANCH * (2 ** (depth + 1) - 1)
        raise ModelError(
            f"binary_tree: a balanced binary tree with {LINKS_PER_BRANCH} links per branch has "
            f"n = {LINKS_PER_BRANCH} (2^d - 1) links (3, 9, 21, 45, 93, 189, ...); got {n}"
            + (f" (nearest: {lower} or {upper})" if lower >= LINKS_PER_BRANCH else f" (nearest: {upper})")
        )
    return depth


def binary_tree_urdf(n: int) -> str:
    """URDF text of :func:`binary_tree`.

    Branch ``b`` (heap order: the root branch is 0, the sub-branches of ``b`` are ``2b + 1``
    and ``2b + 2``) has links ``b<b>_link_<0..2>`` carried by joints ``b<b>_joint_<0..2>``.
    Branch numbers are zero-padded so that the joints' names sort (as URDF parsers visit
    them) left sub-branch first, and depth-first order visits the leaves left to right.
    """
    depth = _tree_depth(n)
    nbranches = 2**depth - 1
    width = len(str(nbranches - 1))
    first_leaf = 2 ** (depth - 1) - 1
    name = lambda b, kind, j: f"b{b:0{width}d}_{kind}_{j}"  # noqa: E731
    body = _link("base", 0, LINK_LENGTH)
    for b in range(nbranches):
        if b == 0:
            parent, xyz = "base", (0.0, 0.0, 0.0)
        else:
            side = 1.0 if b % 2 else -1.0  # left (odd) sub-branch towards +y
            parent, xyz = name((b - 1) // 2, "link", LINKS_PER_BRANCH - 1), (0.0, side * BRANCH_SPREAD, LINK_LENGTH)
        for j in range(LINKS_PER_BRANCH):
            k = LINKS_PER_BRANCH * b + j  # index of the link in the tree
            body += _link(name(b, "link", j), k + 1, LINK_LENGTH)
            body += _revolute(name(b, "joint", j), parent, name(b, "link", j), xyz, _twist(k + 1), AXES[k % len(AXES)])
            parent, xyz = name(b, "link", j), (0.0, 0.0, LINK_LENGTH)
        if b >= first_leaf:
            leaf = f"leaf_{b - first_leaf}"
            body += _frame_link(leaf)
            body += _fixed(f"{leaf}_joint", parent, leaf, xyz)
    return _robot(f"binary_tree_{n}", body)


def binary_tree(n: int) -> Model:
    """A balanced binary tree of ``n`` revolute links, fixed base (seed 003 Fig. 3c).

    Each branch has three links before it splits into two sub-branches, so ``n`` must be
    ``3 (2^d - 1)`` for a depth ``d >= 1``: 3, 9, 21, 45, 93, 189, ... (see
    :func:`binary_tree_sizes`); any other ``n`` raises :class:`ModelError` (a
    ``ValueError``). The ``2^(d-1) = (n // 6 + 1)`` leaf branches end with the frames
    ``"leaf_0"``, ``"leaf_1"``, ... (left to right; :func:`leaf_frames`).
    """
    return load_urdf_string(binary_tree_urdf(n))


def leaf_frames(model: Model) -> list[str]:
    """The leaf frames ``leaf_<i>`` of a :func:`binary_tree` model, in order of ``i``."""
    leaves = [
        name for name, kind in zip(model.frame_names, model.frame_types) if kind == "body" and name.startswith("leaf_")
    ]
    return sorted(leaves, key=lambda name: int(name.split("_")[1]))


# ----------------------------------------------------------------------------- four-bar linkage

# A planar crank-rocker (Grashof: shortest + longest <= sum of the two others) in the x-z
# plane, all joint axes along y: ground pivots A = (0, 0, 0) and D = (GROUND, 0, 0).
CRANK, COUPLER, ROCKER, GROUND = 0.1, 0.35, 0.3, 0.4  # m
FOUR_BAR_FRAMES = ("coupler_tip", "rocker_tip")


def four_bar_urdf() -> str:
    """URDF text of :func:`four_bar_linkage`.

    Chain 1: ``ground -crank_joint-> crank -coupler_joint-> coupler`` (frame ``coupler_tip``
    at the free end of the coupler); chain 2: ``ground -rocker_joint-> rocker`` (frame
    ``rocker_tip`` at its free end). Links lie along their local x axis; every joint turns
    about y.
    """
    axis = (0.0, 1.0, 0.0)
    body = _link("ground", 0, GROUND, along=0)
    body += _link("crank", 1, CRANK, along=0)
    body += _link("coupler", 2, COUPLER, along=0)
    body += _link("rocker", 3, ROCKER, along=0)
    body += _revolute("crank_joint", "ground", "crank", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), axis)
    body += _revolute("coupler_joint", "crank", "coupler", (CRANK, 0.0, 0.0), (0.0, 0.0, 0.0), axis)
    body += _revolute("rocker_joint", "ground", "rocker", (GROUND, 0.0, 0.0), (0.0, 0.0, 0.0), axis)
    body += _frame_link("coupler_tip") + _fixed("coupler_tip_joint", "coupler", "coupler_tip", (COUPLER, 0.0, 0.0))
    body += _frame_link("rocker_tip") + _fixed("rocker_tip_joint", "rocker", "rocker_tip", (ROCKER, 0.0, 0.0))
    return _robot("four_bar", body)


def four_bar_linkage() -> tuple[Model, str, str]:
    """A planar four-bar linkage cut open into a tree, and the two frames that close it.

    Returns ``(model, "coupler_tip", "rocker_tip")``: the crank-coupler chain and the rocker
    hang from a fixed ground; the loop is closed when the two frames coincide (a 3D point
    constraint between them, seed 000 Sec. V; its out-of-plane row is redundant), e.g. at
    :func:`four_bar_closed_configuration`. ``q = (crank, coupler, rocker)`` angles.
    """
    return load_urdf_string(four_bar_urdf()), *FOUR_BAR_FRAMES


def four_bar_closed_configuration(crank_angle: float = 0.5) -> np.ndarray:
    """A ``q (3,)`` of :func:`four_bar_linkage` where its two frames coincide.

    The crank is at ``crank_angle``; the coupler and rocker angles close the loop (the
    elbow-up assembly: the coupler-rocker joint above the ground line), solved
    geometrically and then polished by Newton steps on the frame positions (to ~1e-15).
    """
    model, f1, f2 = four_bar_linkage()
    # A rotation by t about y maps the x axis to (cos t, 0, -sin t): in the (x, z) plane a
    # link at angle t points at angle -t. Work with planar angles phi = -t.
    phi1 = -float(crank_angle)
    B = CRANK * np.array([math.cos(phi1), math.sin(phi1)])  # crank tip
    D = np.array([GROUND, 0.0])
    BD = D - B
    dist = float(np.linalg.norm(BD))
    if not abs(COUPLER - ROCKER) <= dist <= COUPLER + ROCKER:
        raise ModelError(f"four_bar_closed_configuration: the loop cannot close at crank angle {crank_angle}")
    # C: intersection of the circles (B, COUPLER) and (D, ROCKER), above the line B -> D
    along = (COUPLER**2 - ROCKER**2 + dist**2) / (2 * dist)
    height = math.sqrt(max(COUPLER**2 - along**2, 0.0))
    u = BD / dist
    C = B + along * u + height * np.array([-u[1], u[0]])
    phi_coupler = math.atan2(C[1] - B[1], C[0] - B[0])  # absolute planar angle of the coupler
    phi_rocker = math.atan2(C[1] - D[1], C[0] - D[0])
    q = np.array([crank_angle, -(phi_coupler - phi1), -phi_rocker])
    q = np.angle(np.exp(1j * q))  # within the position limits (-pi, pi]
    for _ in range(3):  # Newton on the closure error, crank fixed
        err = frame_placement(model, q, f1)[1] - frame_placement(model, q, f2)[1]
        J = (frame_jacobian(model, q, f1, "LOCAL_WORLD_ALIGNED") - frame_jacobian(model, q, f2, "LOCAL_WORLD_ALIGNED"))[
            :3, 1:
        ]
        q[1:] -= np.linalg.lstsq(J, err, rcond=None)[0]
    return q
