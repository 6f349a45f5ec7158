"""hooke's version (``hooke.__version__``), in a module of its own so that the trajectory store,
which writes it into every file, need not import the package that imports the store."""

__version__ = "0.1.0"
