"""The user's layer: tasks described in YAML, their MPC loops, studies, the viewer, benchmarks
and the command line.

One subpackage per concern; imports point downward (a floor imports only the floors below it,
and ``liftoff.solvers``, ``liftoff.ocp`` and ``liftoff.dynamics``):

- :mod:`.files`: results written whole or not at all, and the checks on files read (floor 0);
- :mod:`.tasks`: the YAML schemas of the tasks and the OCPs they build (floor 1);
- :mod:`.mpc`: the closed loop: controller, policy, plants, measures, results files (floor 2);
- :mod:`.studies`: offline solves, the baselines, comparisons, sweeps and their figures (floor 2);
- :mod:`.viewer`: a results file in meshcat, live or as one HTML page (floor 3);
- :mod:`.bench`: every ``liftoff bench`` command (floor 3);
- :mod:`.cli`: the ``liftoff`` command, parsing and calls only (floor 4).

Nothing below imports this package.
"""
