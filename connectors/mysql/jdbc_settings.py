"""Spark's JDBC reader's connection to the server, which reads an incremental snapshot's chunks
(incremental_snapshot.py): its URL, with database.ssl.mode in MariaDB Connector/J 2.7's terms, and its
properties. The connector's own connections (pymysql) take config.connection_settings instead."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectors.mysql import config as C


def jdbc_url(config, tls_settings: Mapping[str, Any], conn) -> str:
    """`tls_settings`: the connection settings' "tls" (config.connection_settings); `conn`: the task's own
    pymysql connection, whose TLS decides database.ssl.mode=preferred."""
    # jdbc:mysql: makes Spark use its MySQL dialect (backquoted names); Debian's MariaDB driver takes it. The
    # TLS options go in the URL (redacted wherever Spark shows it): Spark drops them from the properties of
    # a read with predicates.
    tls_options = jdbc_tls(config, tls_settings, conn)
    return (f"jdbc:mysql://{config[C.HOSTNAME]}:{int(config[C.PORT])}/"
            + ("?" + "&".join(f"{k}={v}" for k, v in tls_options.items()) if tls_options else ""))


def jdbc_tls(config, tls_settings: Mapping[str, Any], conn) -> dict[str, str]:
    """database.ssl.mode in MariaDB Connector/J 2.7's terms (preferred: TLS when the driver's own connection
    got it, the certificate unchecked)."""
    t = tls_settings
    secure = t["mode"] != "disabled" and (t["mode"] != "preferred" or bool(getattr(conn, "_secure", False)))
    if not secure:
        return {"useSsl": "false"}
    out = {"useSsl": "true"}
    if t["mode"] in ("preferred", "required"):
        out["trustServerCertificate"] = "true"
    elif t["ca"]:
        out["serverSslCert"] = t["ca"]  # the PEM text itself, which the driver takes
    if t["mode"] == "verify_ca":
        out["disableSslHostnameVerification"] = "true"
    if config[C.SSL_KEYSTORE]:
        out.update(keyStore=str(config[C.SSL_KEYSTORE]), keyStoreType="PKCS12",
                   keyStorePassword=config.secret(C.SSL_KEYSTORE_PASSWORD) or "")
    return out


def jdbc_properties(config) -> dict[str, str]:
    return {"user": config[C.USER], "password": config.secret(C.PASSWORD) or "",
            "driver": "org.mariadb.jdbc.Driver", "fetchsize": "10000"}
