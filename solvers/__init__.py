"""Newton-type solvers over an OCP: the Riccati recursion, the interior point, baselines."""

from .riccati import RiccatiError, RiccatiSolution, riccati
