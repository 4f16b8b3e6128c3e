"""What the API server does to an object before storing it: validation and defaults.

This covers the parts of the real server's validation, defaulting and admission plugins that
a scheduler can observe: name rules and ``generateName``; pod defaults (scheduler name, restart
policy, grace period, requests defaulted from limits, QoS class, the not-ready/unreachable
tolerations, ``PodScheduled=False/SchedulingGated``, pod affinity terms' ``matchLabelKeys`` /
``mismatchLabelKeys`` merged into their selectors as ``pumice.sim.pods.merge_label_keys`` says); the
Priority admission plugin (resolving ``priorityClassName`` into ``spec.priority`` or refusing
an unknown class); pod spec immutability; Namespace, PriorityClass and Volcano Queue defaults;
the storage kinds' defaults and the DefaultStorageClass plugin (``pumice.sim.volumerules``);
and what a kubelet (or KWOK) fills in when a node registers (Ready condition, allocatable, an
InternalIP).
"""

from __future__ import annotations

import random
import re
from typing import Any

from pumice.sim import volumerules
from pumice.sim.errors import ApiError, forbidden, invalid
from pumice.sim.objects import Obj, get_path, meta, now_rfc3339, set_condition, validate_events_v1
from pumice.sim.pods import merge_label_keys
from pumice.sim.resources import (
    EVENTS_V1,
    NAMESPACES,
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    PRIORITY_CLASSES,
    QUEUES,
    STORAGE_CLASSES,
    ResourceType,
)
from pumice.sim.store import Store

