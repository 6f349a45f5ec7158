"""``python -m hooke …``: the ``hooke`` command (:func:`hooke.cli.main`), for environments whose
scripts folder is not on PATH."""

if __name__ == "__main__":  # importing the module (tools that walk the package) runs nothing
    from hooke.cli import main

    raise SystemExit(main())
