"""liftoff's time-stepping simulator (seed 002): the contact solvers against the Signorini-Coulomb
conditions and an enumerated LCP; the simulator against analytic cases (a box on an incline, a
dropped sphere, a box pushed at the friction limit) and against MuJoCo; ANYmal dropped on the
ground with PD-held joints."""

from __future__ import annotations

import itertools

import mujoco
import numpy as np
import pytest

from liftoff import dynamics
from liftoff.dynamics import collision, simulator, unilateral
from liftoff.dynamics.errors import UnknownNameError
from liftoff.problems.bench import contact as contact_bench

G0 = 9.81
DT = 1e-3
HALF = np.array([0.1, 0.1, 0.05])  # the box's half extents [m]
BOX_MASS, BALL_MASS, BALL_RADIUS = 2.0, contact_bench.BALL_MASS, contact_bench.BALL_RADIUS
SOLVER_TOL = 1e-8  # the target for the residuals at convergence
# MuJoCo's contacts are soft (default solref: 0.02 s time constant): a stuck box sinks and creeps
# (measured: 0.3 mm on the incline in 0.4 s, 0.5 mm pushed at 0.95 mu m g in 0.3 s), a sliding one
# rocks a little on its soft contacts (0.05 mm); final positions agree to this
MUJOCO_POSITION_TOL = 1e-3  # [m]


def box_model():
    a, b, c = np.square(2 * HALF)
    Ixx, Iyy, Izz = np.array([b + c, a + c, a + b]) * BOX_MASS / 12
    urdf = (
        f'<robot name="box"><link name="box"><inertial><origin xyz="0 0 0"/><mass value="{BOX_MASS}"/>'
        f'<inertia ixx="{Ixx}" ixy="0" ixz="0" iyy="{Iyy}" iyz="0" izz="{Izz}"/></inertial></link></robot>'
    )
    return dynamics.load_urdf_string(urdf, floating_base=True)


ball_model = contact_bench.ball_model


CORNERS = [collision.point("box", (sx * HALF[0], sy * HALF[1], -HALF[2])) for sx in (-1, 1) for sy in (-1, 1)]


