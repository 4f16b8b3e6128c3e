"""Subcommands of the ``pumice`` command line, one module each (see ``pumice.cli``)."""
