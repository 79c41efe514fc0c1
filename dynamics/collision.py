"""Collision detection for the simulator: points and spheres of the robot against planes.

What the tasks need and nothing more: point and sphere feet, a tool's contact points, and the
environment as planes (the ground, a table top, a tilted board), each given by a point on it
and its outward normal; a plane is a half-space (the side its normal points away from is
solid) without edges. A point (:func:`point`) is a :class:`Sphere` of radius zero.

For a sphere of centre ``c`` and radius ``r`` against the plane through ``p0`` of unit normal
``n``, the *gap* (signed distance, negative when penetrating) is ``g = n . (c - p0) - r`` and
the contact point is ``c - r n``, the sphere's point deepest in (or closest to) the plane, on
the body of the sphere's frame. A pair is *active* when ``g <= margin``: a positive margin lets
the time-stepping scheme see a contact one step before it closes (speculative contact).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import UnknownNameError
from .kinematics import forward, frame_placement_world


def _vector(value, name, what) -> np.ndarray:
    x = np.array(value, dtype=float)
    if x.shape != (3,) or not np.all(np.isfinite(x)):
        raise ValueError(f"{what}: {name} must be a finite vector of 3 numbers, got {value!r}")
    x.setflags(write=False)
    return x


@dataclass(frozen=True)
class Sphere:
    """A sphere of ``radius`` [m] attached to the robot's frame ``frame``, its centre at
    ``offset`` in that frame."""

    frame: str
    radius: float = 0.0
    offset: np.ndarray = field(default=(0.0, 0.0, 0.0), compare=False)

    def __post_init__(self):
        object.__setattr__(self, "offset", _vector(self.offset, "offset", f"sphere on {self.frame!r}"))
        if not (np.isscalar(self.radius) and np.isfinite(self.radius) and self.radius >= 0):
            raise ValueError(f"sphere on {self.frame!r}: radius must be a finite number >= 0, got {self.radius!r}")


def point(frame: str, offset=(0.0, 0.0, 0.0)) -> Sphere:
    """A point of the robot's frame ``frame`` at ``offset`` in it: a sphere of radius zero."""
    return Sphere(frame, 0.0, offset)


@dataclass(frozen=True)
class Plane:
    """The plane through ``point`` with outward unit ``normal`` (normalized here), of Coulomb
    friction coefficient ``friction`` against the robot."""

    name: str
    point: np.ndarray = field(default=(0.0, 0.0, 0.0), compare=False)
    normal: np.ndarray = field(default=(0.0, 0.0, 1.0), compare=False)
    friction: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "point", _vector(self.point, "point", f"plane {self.name!r}"))
        n = _vector(self.normal, "normal", f"plane {self.name!r}")
        norm = np.linalg.norm(n)
        if norm < 1e-12:
            raise ValueError(f"plane {self.name!r}: the normal must not be zero")
        n = n / norm
        n.setflags(write=False)
        object.__setattr__(self, "normal", n)
        if not (np.isscalar(self.friction) and np.isfinite(self.friction) and self.friction >= 0):
            raise ValueError(f"plane {self.name!r}: friction must be a finite number >= 0, got {self.friction!r}")


def tilted_plane(name: str, angle: float, friction: float = 1.0, point=(0.0, 0.0, 0.0)) -> Plane:
    """The ground turned by ``angle`` [rad] about the world's y axis (its normal
    ``(-sin, 0, cos)``): an incline that rises along +x (downhill: ``(-cos, 0, -sin)``)."""
    return Plane(name, point, (-np.sin(angle), 0.0, np.cos(angle)), friction)


@dataclass(frozen=True)
class ContactSet:
    """The active sphere-plane pairs, ``k`` of them: indices ``sphere (k,)`` and ``plane (k,)``
    into the lists given to :func:`detect`, the sphere's ``frame (k,)`` and ``joint (k,)`` ids,
    ``gap (k,)``, world ``normal (k, 3)`` (the plane's), world contact ``point (k, 3)`` and the
    Coulomb coefficient ``friction (k,)``."""

    sphere: np.ndarray
    plane: np.ndarray
    frame: np.ndarray
    joint: np.ndarray
    gap: np.ndarray
    normal: np.ndarray
    point: np.ndarray
    friction: np.ndarray

    def __len__(self) -> int:
        return len(self.gap)

    @property
    def keys(self) -> list:
        """``(sphere, plane)`` of each pair: what identifies a contact from one step to the next."""
        return list(zip(self.sphere.tolist(), self.plane.tolist()))


def frame_ids(model, spheres) -> np.ndarray:
    """The frame ids of ``spheres``; an unknown frame raises :class:`UnknownNameError`."""
    try:
        return np.array([model.frame_id(s.frame) for s in spheres], dtype=int)
    except UnknownNameError as err:
        raise UnknownNameError(f"collision geometry: {err}") from None


def sphere_centres(model, kin, spheres, frames) -> np.ndarray:
    """World centres ``(len(spheres), 3)`` of ``spheres`` (frame ids ``frames``) at the
    kinematics ``kin`` of one configuration."""
    centres = np.empty((len(spheres), 3))
    for i, (s, f) in enumerate(zip(spheres, frames)):
        R, p = frame_placement_world(model, kin, f, int(model.frame_parent[f]))
        centres[i] = p[:, 0] + R[:, :, 0] @ s.offset
    return centres


def detect(model, q, spheres, planes, margin=0.0, kin=None) -> ContactSet:
    """The pairs of ``spheres`` and ``planes`` with gap ``<= margin`` at configuration ``q``
    (``kin``: its kinematics from :func:`dynamics.kinematics.forward`, if already computed)."""
    if not (np.isscalar(margin) and np.isfinite(margin) and margin >= 0):
        raise ValueError(f"margin must be a finite number >= 0, got {margin!r}")
    frames = frame_ids(model, spheres)
    kin = forward(model, np.asarray(q, dtype=float)[None]) if kin is None else kin
    centres = sphere_centres(model, kin, spheres, frames)
    radii = np.array([s.radius for s in spheres])
    points = np.array([p.point for p in planes]).reshape(-1, 3)
    normals = np.array([p.normal for p in planes]).reshape(-1, 3)
    gaps = np.einsum("pk,spk->sp", normals, centres[:, None] - points[None]) - radii[:, None]
    s, p = np.nonzero(gaps <= margin)
    return ContactSet(
        sphere=s,
        plane=p,
        frame=frames[s],
        joint=np.asarray(model.frame_parent, dtype=int)[frames[s]],
        gap=gaps[s, p],
        normal=normals[p],
        point=centres[s] - radii[s, None] * normals[p],
        friction=np.array([planes[i].friction for i in p], dtype=float),
    )
