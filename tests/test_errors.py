"""``pumice.PumiceError`` (in ``pumice.plain``): one root for every exception pumice raises."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pumice.plain
from pumice.commands.cluster_input import LiveError
from pumice.framework.argspec import ArgumentSpecError
from pumice.framework.arguments import ArgumentNameError
from pumice.framework.config import AddressError, ConfigError, FlagError
from pumice.framework.configfile import parse_config
from pumice.framework.configparse import split_host_port
from pumice.framework.host import PluginConflictError, PluginError, PluginLoadError
from pumice.framework.session import PluginContractError, SessionError
from pumice.framework.statement import StatementError
from pumice.framework.yamlsource import YamlSourceError
from pumice.kube.lease import LeaseTimingError
from pumice.kube.rest import KubeError
from pumice.manifests import ManifestError
from pumice.model import JobInfo, QueueInfo, TaskInfo
from pumice.model.node import NodeAccountingError
from pumice.model.objects import JobTaskError
from pumice.model.quantity import DurationError, QuantityError, parse_quantity
from pumice.model.resource import Resource, ResourceError, ResourceUnderflow
from pumice.model.snapshot import SnapshotError
from pumice.model.table import NodeTableError
from pumice.plain import ObjectError, PumiceError
from pumice.sim.cli import BadInput
from pumice.sim.defaults import TemplateError
from pumice.sim.errors import ApiError, SimSettingsError
from pumice.sim.objects import BadTime, parse_time
from pumice.sim.quantities import BadQuantity
from pumice.sim.store import StoreKeyError

ROOT = Path(__file__).resolve().parent.parent

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
    LiveError,
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
    AddressError,
    ObjectError,
    BadTime,
]
"""Classes that callers catch as ValueError: under both."""


@pytest.mark.parametrize("cls", ROOTED + VALUE_ERRORS, ids=lambda c: c.__name__)
def test_every_error_is_a_pumice_error_drawn_in_the_tree(cls: type[Exception]) -> None:
    assert issubclass(cls, PumiceError)
    assert pumice.plain.__doc__ is not None
    assert f" {cls.__name__} " in pumice.plain.__doc__


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


def test_a_malformed_object_is_an_object_error_with_its_cause() -> None:
    # What the cluster holds reaches the model as it is: a PodGroup without a name, a Queue
    # whose weight is not a number, a pod with a bad quantity. The cache turns each into a
    # reason on the object; it must never see a bare KeyError or TypeError.
    with pytest.raises(ObjectError, match="'name'") as missing:
        JobInfo.from_podgroup({"metadata": {"namespace": "ns"}, "spec": {}})
    assert isinstance(missing.value.__cause__, KeyError)
    with pytest.raises(ObjectError) as wrong:
        QueueInfo.from_queue({"metadata": {"name": "q"}, "spec": {"weight": [1]}})
    assert isinstance(wrong.value.__cause__, TypeError)
    pod = {"metadata": {"name": "p", "uid": "u"}, "spec": {"containers": [{"name": "c"}]}}
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1.5x"}}
    with pytest.raises(ObjectError, match="invalid quantity") as bad:
        TaskInfo.from_pod(pod)
    assert isinstance(bad.value.__cause__, QuantityError)


def test_split_host_port_refuses_with_an_address_error() -> None:
    with pytest.raises(AddressError, match="expected host:port"):
        split_host_port("localhost")


def test_the_sims_time_parser_refuses_with_a_bad_time() -> None:
    with pytest.raises(BadTime, match="bad time 'yesterday'"):
        parse_time("yesterday")
    assert parse_time("1970-01-01T00:01:00Z") == 60.0


BUILTINS = {"ValueError", "KeyError", "TypeError", "RuntimeError", "LookupError", "Exception"}
"""Raised bare, these cross module boundaries unnamed: each has a PumiceError subclass instead
(``AttributeError`` for a read-only object, ``NotImplementedError`` and ``AssertionError`` for
a bug, are Python's own protocol and stay)."""


def test_no_module_raises_a_bare_builtin_error() -> None:
    bare: list[str] = []
    for folder in ("scheduler", "plugins", "actions"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Raise) and node.exc is not None:
                    raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                    if isinstance(raised, ast.Name) and raised.id in BUILTINS:
                        bare.append(f"{path.relative_to(ROOT)}:{node.lineno} {raised.id}")
    assert bare == []


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (NodeTableError, ValueError),
        (JobTaskError, KeyError),
        (FlagError, ValueError),
        (ArgumentNameError, TypeError),
        (ArgumentSpecError, ValueError),
        (LeaseTimingError, ValueError),
        (SimSettingsError, ValueError),
        (StoreKeyError, KeyError),
    ],
    ids=lambda c: c.__name__,
)
def test_errors_that_replaced_bare_ones_keep_their_builtin(
    cls: type[Exception], builtin: type[Exception]
) -> None:
    assert issubclass(cls, PumiceError) and issubclass(cls, builtin)
    assert pumice.plain.__doc__ is not None and f" {cls.__name__} " in pumice.plain.__doc__
