"""``python -m minsep`` runs the command-line interface."""

from minsep.framework.cli.main import main

raise SystemExit(main())
