"""The closed loop: a task's MPC against a simulated plant, and what is measured.

- :mod:`.controller`: the receding horizon (:class:`.controller.MPC`) and its policy;
- :mod:`.plant`: liftoff's idealized plant, disturbances and the closed loop;
- :mod:`.legged_plant`: liftoff's idealized plant of a legged robot;
- :mod:`.polishing_run`, :mod:`.gait_run`: each task's run and its measures;
- :mod:`.results`: a run as a results file, and the controller's timing measures.

Imports :mod:`liftoff.problems.tasks`, :mod:`liftoff.problems.files` and the layers below.
"""
