"""Benchmarks (``liftoff bench ...``): liftoff against the reference implementations in one
process, CPU time, one BLAS thread, after checking both agree.

- :mod:`.dynamics`: the dynamics kernels against Pinocchio;
- :mod:`.tables`: seed 003's Tables II and III;
- :mod:`.solve`: gait solves against Crocoddyl's FDDP;
- :mod:`.ddp`: liftoff's FDDP against Crocoddyl's on the same problem.

Imports every floor below the command line.
"""
