"""liftoff's time-stepping simulator: a robot among planes, with three contact models.

The scheme is Moreau's time stepping at velocity level (the Moreau-Jean scheme; Stewart &
Trinkle 1996 with a linearized gap), semi-implicit Euler: over a step ``dt`` from ``(q, v)``,

    v_free = v + dt M^-1 (tau - h(q, v)),    v+ = v_free + M^-1 J^T lambda,    q+ = q (+) dt v+,

with ``M, h, J`` at ``q``, ``J (3k, nv)`` the rows ``(n, t1, t2)`` of the velocity of each
contact point (:mod:`dynamics.collision`) and ``lambda`` the contact impulses over the step.
The contact velocities ``u = J v+ = G lambda + c`` with ``G = J M^-1 J^T + eps 1`` (the damped
Delassus matrix of seed 002, ``eps = delassus_damping``) and the free velocity
``c = J v_free + b``, where the bias ``b`` acts on the normal rows:

- speculative contact: a pair active with a gap ``0 < g <= margin`` gets ``b_n = g / dt``, so
  ``u_n >= 0`` lets it close within the step but not cross (``g + dt J_n v+ >= 0``);
- position correction (Baumgarte, seed 004 eq. 5 at velocity level): a penetrating pair
  (``g < 0``) gets ``b_n = baumgarte * g / dt``, removing that fraction of the penetration per
  step (it adds kinetic energy of order ``m (baumgarte g / dt)^2 / 2``; 0 switches it off).

The *penetration tolerance* this gives: a point or sphere translating against a plane keeps
``g >= -dt * tol / baumgarte`` (``tol``: the contact solver's velocity residual; each step may
lose ``dt * tol``, the correction returns a fraction ``baumgarte`` of the penetration); rotations
add a second-order ``dt^2`` term (the gap is linearized over the step), which the position
correction removes over the next steps; the gap's own second-order term along the step is
included (:func:`centre_drift`), so that a rolling sphere does not sink.

Energy: the contact impulses of the unilateral model dissipate (or keep) energy, never add it
(inelastic Signorini, maximum dissipation), and semi-implicit Euler loses ``m g^2 dt^2 / 2`` per
step in free fall. Two approximations can add energy: the position correction (above), and the
explicit velocity-product terms of ``h(q, v)``: a free flyer's body-frame linear velocity turned
by ``-dt w x v`` grows by a factor ``sqrt(1 + (dt |w|)^2)`` per step (a spinning, translating body
gains kinetic energy ``m |v|^2 (dt |w|)^2 / 2`` per step: 2e-6 J per step for a 1 kg ball rolling
at 0.45 m/s, 1 kHz). The contact models (``contact=``):

- ``"unilateral"``: the Signorini-Coulomb problem of :mod:`dynamics.unilateral` on ``(G, c)``,
  solved by ``"pgs"`` or ``"admm"``, warm-started by each pair's impulse of the previous step;
- ``"rigid_bilateral"``: what liftoff's plants did, an idealization: a pair that touches (or
  would cross the plane within the step) is held from then on, all three rows, at zero
  velocity (plus the bias), by impulses of any sign: it may pull and never slides or lifts off;
- ``"soft"``: no impulse problem; a spring-damper force on the penetration ``d = -g > 0`` only,
  :class:`SpringDamper`, applied explicitly: ``lambda = dt f(q, v)``. Stable only for ``dt``
  below :func:`soft_time_step_bound`.

Model and data: :class:`SimulatorModel` is immutable (the robot, its spheres, the planes and
every parameter); :class:`SimulatorData` is the state and workspace :func:`step` advances.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from .collision import ContactSet, Plane, Sphere, detect, frame_ids
from .inverse_dynamics import mass_matrix, nonlinear_effects
from .kinematics import center_of_mass, forward
from .manifold import integrate
from .unilateral import Report, Settings, admm, bilateral, pgs

CONTACT_MODELS = ("rigid_bilateral", "unilateral", "soft")


class ContactSolverWarning(RuntimeWarning):
    """The contact solver stopped at ``max_iter`` above its tolerance; the run continues."""


SOLVERS = {"pgs": pgs, "admm": admm}


def _positive(value, name, strict=True):
    ok = np.isscalar(value) and np.isfinite(value) and (value > 0 if strict else value >= 0)
    if not ok:
        raise ValueError(f"{name} must be a finite number {'>' if strict else '>='} 0, got {value!r}")


@dataclass(frozen=True)
class SpringDamper:
    """The simulator's soft (spring-damper) contact of seed 002 on the penetration ``d = -g > 0``
    and its rate ``d_dot = -u_n``, its kinks exact (the OCP's :class:`dynamics.SoftContact` smooths
    them for its derivatives):

    - ``exponent=None``: linear, ``f_n = k d + c d_dot`` (``c`` in N s/m);
    - ``exponent=n``: Hunt-Crossley, ``f_n = k d^n (1 + c d_dot)`` (``c`` in s/m: damping that
      vanishes with the penetration, so the force is continuous at touchdown);

    clamped to ``f_n >= 0`` (no pull). With ``friction``, the regularized Coulomb friction
    ``f_t = -mu f_n u_t / sqrt(|u_t|^2 + slip^2)``: an approximation of Coulomb's law that
    lets a loaded contact creep at a speed of order ``slip`` [m/s] (``slip r / sqrt(1 - r^2)``
    with ``r`` the ratio of the tangential load to ``mu f_n``).

    Both forces are applied explicitly, so both are stable only below a step: the spring-damper
    below :func:`soft_time_step_bound` on the contact's effective mass ``m`` (``1 / G_nn``), the
    friction (a damper of rate ``mu f_n / slip`` near zero slip) below ``2 slip m / (mu f_n)``.
    The defaults are stable at 1 kHz for effective masses above about 0.5 kg under 1 g."""

    stiffness: float = 1e5
    damping: float = 100.0
    exponent: float | None = None
    friction: bool = True
    slip: float = 1e-2

    def __post_init__(self):
        _positive(self.stiffness, "soft contact stiffness")
        _positive(self.damping, "soft contact damping", strict=False)
        _positive(self.slip, "soft contact slip velocity")
        if self.exponent is not None:
            _positive(self.exponent, "Hunt-Crossley exponent")

    def elastic_energy(self, depth) -> np.ndarray:
        """The energy the spring stores at penetrations ``depth``: ``k d^(n+1) / (n+1)`` (``n = 1``
        for the linear model) [J]; what :func:`energy` leaves out."""
        n = 1.0 if self.exponent is None else self.exponent
        return self.stiffness * np.maximum(depth, 0.0) ** (n + 1) / (n + 1)

    def normal_force(self, depth, rate) -> np.ndarray:
        """``f_n (k,)`` at penetrations ``depth (k,)`` and their rates ``rate (k,)`` (zero where ``depth <= 0``)."""
        d = np.maximum(depth, 0.0)
        if self.exponent is None:
            f = self.stiffness * d + self.damping * rate
        else:
            f = self.stiffness * d**self.exponent * (1.0 + self.damping * rate)
        return np.where(depth > 0, np.maximum(f, 0.0), 0.0)


def soft_time_step_bound(stiffness, damping, mass) -> float:
    """The largest stable step of semi-implicit Euler on ``m x'' = -k x - c x'`` (the linear
    soft contact on an effective mass ``mass``): ``4 / (a + sqrt(a^2 + 4 w^2))`` with ``a = c/m``
    and ``w^2 = k/m`` (the Jury conditions of the step's 2x2 map; ``2 / w`` without damping)."""
    for value, name in ((stiffness, "stiffness"), (mass, "mass")):
        _positive(value, name)
    _positive(damping, "damping", strict=False)
    a, w2 = damping / mass, stiffness / mass
    return float(4.0 / (a + np.sqrt(a * a + 4.0 * w2)))


@dataclass(frozen=True)
class SimulatorModel:
    """Everything :func:`step` reads and never changes: the robot ``model``, its ``spheres``
    (:class:`dynamics.collision.Sphere`, points included), the ``planes``, the step ``dt`` [s],
    the ``contact`` model (``CONTACT_MODELS``), the unilateral ``solver`` (``"pgs"`` or
    ``"admm"``; ADMM by default: on ANYmal's landing it takes 9 iterations per step where PGS
    takes 46, ``liftoff bench contact``) and its ``settings``, the ``baumgarte`` fraction of
    penetration corrected per step (in [0, 1]), the speculative ``margin`` [m] (at least the
    distance a contact closes in one step: 1 cm is 10 m/s at 1 kHz), the Delassus damping
    ``delassus_damping`` and the ``soft`` contact's parameters (module docstring). Spheres ride
    on the robot's bodies, not on frames of the universe."""

    model: object
    spheres: tuple
    planes: tuple
    dt: float = 1e-3
    contact: str = "unilateral"
    solver: str = "admm"
    settings: Settings = Settings()
    baumgarte: float = 0.2
    margin: float = 0.01
    delassus_damping: float = 1e-12
    soft: SpringDamper = SpringDamper()
    frames: np.ndarray = field(init=False, repr=False, compare=False)
    bases: np.ndarray = field(init=False, repr=False, compare=False)
    radii: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "spheres", tuple(self.spheres))
        object.__setattr__(self, "planes", tuple(self.planes))
        if not all(isinstance(s, Sphere) for s in self.spheres) or not all(isinstance(p, Plane) for p in self.planes):
            raise TypeError(
                "spheres must be collision.Sphere objects (points included) and planes collision.Plane objects"
            )
        object.__setattr__(self, "frames", frame_ids(self.model, self.spheres))
        fixed = [s.frame for s, f in zip(self.spheres, self.frames) if self.model.frame_parent[f] < 0]
        if fixed:
            raise ValueError(f"spheres on frames of the universe (they never move): {', '.join(fixed)}")
        object.__setattr__(self, "bases", tangent_basis([p.normal for p in self.planes]))
        object.__setattr__(self, "radii", np.array([s.radius for s in self.spheres], dtype=float))
        _positive(self.dt, "time step dt")
        _positive(self.margin, "margin", strict=False)
        _positive(self.delassus_damping, "delassus_damping", strict=False)
        if self.contact not in CONTACT_MODELS:
            raise ValueError(f"unknown contact model {self.contact!r}; expected one of {', '.join(CONTACT_MODELS)}")
        if self.solver not in SOLVERS:
            raise ValueError(f"unknown contact solver {self.solver!r}; expected one of {', '.join(SOLVERS)}")
        if not (np.isscalar(self.baumgarte) and 0 <= self.baumgarte <= 1):
            raise ValueError(f"baumgarte must be a number in [0, 1] (a fraction per step), got {self.baumgarte!r}")


