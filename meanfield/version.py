"""The package's version: its own module, so that the runs stamp it on their datasets
without importing the package's ``__init__`` (which imports the runs)."""
__version__ = "0.1.0"
