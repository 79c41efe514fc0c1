"""Tasks: the YAML schemas (frozen dataclasses validated at load time) and the OCPs they build.

- :mod:`.config`: the gait configuration, and the loading and checking every schema shares;
- :mod:`.gaits`: a gait configuration's OCP (:func:`.gaits.build_problem`);
- :mod:`.gait_mpc`: the legged MPC's configuration (the schedule, the commands, the footholds) and
  the OCP of one of its horizons;
- :mod:`.polishing`: seed 001's force-feedback polishing with Talos;
- :mod:`.schema`: the schemas as JSON Schema for editors.

Imports ``liftoff.dynamics``, ``liftoff.ocp``, ``liftoff.solvers`` (the solver's options) and
``liftoff.problems.files``; nothing else of ``problems``.
"""
