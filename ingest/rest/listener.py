"""Where a REST server listens: Kafka's `listeners` form, parsed without the server (a client of the worker
reads its URL with no HTTP server imported)."""

from __future__ import annotations

from dataclasses import dataclass

from ingest.errors import ConfigError, Problem

DEFAULT_LISTENER = "http://127.0.0.1:8083"


@dataclass(frozen=True)
class Listener:
    scheme: str  # http or https
    host: str
    port: int


def parse_listener(listener: str) -> Listener:
    """`http://host:port`, `https://host:port`, `host:port` or `:port` (Kafka's `listeners` form; an empty host
    is 127.0.0.1 here)."""
    text = listener.strip()
    scheme = "https" if text.startswith("https://") else "http"
    text = text.removeprefix("https://").removeprefix("http://")
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536 or "/" in host:
        raise ConfigError([Problem("listeners", f"expected http://HOST:PORT or https://HOST:PORT, got "
                                                f"'{listener[:200]}'")])
    return Listener(scheme, host.strip("[]") or "127.0.0.1", int(port))
