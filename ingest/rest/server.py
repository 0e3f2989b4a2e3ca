"""The REST API on HTTP(S): an ASGI application served by uvicorn, bound to 127.0.0.1 by default.

uvicorn parses requests (HTTP/1.1 through h11: one Content-Length or chunked body, no smuggling), keeps
connections alive and bounds how many it serves; this module adds what a Connect worker's REST server has
to: the request guard (Host, Origin, JSON bodies), basic authentication, body and time limits, TLS, and
each call run on a thread of a small pool, so a slow call (a Delta commit on an object store) holds up
only the calls on the same connector.

Basic authentication is optional, as with Kafka Connect's BasicAuthSecurityRestExtension: the credentials
file has its PropertyFileLoginModule format, one `user=password` per line. Without valid credentials a
request gets 401 and the text Kafka Connect answers ("User cannot access the resource.").
"""

from __future__ import annotations

import asyncio
import base64
import hmac
import json
import logging
import signal
import socket
import ssl
from collections.abc import Callable
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from ingest.config.loader import load_properties_file
from ingest.errors import ConfigError, Problem
from ingest.rest.app import ConnectApi, Response
from ingest.rest.guard import RequestGuard
from ingest.rest.listener import DEFAULT_LISTENER, parse_listener  # noqa: F401 - DEFAULT_LISTENER: its users
from ingest.runtime.runs import MAX_BACKLOG
from ingest.config import secrets

log = logging.getLogger("lakeconnect")
UNAUTHORIZED = "User cannot access the resource."
MAX_BODY = 16 * 2**20
"""Bytes a request body may have: a connector config is a few KB, a registry schema rarely a MB."""
MAX_CONNECTIONS = 256
"""Connections (and calls in progress) served at once; uvicorn answers one more 503 and closes it."""
THREADS = 8
"""Calls running at once; more wait for a thread (each is a few small Delta reads or one commit)."""
CLIENT_TIMEOUT = 30.0
"""Seconds a client may take to send a request's line and headers, or its body: no slow loris."""
HEARTBEAT_S = 15.0
"""Seconds of a run without a line after which its stream gets a blank one (clients give up after 120)."""
REQUEST_TIMEOUT = 90.0
"""Seconds a call may take before its answer is a 500 "Request timed out" (Kafka Connect's 90 s)."""


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


@dataclass(frozen=True)
class Tls:
    """A server certificate (PEM, its chain after it) and its private key (PEM; in the same file when
    `keyfile` is None, encrypted when `password` is given)."""

    certfile: str
    keyfile: str | None = None
    password: str | None = None

    def check(self) -> None:
        """A clear error now rather than a failed start: the files exist and hold a certificate and its key."""
        for flag, path in (("--tls-cert", self.certfile), ("--tls-key", self.keyfile)):
            if path is not None and not Path(path).is_file():
                raise ConfigError([Problem(flag, f"file not found: {path}")])
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(self.certfile, self.keyfile, self.password)
        except (ssl.SSLError, ValueError) as e:  # the reason only (e.g. "PEM lib"), never the files' text
            reason = getattr(e, "reason", None) or type(e).__name__
            raise ConfigError([Problem("--tls-cert", f"{self.certfile} and its key cannot be loaded ({reason}); "
                                                     "give a PEM certificate and its PEM private key")]) from None


