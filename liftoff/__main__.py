"""``python -m liftoff``: the ``liftoff`` command."""

import sys

from liftoff.problems.cli import main

sys.exit(main())
