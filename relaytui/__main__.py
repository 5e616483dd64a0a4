"""`python -m relaytui`: the `relay` command (how `relay web` starts each session's TUI)."""

from relaytui.cli import main

raise SystemExit(main())