@dataclass
class SimulatorData:
    """The state ``(t, q, v)`` and what the last step found: its ``contacts``
    (:class:`dynamics.collision.ContactSet`), their ``impulse (k, 3)`` in the rows ``(n, t1, t2)``
    and the contact solver's ``report`` (None for the soft model); ``warm``: each pair's last
    impulse (warm start); ``held``: the pairs the bilateral model holds."""

    t: float
    q: np.ndarray
    v: np.ndarray
    contacts: ContactSet | None = None
    impulse: np.ndarray | None = None
    report: Report | None = None
    warm: dict = field(default_factory=dict)
    held: set = field(default_factory=set)


def make_data(sim: SimulatorModel, q, v=None) -> SimulatorData:
    """A fresh state at ``(q, v)`` (``v`` zero by default), time zero."""
    q = np.array(q, dtype=float)
    v = np.zeros(sim.model.nv) if v is None else np.array(v, dtype=float)
    if q.shape != (sim.model.nq,) or v.shape != (sim.model.nv,):
        raise ValueError(f"expected q ({sim.model.nq},) and v ({sim.model.nv},), got {q.shape} and {v.shape}")
    return SimulatorData(0.0, q, v)


def tangent_basis(normal) -> np.ndarray:
    """``(k, 3, 3)``: per unit normal ``(k, 3)`` the columns ``(n, t1, t2)`` of a right-handed frame."""
    n = np.asarray(normal, dtype=float).reshape(-1, 3)
    helper = np.zeros_like(n)
    helper[np.arange(len(n)), np.argmin(np.abs(n), axis=1)] = 1.0
    t1 = np.cross(n, helper)
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    return np.stack((n, t1, np.cross(n, t1)), axis=2)


