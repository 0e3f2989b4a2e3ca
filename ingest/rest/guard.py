"""What a request must be before the REST API looks at it: from a host this server answers for, not from a
web page of another origin, a body only as JSON.

A browser lets any web page send a `text/plain` POST to 127.0.0.1 and, after a DNS rebinding, read the
answer under the page's own host name. So a request whose `Host` is not one of the server's names, or whose
`Origin` (which browsers send, and command-line clients do not) is another site, is refused; so is a body
that is not JSON, which a page can only send with a preflight the server never grants.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping

from ingest.errors import ConfigError, Problem

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def require_authentication(host: str, has_credentials: bool) -> None:
    """Listening beyond the loopback interface without credentials would open the API to the network."""
    if not is_loopback(host) and not has_credentials:
        raise ConfigError([Problem("listeners", f"listening on {host} (beyond this machine) needs basic "
                                                "authentication: give --credentials FILE (user=password lines), "
                                                "or listen on 127.0.0.1")])


class RequestGuard:
    """The checks, for a server listening on `host`; `allowed_hosts` adds the names clients use to reach it
    (needed when it listens beyond loopback; `*` allows any)."""

    def __init__(self, host: str, allowed_hosts: Iterable[str] = ()):
        extra = {h.strip().lower() for h in allowed_hosts if h.strip()}
        self.any_host = "*" in extra or (not is_loopback(host) and not extra)
        self.hosts = {h.lower() for h in LOOPBACK_NAMES} | {host.lower().strip("[]")} | extra

    def refusal(self, method: str, headers: Mapping[str, str], has_body: bool) -> tuple[int, str] | None:
        """(status, message) when the request is refused, else None. `headers`: names in lower case."""
        host = headers.get("host")
        if not self.any_host and (host is None or _host_name(host) not in self.hosts):
            return 403, (f"Host '{(host or '')[:100]}' is not a name of this server; add it to --allowed-hosts "
                         "if clients reach the server by it")
        origin = headers.get("origin")
        if origin is not None and (origin == "null" or _origin_host(origin) not in self.hosts):
            return 403, (f"cross-origin requests are not allowed (Origin '{origin[:100]}'); call the API from a "
                         "client, not from a web page of another site")
        if has_body:
            kind = headers.get("content-type", "").split(";")[0].strip().lower()
            if not (kind == "application/json" or kind.endswith("+json")):
                return 415, (f"the request body must be JSON (Content-Type: application/json), not "
                             f"'{kind[:100] or 'none'}'")
        return None


def _host_name(host: str) -> str:
    """The name in a Host header, without its port."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _origin_host(origin: str) -> str:
    rest = origin.strip().lower().split("://", 1)[-1]
    return _host_name(rest.split("/", 1)[0])
