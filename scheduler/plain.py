"""Kubernetes objects as pumice holds them: plain dicts, as orjson or YAML parsed them.

pumice never turns an object into the API client's generated models (see ARCHITECTURE.md,
"Speed by design"); every layer passes the parsed JSON around as it came. ``Obj`` names that
type once, so a reader sees at a glance that a parameter is a whole object (a Pod, a Node, a
PodGroup...) and not any mapping.

Like ``pumice.errors``, this module imports nothing from pumice, so every layer (the model and
the simulated API server included) can use it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Obj"]

Obj = dict[str, Any]
"""One Kubernetes object (or a part of one, such as its ``metadata``) as a plain dict."""
