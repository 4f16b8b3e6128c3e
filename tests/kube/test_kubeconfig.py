"""Reading the kubeconfig and the in-cluster account without kubernetes_asyncio's client.

The fields and their precedence follow kubectl's and kubernetes_asyncio's loaders (their
tests ``test_load_user_token``, ``test_load_user_pass_token``, ``test_ssl_with_relative_ssl_files``,
``test_data_given_data``, the in-cluster ``test_join_host_port`` and ``test_refresh_token``,
re-expressed); a user whose credentials come from a plugin is still read by those loaders.
"""

from __future__ import annotations

import base64
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from pumice.kube import KubeSettings, connect
from pumice.kube.kubeconfig import in_cluster, load_kubeconfig
from pumice.kube.rest import KubeConfigError


def _write(path: Path, cluster: dict[str, Any], user: dict[str, Any], **extra: Any) -> str:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": user}],
                "contexts": [
                    {"name": "x", "context": {"cluster": "c", "user": "u"}},
                    {"name": "other", "context": {"cluster": "c"}},
                ],
                "current-context": "x",
                **extra,
            }
        )
    )
    return str(path)


async def test_static_credentials_in_kubectl_order(tmp_path: Path) -> None:
    server = {"server": "http://127.0.0.1:1/"}
    (tmp_path / "tok").write_text("from-file")
    cases = [
        ({"token": "inline", "tokenFile": "tok"}, "Bearer inline"),
        ({"tokenFile": "tok"}, "Bearer from-file"),  # relative to the kubeconfig's folder
        ({"username": "ann", "password": "pw"}, "Basic " + base64.b64encode(b"ann:pw").decode()),
        ({"token": "t", "username": "ann", "password": "pw"}, "Bearer t"),
        ({}, None),
    ]
    for i, (user, expected) in enumerate(cases):
        config = await load_kubeconfig(_write(tmp_path / f"kc{i}", server, user))
        assert config.host == "http://127.0.0.1:1"
        assert await config.authorization() == expected
        assert config.refresher is None
    # another context: its user (none here) and cluster
    config = await load_kubeconfig(_write(tmp_path / "ctx", server, {"token": "t"}), "other")
    assert await config.authorization() is None


async def test_tls_fields_files_relative_and_data_decoded(tmp_path: Path) -> None:
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "ca.pem").write_text("CA")
    (tmp_path / "certs" / "client.pem").write_text("CERT")
    cluster = {
        "server": "https://api.example:6443",
        "certificate-authority": "certs/ca.pem",
        "tls-server-name": "kubernetes",
        "proxy-url": "http://proxy:3128",
    }
    user = {
        "client-certificate": "certs/client.pem",
        "client-key-data": base64.b64encode(b"KEY").decode(),
    }
    config = await load_kubeconfig(_write(tmp_path / "kc", cluster, user))
    assert config.ca_file == str(tmp_path / "certs" / "ca.pem")
    assert config.cert_file == str(tmp_path / "certs" / "client.pem")
    assert (config.key_data, config.key_file) == (b"KEY", None)
    assert (config.tls_server_name, config.proxy, config.verify_ssl) == (
        "kubernetes",
        "http://proxy:3128",
        True,
    )
    # the data wins over the file; insecure-skip-tls-verify turns verification off
    cluster["certificate-authority-data"] = base64.b64encode(b"CA-DATA").decode()
    cluster["insecure-skip-tls-verify"] = True
    config = await load_kubeconfig(_write(tmp_path / "kc2", cluster, user))
    assert (config.ca_data, config.ca_file, config.verify_ssl) == ("CA-DATA", None, False)
    # a file named but missing is an error naming it
    cluster["certificate-authority"] = "certs/missing.pem"
    del cluster["certificate-authority-data"]
    with pytest.raises(KubeConfigError, match=r"missing\.pem"):
        await load_kubeconfig(_write(tmp_path / "kc3", cluster, user))


async def test_bad_kubeconfigs_are_config_errors(tmp_path: Path) -> None:
    server = {"server": "http://127.0.0.1:1"}
    broken = {
        "no context": yaml.safe_dump({"clusters": [], "users": []}),
        "unknown context": yaml.safe_dump({"current-context": "nope", "contexts": []}),
        "no server": Path(_write(tmp_path / "ns", {}, {"token": "t"})).read_text(),
        "a list": "- 1\n",
    }
    for what, text in broken.items():
        path = tmp_path / what.replace(" ", "-")
        path.write_text(text)
        with pytest.raises(KubeConfigError, match="cannot load Kubernetes configuration"):
            await connect(KubeSettings(kubeconfig=str(path)))
    twice = [{"name": "c", "cluster": server}] * 2
    duplicated = _write(tmp_path / "dup", server, {}, clusters=twice)
    with pytest.raises(KubeConfigError, match="More than one cluster named c"):
        await connect(KubeSettings(kubeconfig=duplicated))


def _account(folder: Path, token: str = "first") -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "token").write_text(token)
    (folder / "ca.crt").write_text("CA")
    return folder


async def test_in_cluster_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    account = _account(tmp_path / "sa")
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    config = in_cluster(env, account)
    assert (config.host, config.ca_file) == ("https://10.0.0.1:443", str(account / "ca.crt"))
    assert await config.authorization() == "Bearer first"
    # the kubelet rotates the token: read again once a minute has passed, not before
    (account / "token").write_text("second")
    assert await config.authorization() == "Bearer first"
    later = time.monotonic() + 61
    monkeypatch.setattr("pumice.kube.kubeconfig.time.monotonic", lambda: later)
    assert await config.authorization() == "Bearer second"
    ipv6 = in_cluster({**env, "KUBERNETES_SERVICE_HOST": "fd00::1"}, account)
    assert ipv6.host == "https://[fd00::1]:443"


def test_in_cluster_without_its_parts(tmp_path: Path) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(KubeConfigError, match="host/port is not set"):
        in_cluster({}, _account(tmp_path / "a"))
    with pytest.raises(KubeConfigError, match="set but empty"):
        in_cluster({**env, "KUBERNETES_SERVICE_PORT": ""}, _account(tmp_path / "a"))
    with pytest.raises(KubeConfigError, match="token file does not exist"):
        in_cluster(env, tmp_path / "nothing")
    empty = _account(tmp_path / "b", token="")
    with pytest.raises(KubeConfigError, match="Token file exists but empty"):
        in_cluster(env, empty)


def test_static_kubeconfig_leaves_the_generated_client_unimported(tmp_path: Path) -> None:
    """kubernetes_asyncio's package imports its whole generated client (hundreds of
    modules): a daemon with a kubeconfig of static credentials never pays for it."""
    path = _write(tmp_path / "kc", {"server": "http://127.0.0.1:1"}, {"token": "t"})
    code = (
        "import asyncio, sys; import pumice.commands.run; "
        "from pumice.kube import KubeSettings, connect\n"
        "async def main():\n"
        f"    kube = await connect(KubeSettings(kubeconfig={path!r}))\n"
        "    await kube.close()\n"
        "asyncio.run(main()); print('kubernetes_asyncio' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.split() == ["False"], result.stderr
