"""Benchmarks (``liftoff bench ...``): liftoff against the reference implementations in one
process, CPU time, one BLAS thread, after checking both agree.

- :mod:`.common`: what the benchmarks against Pinocchio share;
- :mod:`.dynamics`: the dynamics kernels against Pinocchio;
- :mod:`.constrained`: constrained dynamics and its derivatives against Pinocchio, and seed 003's scaling study;
- :mod:`.tables`: seed 003's Tables II and III;
- :mod:`.solve`: gait solves against Crocoddyl's FDDP;
- :mod:`.ddp`: liftoff's FDDP against Crocoddyl's on the same problem;
- :mod:`.polishing`: the polishing MPC against MuJoCo, scenario by scenario;
- :mod:`.contact`: seed 002's simulations with liftoff's simulator (a ball under soft and rigid
  unilateral contact, its penetration and energy; ANYmal dropped with PGS and ADMM), no reference
  but the analytic one.

Imports every floor below the command line.
"""