def contact_rows(model, kin, contacts: ContactSet, bases) -> np.ndarray:
    """``J (3k, nv)``: the velocity of each contact point ``p`` (on its sphere's body) in its frame
    ``(n, t1, t2)`` (``bases (k, 3, 3)``, columns): ``basis^T (J_lin - p x J_ang)`` with the body's
    world Jacobian at the origin (the dofs that move it: the tree's support)."""
    S = kin.oS[..., 0]
    support = model.tree.support[contacts.joint][:, None, :]
    Jp = (S[None, :3] - np.cross(contacts.point[:, :, None], S[None, 3:], axis=1)) * support
    return np.einsum("kab,kan->kbn", bases, Jp).reshape(-1, model.nv)


def energy(model, q, v, M=None) -> float:
    """Kinetic plus gravitational potential energy ``v^T M v / 2 - m g . com`` [J] (``M (nv, nv)``
    at ``q`` if already computed)."""
    q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
    M = mass_matrix(model, forward(model, q[None]))[0] if M is None else M
    return float(0.5 * v @ M @ v - model.mass * model.gravity @ center_of_mass(model, q))


@dataclass(frozen=True)
class StepInfo:
    """What a step saw at its start: the state's ``energy``, the deepest ``penetration`` (>= 0)
    of its active pairs, their number ``contacts``, and the contact solver's ``iterations``,
    ``residual`` and ``converged`` (0, 0.0, True without a solve)."""

    energy: float
    penetration: float
    contacts: int
    iterations: int
    residual: float
    converged: bool


