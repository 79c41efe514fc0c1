"""Rigid-body dynamics of robots described by URDF (or SDF, with loop closures), batched over a leading axis.

See the README for the public API. Arrays follow Pinocchio's layout and conventions.
"""

from .collision import ContactSet, Plane, Sphere, detect, point, tilted_plane
from .constrained import (
    ALGORITHMS,
    OSIM_ALGORITHMS,
    SingularConstraintError,
    constrained_dynamics,
    constrained_dynamics_derivatives,
    contact_acceleration,
    contact_acceleration_derivatives,
    contact_inverse_dynamics,
    contact_inverse_dynamics_derivatives,
    contact_jacobian,
    contact_velocity,
    contact_velocity_derivatives,
    damped_osim,
    delassus,
    impulse_dynamics,
    impulse_dynamics_derivatives,
    impulse_inverse_dynamics,
    impulse_inverse_dynamics_derivatives,
)
from .contacts import COMPONENTS, Contact
from .describe import describe
from .errors import DimensionError, ModelError, UnknownNameError
from .forward_dynamics import aba, aba_derivatives
from .inverse_dynamics import crba, generalized_gravity, nonlinear_effects, rnea, rnea_derivatives
from .joint_friction import (
    has_passive_torque,
    keep_joint_friction,
    passive_torque,
    passive_torque_derivative,
)
from .kinematics import (
    ReferenceFrame,
    center_of_mass,
    com_jacobian,
    frame_acceleration,
    frame_jacobian,
    frame_jacobian_time_variation,
    frame_placement,
    frame_velocity,
)
from .manifold import (
    difference,
    difference_jacobians,
    integrate,
    integrate_jacobians,
    neutral,
    random_configuration,
)
from .memory import retain_freed_memory
from .model import Model, add_frame
from .robots import ROBOTS, load, load_urdf_string, robot_urdf, robots_dir
from .sdf import joint_springs, load_sdf
from .simulator import (
    CONTACT_MODELS,
    ContactSolverWarning,
    SimulatorData,
    SimulatorModel,
    make_data,
    simulate,
    soft_time_step_bound,
    step,
)
from .soft_contact import (
    SoftContact,
    soft_contact_forces,
    soft_contact_forces_derivatives,
    soft_contact_state,
    soft_forward_dynamics,
    soft_forward_dynamics_derivatives,
)
from .unilateral import admm, pgs, project_cone