Problem = tuple[str, str, str]

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""The label the API server keeps on every Namespace, equal to its name."""

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
POD_UPDATE_MSG = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)"
)

_POD_SPEC_DEFAULTS: dict[str, Any] = {
    "schedulerName": "default-scheduler",
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "dnsPolicy": "ClusterFirst",
    "securityContext": {},
    "enableServiceLinks": True,
    "serviceAccountName": "default",
}

SYSTEM_PRIORITY_CLASSES = {
    "system-cluster-critical": 2000000000,
    "system-node-critical": 2000001000,
}


def name_problems(rtype: ResourceType, name: str) -> list[Problem]:
    # events and RBAC objects (``system:basic-user``) only need to be a valid path segment
    if rtype.plural == "events" or rtype.group == "rbac.authorization.k8s.io":
        if name in (".", "..") or "/" in name or "%" in name:
            return [
                (
                    "metadata.name",
                    "FieldValueInvalid",
                    f"Invalid value: \"{name}\": may not contain '/' or '%'",
                )
            ]
        return []
    if rtype is NAMESPACES:
        if len(name) > 63 or not _LABEL.match(name):
            return [("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": {LABEL_MSG}')]
        return []
    if len(name) > 253 or not _SUBDOMAIN.match(name):
        return [("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": {SUBDOMAIN_MSG}')]
    return []


def generated_name(base: str, rng: random.Random) -> str:
    return base[:58] + "".join(rng.choice(_SUFFIX_ALPHABET) for _ in range(5))


def _problem_error(rtype: ResourceType, name: str, problems: list[Problem]) -> ApiError:
    return invalid(rtype.kind, rtype.group, name=name, causes=problems)


class Admission:
    """Defaults and validation for creates and updates, per resource type."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.next_node_ip = 0

    # -- create --------------------------------------------------------------------------

    def validate_view(self, rtype: ResourceType, obj: Obj) -> None:
        """Checks made on the object as the client sent it (before any conversion)."""
        if rtype is EVENTS_V1:
            problems = validate_events_v1(obj)
            if problems:
                raise _problem_error(rtype, str(meta(obj).get("name", "")), problems)

    def on_create(self, rtype: ResourceType, obj: Obj, seeding: bool = False) -> Obj:
        """Validate and default a new object (already carrying its final name).

        ``seeding`` accepts what a dump of a real cluster contains: a pod whose
        ``spec.priority`` is set keeps it even if its PriorityClass is not in the dump.
        """
        name = str(meta(obj).get("name", ""))
        problems = name_problems(rtype, name)
        if problems:
            raise _problem_error(rtype, name, problems)
        if rtype is PODS:
            return self._pod_create(obj, seeding)
        if rtype is NODES:
            return self._node_create(obj)
        if rtype is NAMESPACES:
            return self._namespace_create(obj)
        if rtype is PRIORITY_CLASSES:
            return self._priority_class_create(obj)
        if rtype is QUEUES:
            return self._queue_create(obj)
        if rtype is PERSISTENT_VOLUME_CLAIMS:
            classes = self.store.table(STORAGE_CLASSES.table).values()
            obj = volumerules.with_default_class(obj, classes)
        return volumerules.defaults(rtype, obj)

    def _pod_create(self, pod: Obj, seeding: bool) -> Obj:
        name = str(meta(pod).get("name", ""))
        pod = merge_label_keys(pod)  # PrepareForCreate: affinity label keys into selectors
        spec = dict(pod.get("spec") or {})
        problems: list[Problem] = []
        containers = spec.get("containers")
        if not isinstance(containers, list) or not containers:
            problems.append(("spec.containers", "FieldValueRequired", "Required value"))
            containers = []
        for group in ("initContainers", "containers"):
            for i, c in enumerate(spec.get(group) or []):
                if not isinstance(c, dict) or not c.get("name"):
                    problems.append(
                        (f"spec.{group}[{i}].name", "FieldValueRequired", "Required value")
                    )
                elif not c.get("image"):
                    problems.append(
                        (f"spec.{group}[{i}].image", "FieldValueRequired", "Required value")
                    )
        if problems:
            raise _problem_error(PODS, name, problems)
        for group in ("initContainers", "containers"):
            if spec.get(group):
                spec[group] = [_container_defaults(c) for c in spec[group]]
        # Go defaulting fills zero values, so "" counts as unset
        for field, default in _POD_SPEC_DEFAULTS.items():
            if spec.get(field) in (None, ""):
                spec[field] = default
        spec["tolerations"] = _default_tolerations(spec.get("tolerations"))
        if not (seeding and isinstance(spec.get("priority"), int)):
            self._resolve_priority(name, spec)
        status = dict(pod.get("status") or {})
        status.setdefault("phase", "Pending")
        status.setdefault("qosClass", qos_class(spec))
        if spec.get("schedulingGates") and not spec.get("nodeName"):
            status["conditions"] = set_condition(
                status.get("conditions"),
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates",
                    "lastProbeTime": None,
                },
                now_rfc3339(),
            )
        return {**pod, "spec": spec, "status": status}

    def _resolve_priority(self, pod_name: str, spec: Obj) -> None:
        class_name = spec.get("priorityClassName")
        table = self.store.table(PRIORITY_CLASSES.table)
        if class_name:
            pc = table.get(("", str(class_name)))
            if pc is None:
                raise forbidden(
                    "pods",
                    "",
                    name=pod_name,
                    why=f"no PriorityClass with name {class_name} was found",
                )
        else:
            pc = next((p for p in table.values() if p.get("globalDefault") is True), None)
        value = int(pc.get("value", 0)) if pc is not None else 0
        given = spec.get("priority")
        if given is not None and given != value:
            raise forbidden(
                "pods",
                "",
                name=pod_name,
                why=f"the integer value of priority ({given}) must not be provided in pod spec; "
                f"priority admission controller computed {value} from the given PriorityClass name",
            )
        spec["priority"] = value
        if pc is not None:
            if not class_name:
                spec["priorityClassName"] = meta(pc).get("name")
            spec.setdefault("preemptionPolicy", pc.get("preemptionPolicy", "PreemptLowerPriority"))
        else:
            spec.setdefault("preemptionPolicy", "PreemptLowerPriority")

    def _node_create(self, node: Obj) -> Obj:
        status = dict(node.get("status") or {})
        capacity = status.get("capacity") or {}
        if "allocatable" not in status and capacity:
            status["allocatable"] = dict(capacity)
        now = now_rfc3339()
        conditions = status.get("conditions") or []
        if not any(isinstance(c, dict) and c.get("type") == "Ready" for c in conditions):
            status["conditions"] = [
                *conditions,
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                },
            ]
        if not status.get("addresses"):
            self.next_node_ip += 1
            n = self.next_node_ip
            ip = f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"
            status["addresses"] = [
                {"type": "InternalIP", "address": ip},
                {"type": "Hostname", "address": str(meta(node).get("name", ""))},
            ]
        info = dict(status.get("nodeInfo") or {})
        node_uid = str(meta(node).get("uid", "")).replace("-", "")
        info.setdefault("machineID", node_uid)
        info.setdefault("systemUUID", str(meta(node).get("uid", "")))
        info.setdefault("bootID", node_uid[::-1])
        status.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": 10250}})
        info.setdefault("kubeletVersion", "v1.32.0-pumice-sim")
        info.setdefault("kubeProxyVersion", "")
        info.setdefault("osImage", "pumice simulated node")
        info.setdefault("kernelVersion", "")
        info.setdefault("containerRuntimeVersion", "sim://1.0")
        info.setdefault("operatingSystem", "linux")
        info.setdefault("architecture", "amd64")
        status["nodeInfo"] = info
        return {**node, "spec": dict(node.get("spec") or {}), "status": status}

    def _namespace_create(self, ns: Obj) -> Obj:
        name = str(meta(ns).get("name", ""))
        labels = dict(meta(ns).get("labels") or {})
        labels[NAMESPACE_NAME_LABEL] = name
        spec = dict(ns.get("spec") or {})
        spec.setdefault("finalizers", ["kubernetes"])
        return {
            **ns,
            "metadata": {**meta(ns), "labels": labels},
            "spec": spec,
            "status": {"phase": "Active", **(ns.get("status") or {})},
        }

    def _priority_class_create(self, pc: Obj) -> Obj:
        name = str(meta(pc).get("name", ""))
        if not isinstance(pc.get("value"), int) or isinstance(pc.get("value"), bool):
            raise _problem_error(
                PRIORITY_CLASSES, name, [("value", "FieldValueRequired", "Required value")]
            )
        if name.startswith("system-") and name not in SYSTEM_PRIORITY_CLASSES:
            raise forbidden(
                "priorityclasses",
                "scheduling.k8s.io",
                name=name,
                why="priority class names with 'system-' prefix are reserved for system use only",
            )
        if pc.get("globalDefault") is True:
            for other in self.store.table(PRIORITY_CLASSES.table).values():
                if other.get("globalDefault") is True:
                    taken = meta(other).get("name")
                    why = (
                        f"Forbidden: PriorityClass {taken} is already marked as default. "
                        "Only one default can exist"
                    )
                    problem = ("globalDefault", "FieldValueForbidden", why)
                    raise _problem_error(PRIORITY_CLASSES, name, [problem])
        return {"preemptionPolicy": "PreemptLowerPriority", **pc}

    def _queue_create(self, queue: Obj) -> Obj:
        spec = {"weight": 1, "reclaimable": True, **(queue.get("spec") or {})}
        status = dict(queue.get("status") or {})
        status.setdefault("state", "Open")
        return {**queue, "spec": spec, "status": status}

    # -- update --------------------------------------------------------------------------

    def on_update(self, rtype: ResourceType, old: Obj, new: Obj, subresource: str) -> Obj:
        """Default the new object as decoding does, then refuse what the real server refuses
        (pod spec immutability). A replaced pod keeps the priority admission gave it."""
        if rtype is PODS and subresource == "" and isinstance(new.get("spec"), dict):
            new = {**new, "spec": _pod_spec_update_defaults(old.get("spec") or {}, new["spec"])}
            _check_pod_update(old, new)
        if rtype is NAMESPACES:
            # as the API server does on every write: the name label cannot be changed or removed
            labels = {**(meta(new).get("labels") or {})}
            labels[NAMESPACE_NAME_LABEL] = str(meta(new).get("name") or meta(old).get("name"))
            new = {**new, "metadata": {**meta(new), "labels": labels}}
        return new