class RestServer:
    """`api` on `listener`: the socket is bound at once (so port 0 has its port in `url`), requests are
    served by `serve_forever` until `shutdown`, SIGINT or SIGTERM."""

    def __init__(self, api: ConnectApi, listener: str = DEFAULT_LISTENER, credentials: dict[str, str] | None = None,
                 allowed_hosts: list[str] | tuple[str, ...] = (), tls: Tls | None = None, *,
                 client_timeout: float = CLIENT_TIMEOUT, request_timeout: float = REQUEST_TIMEOUT,
                 shutdown_timeout: float = 10.0, on_exit: Callable[[], None] | None = None):
        """`on_exit` is called once when the server is asked to stop (a signal, `shutdown`); the calls in
        flight then have `shutdown_timeout` seconds to finish."""
        where = parse_listener(listener)
        if where.scheme == "https" and tls is None:
            raise ConfigError([Problem("--tls-cert", f"listening on {listener} needs a certificate: give "
                                                     "--tls-cert FILE (and --tls-key FILE)")])
        if tls is not None and where.scheme != "https":
            raise ConfigError([Problem("listeners", f"a certificate is given: listen on https://, not '{listener}'")])
        if tls is not None:
            tls.check()
        self.scheme = where.scheme
        self.app = RestApp(api, credentials or {}, RequestGuard(where.host, allowed_hosts),
                           client_timeout=client_timeout, request_timeout=request_timeout)
        family = socket.AF_INET6 if ":" in where.host else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.socket.bind((where.host, where.port))
        except OSError as e:
            self.socket.close()
            raise ConfigError([Problem("listeners", f"cannot listen on {where.host}:{where.port}: "
                                                    f"{e.strerror or e}")]) from None
        self.socket.listen(128)
        self.socket.setblocking(False)
        # the header deadline is this server's (a subclass each: two servers in one process may differ)
        protocol = type("_Protocol", (_Protocol,), {"header_timeout": client_timeout})
        config = uvicorn.Config(
            self.app, http=protocol, ws="none", lifespan="off", interface="asgi3", log_config=None,
            access_log=False, server_header=False, date_header=True, proxy_headers=False,
            limit_concurrency=MAX_CONNECTIONS, timeout_keep_alive=int(client_timeout) or 1,
            timeout_graceful_shutdown=max(1, round(shutdown_timeout)), h11_max_incomplete_event_size=64 * 1024,
            ssl_certfile=tls.certfile if tls else None, ssl_keyfile=tls.keyfile if tls else None,
            ssl_keyfile_password=tls.password if tls else None)
        self._server = _Server(config, on_exit)
        logging.getLogger("uvicorn").setLevel(max(logging.WARNING, logging.getLogger("lakeconnect").level))

    @property
    def url(self) -> str:
        host, port = self.socket.getsockname()[:2]
        return f"{self.scheme}://{f'[{host}]' if ':' in host else host}:{port}"

    def serve_forever(self) -> None:
        """Serve until shutdown; from the main thread SIGINT and SIGTERM end it after the calls in flight."""
        self._server.run(sockets=[self.socket])

    def shutdown(self) -> None:
        self._server.handle_exit(signal.SIGTERM, None)

    def server_close(self) -> None:
        self.socket.close()
        self.app.close()


class _Server(uvicorn.Server):
    """uvicorn's server, telling its owner when it is asked to stop (before it waits for the calls in flight)."""

    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None] | None):
        super().__init__(config)
        self._on_exit = on_exit

    def handle_exit(self, sig, frame) -> None:
        on_exit, self._on_exit = self._on_exit, None
        if on_exit is not None:
            on_exit()
        super().handle_exit(sig, frame)


