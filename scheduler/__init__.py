"""pumice: a Volcano-style batch scheduler for Kubernetes.

This module is the public API for plugin and action authors: import what you need from
``pumice`` and nothing deeper.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