def centre_drift(kin, contacts: ContactSet, radii) -> np.ndarray:
    """``(k,)``: the normal component of the classical acceleration of each sphere's centre at zero
    joint acceleration (``kin`` with velocities and ``a = 0``, no gravity), ``n . (a_lin + alpha x c
    + w x c_dot)``: the second-order term of the gap along ``q (+) dt v``, ``g + dt n . c_dot + dt^2 / 2
    n . c_ddot``. (The gap follows the centre, not the material contact point: a rolling sphere's
    material point stays put over a step while its centre turns about it.)"""
    centres = contacts.point + radii[:, None] * contacts.normal
    v, a = kin.ov[:, contacts.joint, 0].T, kin.oa[:, contacts.joint, 0].T
    c_dot = v[:, :3] + np.cross(v[:, 3:], centres)
    c_ddot = a[:, :3] + np.cross(a[:, 3:], centres) + np.cross(v[:, 3:], c_dot)
    return np.einsum("ki,ki->k", contacts.normal, c_ddot)


def _bias(sim, contacts, drift):
    """``b_n``: speculative ``g / dt`` for open pairs, ``baumgarte g / dt`` for penetrating ones,
    plus the gap's second-order term ``dt / 2 n . c_ddot`` (:func:`centre_drift`)."""
    gap = contacts.gap
    return np.where(gap > 0, gap, sim.baumgarte * gap) / sim.dt + 0.5 * sim.dt * drift


def _impulses(sim, data, contacts, G, c):
    """The impulses ``(3k,)`` of the unilateral or bilateral model and the solver's report."""
    keys = contacts.keys
    if sim.contact == "unilateral":
        warm = np.array([data.warm.get(key, np.zeros(3)) for key in keys]).ravel()
        report = SOLVERS[sim.solver](G, c, contacts.friction, warm, sim.settings)
        data.warm = {key: report.impulse[3 * i : 3 * i + 3] for i, key in enumerate(keys)}
        return report.impulse, report
    crossing = (contacts.gap <= 0) | (c[0::3] < 0)
    data.held |= {key for key, hit in zip(keys, crossing) if hit}
    held = np.repeat([key in data.held for key in keys], 3)
    lam = np.zeros(len(c))
    report = bilateral(G[np.ix_(held, held)], c[held], max(sim.delassus_damping, 1e-12), sim.settings)
    lam[held] = report.impulse
    return lam, report


