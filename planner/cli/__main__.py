"""`python -m planner.cli ...`: the `planner` command."""

import sys

from planner.cli.main import main

sys.exit(main())
