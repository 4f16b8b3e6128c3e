"""The root of every exception pumice raises on purpose: ``PumiceError``.

Each boundary has its own subclass, defined in the module that owns the boundary (so that its
name reads well where it is raised, and its old import path keeps working). ``except
PumiceError`` catches anything pumice raised deliberately; a bare ``Exception`` that is not one
of these is a bug, and no module raises a bare ``ValueError``, ``KeyError``, ``TypeError`` or
``RuntimeError`` (``tests/test_errors.py`` reads the sources for one). Classes that callers have
always caught as one of those mix it in::

    PumiceError
    ├── ConfigError                 pumice.framework.config      file, line, key: what is wrong
    ├── AddressError (ValueError)   pumice.framework.config      not a host:port to listen on
    ├── YamlSourceError (ValueError) pumice.framework.yamlsource  text is not YAML we accept
    ├── ManifestError (ValueError)  pumice.manifests             a manifest that cannot be used
    ├── ObjectError (ValueError)    pumice.plain                 an object the model cannot read
    ├── LiveError                   pumice.commands.cluster_input  a cluster that cannot be listed
    ├── QuantityError (ValueError)  pumice.model.quantity        not a Kubernetes quantity
    ├── ResourceError (ValueError)  pumice.model.resource        bad amount, scale or default
    │   └── ResourceUnderflow                                    ``a - b`` below zero
    ├── NodeAccountingError (ValueError)  pumice.model.node      a placement the node refuses
    ├── NodeTableError (ValueError)  pumice.model.table          a node already in the table
    ├── JobTaskError (KeyError)     pumice.model.objects         a task not of the job
    ├── SnapshotError (KeyError)    pumice.model.snapshot        an update the snapshot cannot apply
    ├── DurationError (ValueError)  pumice.durations             not a Go duration
    ├── FlagError (ValueError)      pumice.framework.config      no such extension-point flag
    ├── ArgumentNameError (TypeError)  pumice.framework.arguments  an argument name not a string
    ├── ArgumentSpecError (ValueError)  pumice.framework.argspec  a declaration that cannot hold
    ├── PluginError                 pumice.framework.host        the plugin host
    │   ├── PluginConflictError                                  two packages, one name
    │   └── PluginLoadError                                      an entry point will not load
    ├── SessionError                pumice.framework.session     a plugin or action unknown
    │   └── PluginContractError                                  a plugin broke the contract
    ├── StatementError              pumice.framework.statement   an operation not applied
    ├── KubeError                   pumice.kube.errors           a failed API request (typed
    │                                                            by status: NotFound, Conflict,
    │                                                            Gone, TooManyRequests, ...)
    ├── LeaseTimingError (ValueError)  pumice.kube.lease         lease timings out of order
    └── the simulated API server (pumice.sim)
        ├── ApiError                pumice.sim.errors            one HTTP error + Status body
        ├── TemplateError (ValueError)  pumice.sim.defaults      a bad node template
        ├── BadQuantity (ValueError)    pumice.sim.quantities    a value the server cannot decode
        ├── BadTime (ValueError)        pumice.sim.objects       not an RFC 3339 time
        ├── SimSettingsError (ValueError)  pumice.sim.errors     a setting it cannot run with
        ├── StoreKeyError (KeyError)    pumice.sim.store         a delete of nothing stored
        └── BadInput                pumice.sim.cli               a bad flag or file (exit 2)

This module imports nothing from pumice, so every layer (the model included) can use it.
"""

from __future__ import annotations

__all__ = ["PumiceError"]


class PumiceError(Exception):
    """Something pumice refuses, with a one-line message naming what and where."""
