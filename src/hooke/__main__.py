"""``python -m hooke …``: the ``hooke`` command (:func:`hooke.command.main`), for environments
whose scripts folder is not on PATH."""

if __name__ == "__main__":  # importing the module (tools that walk the package) runs nothing
    from hooke.command import main

    main()
