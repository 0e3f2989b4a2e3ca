"""The REST API on HTTP: a threading server from the standard library, bound to 127.0.0.1 by default.

Basic authentication is optional, as with Kafka Connect's BasicAuthSecurityRestExtension: the credentials
file has its PropertyFileLoginModule format, one `user=password` per line. Without valid credentials a
request gets 401 and the text Kafka Connect answers ("User cannot access the resource.").
"""

from __future__ import annotations

import base64
import hmac
import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from ingest.config.loader import load_properties_file
from ingest.errors import ConfigError, Problem
from ingest.rest.app import ConnectApi, Response
from ingest.rest.guard import RequestGuard
from ingest.runtime import secrets

log = logging.getLogger("lakeconnect")
DEFAULT_LISTENER = "http://127.0.0.1:8083"
UNAUTHORIZED = "User cannot access the resource."
_MAX_BODY = 16 * 2**20  # a connector config is a few KB; refuse to buffer anything absurd


def parse_listener(listener: str) -> tuple[str, int]:
    """`http://host:port`, `host:port` or `:port` (Kafka's `listeners` form; an empty host is 127.0.0.1 here)."""
    text = listener.strip()
    if text.startswith("https://"):
        raise ConfigError([Problem("listeners", "https is not served; put a TLS proxy in front and listen on http")])
    text = text.removeprefix("http://")
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ConfigError([Problem("listeners", f"expected http://HOST:PORT, got '{listener}'")])
    return host.strip("[]") or "127.0.0.1", int(port)


def load_credentials(path: str) -> dict[str, str]:
    """users and passwords from a PropertyFileLoginModule file; the passwords become secrets to scrub."""
    if not Path(path).is_file():
        raise ConfigError([Problem("credentials", f"file not found: {path}")])
    users = load_properties_file(path)
    if not users:
        raise ConfigError([Problem("credentials", f"{path} has no user=password lines")])
    empty = [user for user, password in users.items() if not password.strip()]
    if empty:
        raise ConfigError([Problem("credentials", f"{path}: user '{empty[0]}' has an empty password; give every "
                                                  "user a password")])
    secrets.register(users.values())
    return users


class RestServer(ThreadingHTTPServer):
    daemon_threads = True
    max_connections = 64
    """Connections served at once (a thread each); one more is answered 503 and closed at once."""

    def __init__(self, api: ConnectApi, listener: str = DEFAULT_LISTENER, credentials: dict[str, str] | None = None,
                 allowed_hosts: list[str] | tuple[str, ...] = ()):
        self.api = api
        self.credentials = credentials or {}
        address = parse_listener(listener)
        self.guard = RequestGuard(address[0], allowed_hosts)
        self._slots = threading.BoundedSemaphore(self.max_connections)
        super().__init__(address, _Handler)

    def process_request(self, request, client_address) -> None:
        if not self._slots.acquire(blocking=False):
            body = json.dumps({"error_code": 503, "message": "too many connections; try again"}).encode()
            try:
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
            except OSError:
                pass
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def authorized(self, header: str | None) -> bool:
        if not self.credentials:
            return True
        if not header or not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:], validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        expected = self.credentials.get(user)
        return expected is not None and hmac.compare_digest(expected.encode(), password.encode())


class _Handler(BaseHTTPRequestHandler):
    server: RestServer
    protocol_version = "HTTP/1.1"
    timeout = 30  # seconds a connection may take to send a request (or stay idle between two): no slow loris

    def _serve(self) -> None:
        text = (self.headers.get("Content-Length") or "0").strip()
        if not text.isdigit() or self.headers.get("Transfer-Encoding"):
            self._refuse(400, "Content-Length must be a non-negative number (and no Transfer-Encoding)")
            return
        length = int(text)
        headers = {k.lower(): v for k, v in self.headers.items()}
        refusal = self.server.guard.refusal(self.command, headers, length > 0)
        if refusal:
            self._refuse(*refusal)
            return
        if not self.server.authorized(self.headers.get("Authorization")):
            self._refuse(401, UNAUTHORIZED, plain=True)
            return
        if length > _MAX_BODY:
            self._refuse(413, f"request body too large (at most {_MAX_BODY // 2**20} MiB)")
            return
        body = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        self._send_json(self.server.api.handle(self.command, url.path, parse_qs(url.query), body))

    def _refuse(self, status: int, message: str, *, plain: bool = False) -> None:
        """An answer before the body is read: the connection closes, so an unread body is never taken for the
        next request."""
        self.close_connection = True
        payload = message.encode() if plain else json.dumps({"error_code": status, "message": message}).encode()
        self._send(status, payload, "text/plain" if plain else "application/json", close=True)

    do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = _serve

    def _send_json(self, response: Response) -> None:
        if response.raw is not None:
            self._send(response.status, response.raw.encode(), response.content_type)
        elif response.body is None:
            self._send(response.status, b"", None)
        else:
            self._send(response.status, json.dumps(response.body).encode(), response.content_type)

    def _send(self, status: int, payload: bytes, content_type: str | None, *, close: bool = False) -> None:
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        if status == 401:
            self.send_header("WWW-Authenticate", 'Basic realm="lakeconnect"')
        if close:
            self.send_header("Connection", "close")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args) -> None:  # Connect's request log, at debug, scrubbed
        log.debug("REST %s", secrets.scrub(format % args))

