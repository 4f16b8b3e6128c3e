"""``pumice.errors``: one root for every exception pumice raises on purpose."""

from __future__ import annotations

import pytest

import pumice.errors
from pumice.durations import DurationError
from pumice.errors import PumiceError
from pumice.framework.config import ConfigError
from pumice.framework.configfile import parse_config
from pumice.framework.host import PluginConflictError, PluginError, PluginLoadError
from pumice.framework.session import PluginContractError, SessionError
from pumice.framework.statement import StatementError
from pumice.framework.yamlsource import YamlSourceError
from pumice.kube.errors import KubeError
from pumice.manifests import ManifestError
from pumice.model.node import NodeAccountingError
from pumice.model.quantity import QuantityError, parse_quantity
from pumice.model.resource import Resource, ResourceError, ResourceUnderflow
from pumice.model.snapshot import SnapshotError
from pumice.sim.cli import BadInput
from pumice.sim.defaults import TemplateError
from pumice.sim.errors import ApiError
from pumice.sim.quantities import BadQuantity

ROOTED = [
    ConfigError,
    PluginError,
    PluginConflictError,
    PluginLoadError,
    BadInput,
    ApiError,
    SessionError,
    PluginContractError,
    StatementError,
    KubeError,
    SnapshotError,
]
"""Classes under PumiceError only."""

VALUE_ERRORS = [
    YamlSourceError,
    ManifestError,
    QuantityError,
    ResourceError,
    ResourceUnderflow,
    TemplateError,
    BadQuantity,
    DurationError,
    NodeAccountingError,
]
"""Classes that callers catch as ValueError: under both."""


@pytest.mark.parametrize("cls", ROOTED + VALUE_ERRORS, ids=lambda c: c.__name__)
def test_every_error_is_a_pumice_error_drawn_in_the_tree(cls: type[Exception]) -> None:
    assert issubclass(cls, PumiceError)
    assert pumice.errors.__doc__ is not None
    assert f" {cls.__name__} " in pumice.errors.__doc__


@pytest.mark.parametrize("cls", VALUE_ERRORS, ids=lambda c: c.__name__)
def test_value_error_mixins_stay(cls: type[Exception]) -> None:
    assert issubclass(cls, ValueError)


def test_raised_errors_are_caught_by_the_root() -> None:
    with pytest.raises(PumiceError, match="invalid quantity"):
        parse_quantity("1.5x")
    with pytest.raises(PumiceError, match="underflow"):
        Resource({"cpu": 1.0}) - Resource({"cpu": 2.0})
    with pytest.raises(PumiceError, match="unknown key"):
        parse_config("actions: allocate\nbogus: 1\n")