def _pod_spec_update_defaults(old_spec: Obj, new_spec: Obj) -> Obj:
    spec = dict(new_spec)
    for group in ("initContainers", "containers"):
        if isinstance(spec.get(group), list):
            spec[group] = [_container_defaults(c) for c in spec[group]]
    for field, default in _POD_SPEC_DEFAULTS.items():
        if spec.get(field) in (None, ""):
            spec[field] = default
    spec["tolerations"] = _default_tolerations(spec.get("tolerations"))
    for field in ("priority", "preemptionPolicy"):
        if spec.get(field) is None and old_spec.get(field) is not None:
            spec[field] = old_spec[field]
    return spec


def _container_defaults(container: Any) -> Any:
    if not isinstance(container, dict):
        return container
    c = dict(container)
    image = str(c.get("image", ""))
    tag = image.rsplit("/", 1)[-1]
    if "imagePullPolicy" not in c:
        c["imagePullPolicy"] = (
            "Always" if ":" not in tag or tag.endswith(":latest") else "IfNotPresent"
        )
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    resources = dict(c.get("resources") or {})
    limits = resources.get("limits") or {}
    if limits:
        requests = dict(resources.get("requests") or {})
        for res, amount in limits.items():
            requests.setdefault(res, amount)
        resources["requests"] = requests
    c["resources"] = resources
    return c


