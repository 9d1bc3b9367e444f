"""The package's version: a leaf module, so any layer can name it without importing the package root.

>>> from lineage_listener.version import __version__
>>> __version__.count(".")
2
"""
__version__ = "0.1.0"
