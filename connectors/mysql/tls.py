"""TLS to the server as Debezium's MySQL connector asks for it (`database.ssl.mode`, with MySQL Connector/J's
meaning of each mode) and the trust and key stores it names.

- disabled: never TLS. preferred (Debezium's default): TLS when the server offers it, its certificate not
  checked. required: TLS or no connection, the certificate not checked. verify_ca: also the certificate
  against the trust store's CAs (the system's when there is none). verify_identity: also the host name.
- `database.ssl.truststore` / `database.ssl.keystore`: a PKCS12 store, Java's default store type (what
  `keytool` writes), opened with its password; or PEM files. A JKS store is refused with the command that
  converts it. The key store holds the client certificate and key for servers that ask for one.

The stores are read once, on the driver, into PEM text that travels with the connection settings (a
redacted Spark option), so a connection on an executor needs no file. Nothing of a store's content is ever
shown in a message.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Mapping
from typing import Any

MODES = ("disabled", "preferred", "required", "verify_ca", "verify_identity")
MAX_STORE_BYTES = 1 << 20
JKS_MAGIC = b"\xfe\xed\xfe\xed"


class StoreError(ValueError):
    """A trust or key store that cannot be used: args (key, message)."""


def settings_of(mode: str, truststore: str | None, truststore_password: str | None, keystore: str | None,
                keystore_password: str | None) -> dict[str, Any]:
    """The TLS part of the connection settings: {"mode", "ca", "cert", "key"} (PEM text or None)."""
    mode = (mode or "preferred").strip().lower()
    out: dict[str, Any] = {"mode": mode, "ca": None, "cert": None, "key": None}
    if mode == "disabled":
        return out
    if truststore:
        out["ca"] = _certificates(_read("database.ssl.truststore", truststore), truststore_password,
                                  "database.ssl.truststore")
    if keystore:
        out["cert"], out["key"] = _key_and_certificate(_read("database.ssl.keystore", keystore), keystore_password,
                                                       "database.ssl.keystore")
    return out


def pymysql_kwargs(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Connection settings (with their "tls" part) as pymysql.connect's arguments."""
    out = {k: v for k, v in settings.items() if k != "tls"}
    tls = settings.get("tls") or {"mode": "preferred"}
    mode = tls["mode"]
    if mode == "disabled":
        out["ssl_disabled"] = True
    elif mode != "preferred" or tls.get("cert"):
        out["ssl"] = context(tls)
    return out  # preferred: pymysql's own default, TLS when the server offers it, unchecked


def context(tls: Mapping[str, Any]) -> ssl.SSLContext:
    mode = tls["mode"]
    if mode in ("verify_ca", "verify_identity"):
        ctx = ssl.create_default_context(cadata=tls["ca"]) if tls.get("ca") else ssl.create_default_context()
        ctx.check_hostname = mode == "verify_identity"
        ctx.verify_mode = ssl.CERT_REQUIRED
    else:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if tls.get("cert"):
        fd, path = tempfile.mkstemp(suffix=".pem")  # load_cert_chain reads files only; 0600, gone at once
        try:
            with os.fdopen(fd, "w") as f:
                f.write(tls["key"] + tls["cert"])
            ctx.load_cert_chain(path)
        finally:
            os.unlink(path)
    return ctx


def _read(key: str, path: str) -> bytes:
    try:
        if os.path.getsize(path) > MAX_STORE_BYTES:
            raise StoreError(key, f"is larger than {MAX_STORE_BYTES >> 10} KiB: not a trust or key store")
        with open(path, "rb") as f:
            return f.read(MAX_STORE_BYTES + 1)
    except OSError as e:
        raise StoreError(key, f"cannot be read ({e.strerror or type(e).__name__})") from None


def _certificates(data: bytes, password: str | None, key: str) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding

    if data.lstrip().startswith(b"-----BEGIN"):
        certs = _pem_certificates(data, key)
    else:
        store = _pkcs12(data, password, key)
        certs = [c.certificate for c in store.additional_certs] + ([store.cert.certificate] if store.cert else [])
    if not certs:
        raise StoreError(key, "holds no certificate")
    return "".join(c.public_bytes(Encoding.PEM).decode() for c in certs)


def _key_and_certificate(data: bytes, password: str | None, key: str) -> tuple[str, str]:
    from cryptography.hazmat.primitives.serialization import (
        Encoding, NoEncryption, PrivateFormat, load_pem_private_key,
    )

    if data.lstrip().startswith(b"-----BEGIN"):
        certs = _pem_certificates(data, key)
        try:
            private = load_pem_private_key(data, password.encode() if password else None)
        except (ValueError, TypeError):
            raise StoreError(key, "holds no private key this password opens") from None
    else:
        store = _pkcs12(data, password, key)
        if store.key is None or store.cert is None:
            raise StoreError(key, "holds no private key with its certificate")
        private, certs = store.key, [store.cert.certificate] + [c.certificate for c in store.additional_certs]
    if not certs:
        raise StoreError(key, "holds no certificate")
    pem_key = private.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()
    return "".join(c.public_bytes(Encoding.PEM).decode() for c in certs), pem_key


def _pem_certificates(data: bytes, key: str) -> list:
    from cryptography import x509

    try:
        return x509.load_pem_x509_certificates(data) if b"CERTIFICATE-----" in data else []
    except ValueError:
        raise StoreError(key, "is a PEM file whose certificates cannot be read") from None


def _pkcs12(data: bytes, password: str | None, key: str):
    from cryptography.hazmat.primitives.serialization import pkcs12

    if data.startswith(JKS_MAGIC):
        raise StoreError(key, "is a JKS store, which this connector does not read: convert it to PKCS12, Java's "
                              "default store type (keytool -importkeystore -srckeystore <store.jks> "
                              "-destkeystore <store.p12> -deststoretype PKCS12), and name the new store")
    try:
        return pkcs12.load_pkcs12(data, password.encode() if password else None)
    except (ValueError, TypeError):
        raise StoreError(key, "is neither a PEM file nor a PKCS12 store that its password opens (check "
                              f"{key}.password)") from None