_NOT_READY = "node.kubernetes.io/not-ready"
_UNREACHABLE = "node.kubernetes.io/unreachable"


def _default_tolerations(tolerations: Any) -> list[Any]:
    out = list(tolerations or [])
    for key in (_NOT_READY, _UNREACHABLE):
        if not any(
            isinstance(t, dict)
            and t.get("key") == key
            and t.get("effect") in (None, "", "NoExecute")
            for t in out
        ) and not any(
            isinstance(t, dict) and not t.get("key") and t.get("operator") == "Exists" for t in out
        ):
            out.append(
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            )
    return out


def qos_class(spec: Obj) -> str:
    containers = [
        c
        for c in (spec.get("containers") or []) + (spec.get("initContainers") or [])
        if isinstance(c, dict)
    ]
    any_set = False
    guaranteed = True
    for c in containers:
        requests = get_path(c, "resources", "requests") or {}
        limits = get_path(c, "resources", "limits") or {}
        if requests or limits:
            any_set = True
        for res in ("cpu", "memory"):
            if res not in limits or requests.get(res, limits.get(res)) != limits.get(res):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _strip_mutable(spec: Obj) -> Obj:
    out = dict(spec)
    for name in (
        "activeDeadlineSeconds",
        "tolerations",
        "terminationGracePeriodSeconds",
        "schedulingGates",
    ):
        out.pop(name, None)
    for group in ("containers", "initContainers"):
        if isinstance(out.get(group), list):
            out[group] = [
                {k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c
                for c in out[group]
            ]
    return out


def _check_pod_update(old: Obj, new: Obj) -> None:
    old_spec = old.get("spec") or {}
    new_spec = new.get("spec") or {}
    name = str(meta(old).get("name", ""))
    if _strip_mutable(old_spec) != _strip_mutable(new_spec):
        raise invalid(
            "Pod",
            "",
            name=name,
            causes=[("spec", "FieldValueForbidden", f"Forbidden: {POD_UPDATE_MSG}")],
        )
    old_tol = old_spec.get("tolerations") or []
    new_tol = new_spec.get("tolerations") or []
    if any(t not in new_tol for t in old_tol):
        raise invalid(
            "Pod",
            "",
            name=name,
            causes=[
                (
                    "spec.tolerations",
                    "FieldValueForbidden",
                    "Forbidden: existing toleration can not be modified except its "
                    "tolerationSeconds",
                )
            ],
        )
    old_gates = old_spec.get("schedulingGates") or []
    new_gates = new_spec.get("schedulingGates") or []
    if any(g not in old_gates for g in new_gates):
        raise invalid(
            "Pod",
            "",
            name=name,
            causes=[
                (
                    "spec.schedulingGates",
                    "FieldValueForbidden",
                    "Forbidden: only deletion is allowed, but found new scheduling gate",
                )
            ],
        )
