"""`python -m daemon.simulator --port N`."""

import sys

from daemon.simulator.cli import main

sys.exit(main())
