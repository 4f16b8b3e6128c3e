"""A throw-away certificate authority and serving certificate for HTTPS on loopback.

Why the simulated server needs TLS at all: kubectl (client-go's kubeconfig loader) sends no
credentials of any kind -- bearer token, client certificate, impersonation -- to a server whose
URL is plain ``http://``. With ``--authorization rbac`` each identity is a bearer token, so the
server then listens on ``https://127.0.0.1`` with a certificate signed by a CA made at start-up;
the kubeconfigs it writes carry that CA (``certificate-authority-data``), so kubectl and
kubernetes_asyncio verify the server as they would a real one. Nothing is written to disk
except, briefly, the key for ``ssl`` to load (it only reads files).
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALID_FOR = datetime.timedelta(days=30)


@dataclass(frozen=True)
class ServingCert:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        with tempfile.TemporaryDirectory(prefix="pumice-sim-tls-") as tmp:
            cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
            cert.write_bytes(self.cert_pem + self.ca_pem)
            key.write_bytes(self.key_pem)
            key.chmod(0o600)
            context.load_cert_chain(cert, key)
        return context


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_serving_cert(host: str = "127.0.0.1") -> ServingCert:
    """A fresh CA and a certificate for ``host`` (an IP) and ``localhost`` signed by it."""
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + _VALID_FOR
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("pumice-sim-ca")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("pumice-sim"))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address(host)), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return ServingCert(
        ca.public_bytes(pem),
        cert.public_bytes(pem),
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )
