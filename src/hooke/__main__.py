"""``python -m hooke …``: the ``hooke`` command (:func:`hooke.cli.main`), for environments whose
scripts folder is not on PATH."""

from hooke.cli import main

raise SystemExit(main())
