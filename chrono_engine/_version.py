"""The package version, written once: ``chrono_engine.__version__``, the wheel's metadata
(pyproject.toml reads it with scikit-build-core's regex provider) and saved stores'
manifests all take it from here."""

__version__ = "0.1.0"