def _soft_impulses(sim, contacts, u, dt):
    """``dt f`` of the soft model at contact velocities ``u (k, 3)``."""
    soft = sim.soft
    fn = soft.normal_force(-contacts.gap, -u[:, 0])
    f = np.zeros_like(u)
    f[:, 0] = fn
    if soft.friction:
        slip = np.sqrt(np.sum(u[:, 1:] ** 2, axis=1) + soft.slip**2)
        f[:, 1:] = -(contacts.friction * fn / slip)[:, None] * u[:, 1:]
    return dt * f.ravel()


def step(sim: SimulatorModel, data: SimulatorData, tau) -> StepInfo:
    """Advance ``data`` by one step under the generalized forces ``tau (nv,)`` (``S^T u`` plus
    any external force mapped to the joints); returns what the step saw at its start."""
    model, dt = sim.model, sim.dt
    q, v = data.q, data.v
    tau = np.asarray(tau, dtype=float)
    kin = forward(model, q[None], v[None], np.zeros((1, model.nv)))
    margin = 0.0 if sim.contact == "soft" else sim.margin
    contacts = detect(model, q, sim.spheres, sim.planes, margin, kin=kin)
    M = mass_matrix(model, kin)[0]
    L = cho_factor(M, lower=True)
    v_free = v + dt * cho_solve(L, tau - nonlinear_effects(model, q, v))
    report, k = None, len(contacts)
    if k == 0:
        lam, v_next = np.zeros(0), v_free
    else:
        J = contact_rows(model, kin, contacts, sim.bases[contacts.plane])
        if sim.contact == "soft":
            lam = _soft_impulses(sim, contacts, (J @ v).reshape(-1, 3), dt)
        else:
            G = J @ cho_solve(L, J.T)
            G = 0.5 * (G + G.T) + sim.delassus_damping * np.eye(3 * k)
            c = J @ v_free
            c[0::3] += _bias(sim, contacts, centre_drift(kin, contacts, sim.radii[contacts.sphere]))
            lam, report = _impulses(sim, data, contacts, G, c)
        v_next = v_free + cho_solve(L, J.T @ lam)
    info = StepInfo(
        energy(model, q, v, M),
        float(np.maximum(-contacts.gap, 0.0).max(initial=0.0)),
        k,
        0 if report is None else report.iterations,
        0.0 if report is None else report.residual,
        True if report is None else report.converged,
    )
    data.q, data.v, data.t = integrate(model, q, dt * v_next), v_next, data.t + dt
    data.contacts, data.impulse, data.report = contacts, lam.reshape(-1, 3), report
    return info


@dataclass(frozen=True)
class Log:
    """A run of :func:`simulate`: per step ``t (N,)`` at its start, the states ``q (N+1, nq)`` and
    ``v (N+1, nv)`` (the last one the final state), and the :class:`StepInfo` fields as arrays."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    energy: np.ndarray
    penetration: np.ndarray
    contacts: np.ndarray
    iterations: np.ndarray
    residual: np.ndarray
    converged: np.ndarray


def simulate(sim: SimulatorModel, data: SimulatorData, steps: int, control=None) -> Log:
    """Run ``steps`` steps; ``control(t, q, v) -> tau (nv,)`` (zero without one)."""
    if not (isinstance(steps, (int, np.integer)) and steps >= 0):
        raise ValueError(f"steps must be an integer >= 0, got {steps!r}")
    zero = np.zeros(sim.model.nv)
    t, qs, vs, infos = [], [data.q.copy()], [data.v.copy()], []
    for _ in range(steps):
        t.append(data.t)
        infos.append(step(sim, data, zero if control is None else control(data.t, data.q, data.v)))
        qs.append(data.q.copy())
        vs.append(data.v.copy())
    columns = {name: np.array([getattr(i, name) for i in infos]) for name in StepInfo.__dataclass_fields__}
    failed = np.flatnonzero(~columns["converged"]) if steps else []
    if len(failed):
        warnings.warn(
            f"the contact solver did not converge at {len(failed)} of {steps} steps (first at t = "
            f"{t[failed[0]]:.4g} s; largest residual {columns['residual'].max():.2e} > tol {sim.settings.tol:g})",
            ContactSolverWarning,
            stacklevel=2,
        )
    return Log(np.array(t), np.array(qs), np.array(vs), **columns)
