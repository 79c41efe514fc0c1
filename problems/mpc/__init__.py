"""The closed loop: a task's MPC against a simulated plant, and what is measured.

- :mod:`.controller`: the receding horizon (:class:`.controller.MPC`) and its policy;
- :mod:`.loop`: the loop against a plant, ended by the run's length or a status, and its log;
- :mod:`.plants`: the plant interface, MuJoCo's plant on models generated from the URDF, and
  liftoff's idealized plants;
- :mod:`.disturbances`: pushes, torque noise and bias, a heavier plant;
- :mod:`.observer`: the disturbance the controller's model misses (offset-free MPC);
- :mod:`.polishing_run`, :mod:`.gait_run`: each task's plant, run and measures;
- :mod:`.results`, :mod:`.figures`: a run as a results file and its figures;
- :mod:`.tasks`: the MPC tasks by name, and a run from a configuration file.

Imports :mod:`liftoff.problems.tasks`, :mod:`liftoff.problems.files` and the layers below.
"""