class _Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, with a deadline for a request's line and headers: uvicorn waits for them
    without limit (its keep-alive timer stops at the first byte), so a client sending a byte now and then
    would hold its connection, and enough of them every connection the server allows."""

    header_timeout = CLIENT_TIMEOUT
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request on this connection has as long

    def eof_received(self) -> bool | None:
        """A client that sent its request and closed its side (`nc -N`, a half-closing proxy) gets its
        answer, then the connection closes; uvicorn would close it at once, the call unanswered."""
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.keep_alive = False
            return True
        return None

    def connection_lost(self, exc) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        cycle = self.cycle  # the deadline is for the request after this one (None: the first)
        self._deadline = self.loop.call_later(self.header_timeout, self._expire, cycle)

    def _expire(self, cycle) -> None:
        if self.cycle is cycle and not self.transport.is_closing():  # no new request came in time
            self.transport.close()


class _Refused(Exception):
    def __init__(self, status: int, message: str, *, plain: bool = False):
        self.status, self.message, self.plain = status, message, plain


class RestApp:
    """The ASGI application: checks a request, reads its body within the limits, and runs the call on a
    thread (the state tables are read and written with blocking I/O)."""

    def __init__(self, api: ConnectApi, credentials: dict[str, str], guard: RequestGuard, *,
                 client_timeout: float = CLIENT_TIMEOUT, request_timeout: float = REQUEST_TIMEOUT):
        self.api = api
        self.credentials = credentials
        self.guard = guard
        self.client_timeout = client_timeout
        self.request_timeout = request_timeout
        self._threads = ThreadPoolExecutor(THREADS, thread_name_prefix="rest")

    def close(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        try:
            response = await self._answer(scope, receive)
        except _Refused as e:
            # An answer before the body is read, or about a body that is not: the connection closes, so the
            # rest of a body is never taken for the next request.
            payload = e.message.encode() if e.plain else json.dumps({"error_code": e.status,
                                                                     "message": e.message}).encode()
            await _send(send, e.status, payload, "text/plain" if e.plain else "application/json", close=True)
            return
        except _Disconnected:
            return
        if response.stream is not None:
            await _stream(send, response)
        elif response.raw is not None:
            await _send(send, response.status, response.raw.encode(), response.content_type)
        elif response.body is None:
            await _send(send, response.status, b"", None)
        else:
            await _send(send, response.status, json.dumps(response.body).encode(), response.content_type)

    async def _answer(self, scope, receive) -> Response:
        method = scope["method"]
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        length = int(headers.get("content-length") or 0)  # h11 has refused one that is not a length
        refusal = self.guard.refusal(method, headers, length > 0 or "transfer-encoding" in headers)
        if refusal:
            raise _Refused(*refusal)
        if not self.authorized(headers.get("authorization")):
            raise _Refused(401, UNAUTHORIZED, plain=True)
        if length > MAX_BODY:
            raise _Refused(413, _TOO_LARGE)
        try:
            body = await asyncio.wait_for(_read_body(receive), self.client_timeout)
        except asyncio.TimeoutError:
            raise _Refused(408, f"the request body took longer than {self.client_timeout:g} s to arrive") from None
        path = scope["raw_path"].decode("latin-1").split("?", 1)[0]  # as sent: the API decodes its parameters
        query = parse_qs(scope["query_string"].decode("latin-1"), errors="replace")
        call = self._threads.submit(self.api.handle, method, path, query, body)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(call), self.request_timeout)
        except asyncio.TimeoutError:
            # The call goes on in its thread (a commit is not torn in half); Kafka Connect answers the same.
            log.warning("REST %s %s: no answer within %g s", method, secrets.scrub(path)[:200], self.request_timeout)
            return Response(500, {"error_code": 500, "message": "Request timed out"})

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


_TOO_LARGE = f"request body too large (at most {MAX_BODY // 2**20} MiB)"


class _Disconnected(Exception):
    pass


async def _read_body(receive) -> bytes:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Disconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:  # a chunked body has no length to refuse it by before
            raise _Refused(413, _TOO_LARGE)
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


async def _stream(send, response: Response) -> None:
    """A run's events, one JSON line each as they come (chunked), until its last. A client that reads slower
    than the run logs loses log lines beyond `MAX_BACKLOG` (never a report or the exit code); one that goes
    away leaves the run going on."""
    loop = asyncio.get_running_loop()
    pending: deque = deque()
    ready = asyncio.Event()
    dropped = 0

    def listener(event) -> None:  # on the run's thread
        nonlocal dropped
        if event is not None and "log" in event and len(pending) >= MAX_BACKLOG:
            dropped += 1
            return
        pending.append(event)
        try:
            loop.call_soon_threadsafe(ready.set)
        except RuntimeError:  # the loop is closed: the server is gone
            pass

    run = response.stream
    await send({"type": "http.response.start", "status": response.status,
                "headers": [(b"Content-Type", response.content_type.encode()), (b"Cache-Control", b"no-store")]})
    run.attach(listener)
    try:
        while True:
            try:
                await asyncio.wait_for(ready.wait(), HEARTBEAT_S)
            except asyncio.TimeoutError:  # a quiet batch: a blank line shows the client the worker is there
                await send({"type": "http.response.body", "body": b"\n", "more_body": True})
                continue
            ready.clear()
            lines = []
            while pending:
                event = pending.popleft()
                if event is None:
                    await send({"type": "http.response.body", "body": b"".join(lines), "more_body": False})
                    return
                if dropped and "log" not in event:
                    lines.append(json.dumps({"log": f"({dropped} log lines not sent: the client read too slowly)"})
                                 .encode() + b"\n")
                    dropped = 0
                lines.append(json.dumps(event).encode() + b"\n")
            if lines:
                await send({"type": "http.response.body", "body": b"".join(lines), "more_body": True})
    except OSError:  # the client went away (uvicorn's ClientDisconnected); the run goes on
        run.detach()
    except asyncio.CancelledError:  # the server stops: the run's client finds the stream cut
        run.detach()
        raise


async def _send(send, status: int, payload: bytes, content_type: str | None, *, close: bool = False) -> None:
    headers = [(b"Content-Length", str(len(payload)).encode())]  # h11 sends names as given: Jetty's case
    if content_type:
        headers.append((b"Content-Type", content_type.encode()))
    if status == 401:
        headers.append((b"WWW-Authenticate", b'Basic realm="lakeconnect"'))
    if close:
        headers.append((b"Connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