def rotation_y(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def box_on(theta):
    """The box resting on the incline of angle ``theta`` (the plane through the origin): ``q``."""
    R = rotation_y(-theta)  # its third column is the incline's normal
    return np.concatenate((R @ [0, 0, HALF[2]], dynamics.manifold.rotation_to_quat(R[:, :, None])[:, 0]))


def world_velocity(q, v):
    return dynamics.spatial.quat_to_rotation(q[3:7][:, None])[:, :, 0] @ v[:3]


def downhill(theta):
    return np.array([-np.cos(theta), 0.0, -np.sin(theta)])


# ----------------------------------------------------------------------------- the contact solvers

SOLVERS = {"pgs": unilateral.pgs, "admm": unilateral.admm}


def random_problem(rng, k, friction=True):
    A = rng.standard_normal((3 * k, 3 * k))
    G = A @ A.T / (3 * k) + 0.1 * np.eye(3 * k)
    return G, rng.standard_normal(3 * k), rng.uniform(0.1, 1.0, k) if friction else np.zeros(k)


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_solutions_satisfy_signorini_and_coulomb_on_random_problems(solver):
    rng = np.random.default_rng(0)
    modes = set()
    for _ in range(15):
        k = int(rng.integers(1, 5))
        G, c, mu = random_problem(rng, k)
        report = SOLVERS[solver](G, c, mu, settings=unilateral.Settings(max_iter=3000, tol=1e-11))
        assert report.converged and report.residual <= SOLVER_TOL
        lam, u = report.impulse.reshape(-1, 3), (G @ report.impulse + c).reshape(-1, 3)
        np.testing.assert_allclose(report.velocity, u.ravel(), atol=1e-12)
        for (ln, *lt), (un, *ut), m in zip(lam, u, mu):
            lt, ut = np.array(lt), np.array(ut)
            assert ln >= -SOLVER_TOL and un >= -SOLVER_TOL and abs(ln * un) <= SOLVER_TOL  # Signorini
            assert np.linalg.norm(lt) <= m * ln + SOLVER_TOL  # in the Coulomb cone
            if ln <= SOLVER_TOL:
                modes.add("open")
            elif np.linalg.norm(lt) < m * ln - 1e-6:  # sticking: no slip
                modes.add("stick")
                assert np.linalg.norm(ut) <= 1e-6
            else:  # sliding: friction opposes the slip at the cone's boundary (maximum dissipation)
                modes.add("slide")
                assert np.linalg.norm(lt + m * ln * ut / max(np.linalg.norm(ut), 1e-300)) <= 1e-6 * max(ln, 1)
    assert modes == {"open", "stick", "slide"}  # the problems exercise every case


def lcp_by_enumeration(A, b):
    """``x >= 0, A x + b >= 0, x . (A x + b) = 0`` by trying every active set."""
    n = len(b)
    for active in itertools.product((False, True), repeat=n):
        idx = np.flatnonzero(active)
        x = np.zeros(n)
        if len(idx):
            x[idx] = np.linalg.solve(A[np.ix_(idx, idx)], -b[idx])
        if np.all(x >= -1e-12) and np.all(A @ x + b >= -1e-12):
            return x
    raise AssertionError("no solution")


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_frictionless_solutions_are_the_lcps(solver):
    rng = np.random.default_rng(1)
    for _ in range(10):
        G, c, mu = random_problem(rng, 4, friction=False)
        report = SOLVERS[solver](G, c, mu, settings=unilateral.Settings(max_iter=3000, tol=1e-12))
        normal = lcp_by_enumeration(G[0::3, 0::3], c[0::3])
        assert report.converged
        np.testing.assert_allclose(report.impulse[0::3], normal, atol=1e-8)
        np.testing.assert_allclose(report.impulse.reshape(-1, 3)[:, 1:], 0.0, atol=1e-12)


def test_the_cone_projection_is_the_nearest_point():
    rng = np.random.default_rng(2)
    lam, mu = rng.standard_normal((200, 3)), rng.uniform(0.0, 1.5, 200)
    p = unilateral.project_cone(lam, mu)
    assert np.all(np.linalg.norm(p[:, 1:], axis=1) <= mu * p[:, 0] + 1e-12)
    for x, m, px in zip(lam, mu, p):  # no point of the cone (sampled) is nearer
        n = rng.uniform(0, 3, 500)
        angle = rng.uniform(0, 2 * np.pi, 500)
        r = m * n * rng.uniform(0, 1, 500)
        samples = np.column_stack((n, r * np.cos(angle), r * np.sin(angle)))
        assert np.linalg.norm(x - px) <= np.linalg.norm(samples - x, axis=1).min() + 1e-12


# ----------------------------------------------------------------------------- the simulator's pieces


def test_contact_rows_and_the_gaps_second_order_term_on_anymal():
    """The rows are liftoff's 3D contact Jacobian of a frame put at the contact point, its axes the
    contact's (``dynamics.contact_jacobian``); the gap along ``q (+) h v`` is ``g + h n . c_dot +
    h^2 / 2 n . c_ddot`` to third order (:func:`dynamics.simulator.centre_drift`)."""
    model, rng = dynamics.load("anymal"), np.random.default_rng(3)
    spheres = contact_bench.ANYMAL_FOOT_SPHERES
    tilted = collision.tilted_plane("board", 0.4, point=(0, 0, 5.0))  # above everything: every foot touches
    sim = simulator.SimulatorModel(model, spheres, [tilted])
    q, v = dynamics.random_configuration(model, rng), rng.standard_normal(model.nv)
    kin = dynamics.kinematics.forward(model, q[None], v[None], np.zeros((1, model.nv)))
    contacts = collision.detect(model, q, spheres, [tilted], kin=kin)
    assert len(contacts) == 4
    bases = sim.bases[contacts.plane]
    J = simulator.contact_rows(model, kin, contacts, bases)
    for i, (sphere, point) in enumerate(zip(contacts.sphere, contacts.point)):
        R, p = dynamics.frame_placement(model, q, spheres[sphere].frame)
        at_point = dynamics.add_frame(model, "contact", spheres[sphere].frame, translation=R.T @ (point - p))
        contact = dynamics.Contact("contact", "3D", "LOCAL_WORLD_ALIGNED", rotation=bases[i])
        np.testing.assert_allclose(J[3 * i : 3 * i + 3], dynamics.contact_jacobian(at_point, q, [contact]), atol=1e-12)
    drift = simulator.centre_drift(kin, contacts, sim.radii[contacts.sphere])
    errors = []
    for h in (1e-2, 5e-3):
        moved = collision.detect(model, dynamics.integrate(model, q, h * v), spheres, [tilted], margin=10.0)
        errors.append(np.abs(moved.gap - (contacts.gap + h * J[0::3] @ v + 0.5 * h**2 * drift)).max())
    assert errors[0] / errors[1] > 7  # third order: halving h divides the error by 8 (by 4 without the drift)


# ----------------------------------------------------------------------------- analytic cases


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_a_box_sticks_below_the_friction_angle_and_slides_above(solver):
    theta, steps = 0.3, 200  # tan(theta) = 0.309
    model = box_model()
    for mu in (0.5, 0.2):
        plane = collision.tilted_plane("incline", theta, mu)
        sim = simulator.SimulatorModel(model, CORNERS, [plane], dt=DT, solver=solver)
        data = simulator.make_data(sim, box_on(theta))
        log = simulator.simulate(sim, data, steps)
        assert log.converged.all() and log.residual.max() <= SOLVER_TOL
        assert log.penetration.max() <= 1e-9
        if mu > np.tan(theta):
            np.testing.assert_allclose(log.q[-1][:3], log.q[0][:3], atol=1e-9)
        else:  # semi-implicit Euler: the velocity grows by a dt per step exactly
            gained = world_velocity(log.q[-1], log.v[-1]) - world_velocity(log.q[1], log.v[1])
            acceleration = gained / ((steps - 1) * DT)
            expected = G0 * (np.sin(theta) - mu * np.cos(theta)) * downhill(theta)
            np.testing.assert_allclose(acceleration, expected, rtol=1e-6, atol=1e-6 * np.linalg.norm(expected))


def pushed_box(force, steps=150, contact="unilateral"):
    model = box_model()
    sim = simulator.SimulatorModel(model, CORNERS, [collision.Plane("ground", friction=0.5)], dt=DT, contact=contact)
    data = simulator.make_data(sim, np.array([0, 0, HALF[2], 0, 0, 0, 1.0]))
    push = np.array([force, 0, 0, 0, 0, 0])  # at the centre of mass, along x (the box is not turned)
    return simulator.simulate(sim, data, steps, lambda t, q, v: push)


def test_a_box_pushed_below_the_friction_limit_stays_and_above_accelerates():
    limit = 0.5 * BOX_MASS * G0
    stay = pushed_box(0.99 * limit)
    np.testing.assert_allclose(stay.q[-1], stay.q[0], atol=1e-9)
    slide = pushed_box(1.05 * limit)
    acceleration = (slide.v[-1][0] - slide.v[1][0]) / ((len(slide.t) - 1) * DT)
    np.testing.assert_allclose(acceleration, 0.05 * limit / BOX_MASS, rtol=1e-6)
    np.testing.assert_allclose(slide.q[-1][2], HALF[2], atol=1e-9)  # it slides, it does not tip or lift


def test_a_dropped_sphere_does_not_penetrate_or_gain_energy():
    """A vertical drop on a rough plane and an oblique one on a frictionless plane (the ball does
    not spin: a spinning body gains kinetic energy of order (dt w)^2 per step from the explicit
    Coriolis term of semi-implicit Euler, an integrator error the contact model does not cause)."""
    model = ball_model()
    for friction, v0 in ((0.5, [0, 0, -1.0, 0, 0, 0]), (0.0, [1.0, 0.5, -2.0, 0, 0, 0])):
        plane = collision.Plane("ground", friction=friction)
        sim = simulator.SimulatorModel(model, [collision.Sphere("ball", BALL_RADIUS)], [plane], dt=DT)
        data = simulator.make_data(sim, np.array([0, 0, 0.4, 0, 0, 0, 1.0]), v0)
        log = simulator.simulate(sim, data, 300)
        assert log.contacts[-1] == 1 and log.converged.all()
        tolerance = DT * sim.settings.tol / sim.baumgarte  # the scheme's penetration bound (dynamics.simulator)
        assert log.penetration.max() <= tolerance
        assert abs(log.q[-1][2] - BALL_RADIUS) <= tolerance
        assert np.diff(log.energy).max() <= sim.settings.tol  # an impulse times a velocity within tolerance
        assert log.energy[-1] < log.energy[0] - 0.4 * BALL_MASS * v0[2] ** 2  # the impact is inelastic


def test_a_rolling_sphere_does_not_sink():
    """Rolling at 1 m/s (10 rad/s): over a step the centre turns about the contact point, a dip of
    ``dt^2 w v / 2`` = 5e-6 m per step that the gap's second-order term removes (without it the
    ball sinks by 2.6e-5 m)."""
    sim = simulator.SimulatorModel(ball_model(), [collision.Sphere("ball", BALL_RADIUS)], [collision.Plane("ground")])
    data = simulator.make_data(sim, np.array([0, 0, BALL_RADIUS, 0, 0, 0, 1.0]), [1.0, 0, 0, 0, 1.0 / BALL_RADIUS, 0])
    log = simulator.simulate(sim, data, 300)
    assert log.penetration.max() < 1e-8 and np.all(log.contacts == 1)
    R = dynamics.spatial.quat_to_rotation(data.q[3:7][:, None])[:, :, 0]
    velocity, spin = R @ data.v[:3], R @ data.v[3:]
    contact_velocity = velocity + np.cross(spin, [0, 0, -BALL_RADIUS])
    np.testing.assert_allclose(contact_velocity[:2], 0.0, atol=1e-9)  # it rolls without slipping


def test_the_contact_models_differ_as_documented():
    """A ball pulled up by 1.5 m g: the bilateral idealization holds it on the ground, the unilateral
    contact lets it go; at rest, the soft contact sinks by m g / k (Hunt-Crossley: (m g / k)^(1/n))."""
    model = ball_model()
    ground = collision.Plane("ground", friction=0.5)
    pull = np.array([0, 0, 1.5 * BALL_MASS * G0, 0, 0, 0])
    heights = {}
    for contact in ("rigid_bilateral", "unilateral"):
        sim = simulator.SimulatorModel(model, [collision.Sphere("ball", BALL_RADIUS)], [ground], contact=contact)
        data = simulator.make_data(sim, np.array([0, 0, BALL_RADIUS, 0, 0, 0, 1.0]))
        simulator.simulate(sim, data, 20)
        heights[contact] = simulator.simulate(sim, data, 50, lambda t, q, v: pull).q[-1][2]
    np.testing.assert_allclose(heights["rigid_bilateral"], BALL_RADIUS, atol=1e-9)
    rise = 0.5 * G0 * DT**2 * 50 * 51 / 2  # semi-implicit Euler's 50 steps at 0.5 g upward
    np.testing.assert_allclose(heights["unilateral"] - BALL_RADIUS, rise, rtol=1e-9)
    for soft, sink in (
        (simulator.SpringDamper(stiffness=2e4, damping=300.0), BALL_MASS * G0 / 2e4),
        (simulator.SpringDamper(stiffness=2e6, damping=30.0, exponent=1.5), (BALL_MASS * G0 / 2e6) ** (1 / 1.5)),
    ):
        sim = simulator.SimulatorModel(
            model, [collision.Sphere("ball", BALL_RADIUS)], [ground], contact="soft", soft=soft
        )
        data = simulator.make_data(sim, np.array([0, 0, BALL_RADIUS, 0, 0, 0, 1.0]))
        simulator.simulate(sim, data, 400)
        np.testing.assert_allclose(BALL_RADIUS - data.q[2], sink, rtol=1e-3)  # k d^n = m g


def test_a_solver_that_does_not_converge_warns_with_its_residual_and_the_run_continues():
    settings = unilateral.Settings(max_iter=1, tol=1e-30)
    sim = simulator.SimulatorModel(
        box_model(), CORNERS, [collision.tilted_plane("incline", 0.3, 0.2)], settings=settings
    )
    with pytest.warns(simulator.ContactSolverWarning, match=r"did not converge at \d+ of 10 steps .* largest residual"):
        log = simulator.simulate(sim, simulator.make_data(sim, box_on(0.3)), 10)
    assert len(log.q) == 11 and not log.converged.all() and np.all(log.iterations == 1)


def test_the_soft_time_step_bound_is_where_semi_implicit_euler_turns_unstable():
    m, k = 2.0, 5e4
    for c in (0.0, 50.0, 400.0):
        bound = simulator.soft_time_step_bound(k, c, m)

        def radius(dt):
            step = np.array([[1 - dt * c / m, -dt * k / m], [dt * (1 - dt * c / m), 1 - dt * dt * k / m]])
            return np.abs(np.linalg.eigvals(step)).max()  # (v, x) -> (v+, x+)

        assert radius(0.999 * bound) <= 1.0 + 1e-12 < radius(1.001 * bound)  # marginal without damping
    assert simulator.soft_time_step_bound(k, 0.0, m) == pytest.approx(2 / np.sqrt(k / m))


def test_liftoff_bench_contact_refuses_a_step_above_the_stability_bound(capsys):
    from liftoff.problems.cli import main

    assert main(["bench", "contact", "--dt", "0.01"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "liftoff: error: --dt 0.01 s is above the stability bound 0.00572 s of the soft contact k = 100000 N/m "
        "(damping ratio 0.1, ball of 1 kg)"
    )


def test_bad_settings_raise_one_clear_error():
    model = ball_model()
    sphere, ground = collision.Sphere("ball", BALL_RADIUS), collision.Plane("ground")
    with pytest.raises(ValueError, match="friction must be a finite number >= 0"):
        collision.Plane("ground", friction=-0.1)
    with pytest.raises(ValueError, match="stiffness must be a finite number > 0"):
        simulator.SpringDamper(stiffness=0.0)
    with pytest.raises(ValueError, match="time step dt must be a finite number > 0"):
        simulator.SimulatorModel(model, [sphere], [ground], dt=-1e-3)
    with pytest.raises(ValueError, match="unknown contact model 'sticky'"):
        simulator.SimulatorModel(model, [sphere], [ground], contact="sticky")
    with pytest.raises(UnknownNameError, match="unknown frame 'foot'"):
        simulator.SimulatorModel(model, [collision.Sphere("foot", 0.02)], [ground])
    with pytest.raises(ValueError, match="radius must be a finite number >= 0"):
        collision.Sphere("ball", -1.0)


# ----------------------------------------------------------------------------- against MuJoCo


def mujoco_box_on_incline(theta, mu):
    slope = f'friction="{mu} 0.005 0.0001"'
    centre = rotation_y(-theta) @ [0, 0, HALF[2]]
    return mujoco.MjModel.from_xml_string(
        f"""<mujoco><compiler angle="radian"/><option timestep="{DT}" cone="elliptic"/><worldbody>
        <geom type="plane" size="5 5 0.1" euler="0 {-theta} 0" {slope}/>
        <body pos="{centre[0]} 0 {centre[2]}" euler="0 {-theta} 0"><freejoint/>
        <geom type="box" size="{HALF[0]} {HALF[1]} {HALF[2]}" mass="{BOX_MASS}" {slope}/></body>
        </worldbody></mujoco>"""
    )


@pytest.mark.parametrize("mu", [0.5, 0.2])
def test_liftoff_and_mujoco_agree_on_the_incline(mu):
    theta, steps = 0.3, 400
    sim = simulator.SimulatorModel(box_model(), CORNERS, [collision.tilted_plane("incline", theta, mu)], dt=DT)
    log = simulator.simulate(sim, simulator.make_data(sim, box_on(theta)), steps)
    mj = mujoco_box_on_incline(theta, mu)
    data = mujoco.MjData(mj)
    mujoco.mj_forward(mj, data)
    np.testing.assert_allclose(data.qpos[:3], log.q[0][:3], atol=1e-12)  # the same initial pose
    mujoco.mj_step(mj, data, nstep=steps)
    liftoff_travel = (log.q[-1][:3] - log.q[0][:3]) @ downhill(theta)
    mujoco_travel = (data.qpos[:3] - log.q[0][:3]) @ downhill(theta)
    slides = mu < np.tan(theta)
    assert (liftoff_travel > 0.01) == (mujoco_travel > 0.01) == slides
    np.testing.assert_allclose(data.qpos[:3], log.q[-1][:3], atol=MUJOCO_POSITION_TOL)


@pytest.mark.parametrize("ratio", [0.95, 1.1])
def test_liftoff_and_mujoco_agree_on_the_pushed_box(ratio):
    force, steps = ratio * 0.5 * BOX_MASS * G0, 300
    log = pushed_box(force, steps)
    mj = mujoco.MjModel.from_xml_string(
        f"""<mujoco><option timestep="{DT}" cone="elliptic"/><worldbody>
        <geom type="plane" size="5 5 0.1" friction="0.5 0.005 0.0001"/>
        <body pos="0 0 {HALF[2]}"><freejoint/><geom type="box" size="{HALF[0]} {HALF[1]} {HALF[2]}"
        mass="{BOX_MASS}" friction="0.5 0.005 0.0001"/></body></worldbody></mujoco>"""
    )
    data = mujoco.MjData(mj)
    data.xfrc_applied[1, 0] = force
    mujoco.mj_step(mj, data, nstep=steps)
    assert (log.q[-1][0] > 0.005) == (data.qpos[0] > 0.005) == (ratio > 1)
    np.testing.assert_allclose(data.qpos[:3], log.q[-1][:3], atol=MUJOCO_POSITION_TOL)


# ----------------------------------------------------------------------------- ANYmal dropped on the ground


@pytest.fixture(scope="module")
def anymal_drop():
    """ANYmal in its standing posture, the lowest foot 5 cm above the ground, a stiff PD on its joints."""
    return contact_bench.anymal_on_the_ground(0.05)


@pytest.fixture(scope="module")
def liftoff_landing(anymal_drop):
    model, q0, pd = anymal_drop
    sim = simulator.SimulatorModel(
        model, contact_bench.ANYMAL_FOOT_SPHERES, [collision.Plane("ground", friction=0.7)], dt=DT
    )
    return simulator.simulate(sim, simulator.make_data(sim, q0), 350, pd)


def test_anymal_dropped_on_the_ground_lands_stays_up_and_its_feet_do_not_slide(anymal_drop, liftoff_landing):
    model, log = anymal_drop[0], liftoff_landing
    landed = int(np.argmax(log.contacts == 4))
    assert 0.08 < landed * DT < 0.11  # a fall of 5 cm takes 0.101 s; the legs swing a little on the way
    assert log.converged.all() and log.residual.max() <= SOLVER_TOL
    assert log.penetration.max() <= 1e-6
    assert log.q[-1][2] > 0.45 and np.all(log.contacts[landed:] == 4)  # it stays up, on its four feet
    slip = np.linalg.norm(
        contact_bench.foot_centres(model, log.q[-1])[:, :2]
        - contact_bench.foot_centres(model, log.q[landed + 1])[:, :2],
        axis=1,
    )
    assert slip.max() < 1e-3


def test_anymal_dropped_in_mujoco_lands_and_stays_up_where_liftoff_does(anymal_drop, liftoff_landing):
    """The generated MuJoCo model (problems/mpc/plants/mujoco_model.py) with ``impratio = 100``:
    at MuJoCo's default (1) its soft friction lets the loaded feet creep by about 1 cm/s (measured:
    1.0 mm per 0.1 s after landing), at 100 by 0.2 mm/s. It stands lower than liftoff's by
    MuJoCo's soft penetration under 40 kg (about 5 mm, solref 0.02 s)."""
    from liftoff.problems.mpc.plants import mujoco_model as mm

    model, q0, pd = anymal_drop
    robot = mm.build("anymal", model, surfaces=[mm.Surface("ground", "plane", np.zeros(3), friction=0.7)])
    robot.mj.opt.impratio = 100.0
    data = mujoco.MjData(robot.mj)
    data.qpos[:], data.qvel[:] = robot.to_mujoco(q0, np.zeros(model.nv))
    feet = []
    for _ in range(350):
        q, v = robot.from_mujoco(data.qpos, data.qvel)
        data.ctrl[robot.actuators] = pd(0.0, q, v)[6:]
        mujoco.mj_step(robot.mj, data)
        feet.append(contact_bench.foot_centres(model, robot.from_mujoco(data.qpos, data.qvel)[0]))
    q, _ = robot.from_mujoco(data.qpos, data.qvel)
    assert abs(q[2] - liftoff_landing.q[-1][2]) < 1e-2
    settled = np.linalg.norm(feet[-1][:, :2] - feet[250][:, :2], axis=1)
    assert settled.max() < 1e-3
