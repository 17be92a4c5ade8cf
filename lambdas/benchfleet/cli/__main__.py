"""``python -m benchfleet.cli``: the ``benchfleet`` command (tests start it this way, as a subprocess)."""

from benchfleet.cli.main import main

raise SystemExit(main())
