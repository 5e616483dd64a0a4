"""Lets `python -m daemon` run `relayd`."""

import sys

from daemon.cli import main

sys.exit(main())
