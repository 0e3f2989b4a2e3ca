"""A small HTTP proxy in front of an S3 server (moto) that injects faults when told to.

Point a client at it either way:
- as the endpoint (`store.url = proxy.url`): a reverse proxy; requests go to `upstream`;
- as an HTTP forward proxy (`s3.proxy.url = proxy.url`): requests carry absolute URLs and go there.
  With `proxy_auth=(user, password)` every request must carry matching Basic `Proxy-Authorization`,
  else it gets 407 (to test `s3.proxy.user` / `s3.proxy.password`).
Path-style S3 requests only (the S3 sink's default), over plain HTTP.

Faults, each for the `nth` request matching it (counted from when it was injected) and the `times - 1`
matching requests after that one:
- `status`: answer `status` (500, 503, ...) with an S3 error body (error `code`: by default InternalError
  for 500, SlowDown for 503 and 429), without forwarding;
- `delay`: hold the request `delay` seconds (past the client's read timeout), then forward it unless the
  client has hung up meanwhile;
- `drop`: read half the request body, then close the connection without an answer.
With `after_upstream=True`, `delay` and `drop` happen after the upstream server has handled the request:
the server did the work, the client never hears of it (a lost answer).

A request matches by S3 operation name (`op="UploadPart"`, see `s3_operation`), and/or by `method` and a
regular expression `pattern` searched in the request target (path and query).

In-thread use (tests)::

    with FaultyProxy("http://127.0.0.1:5055") as proxy:
        fault = proxy.inject("UploadPart", "status", nth=2, status=503)
        ...                                  # point the client at proxy.url
        assert fault.fired == 1
        proxy.requests                       # every request seen: op, headers, body size, outcome

As a process, controlled over HTTP at `<url>/__faults__` (reverse-proxy mode)::

    python -m tests.services.faulty_proxy --upstream http://127.0.0.1:5055 --port 0 --port-file p
    curl -X POST <url>/__faults__ -d '{"op": "CompleteMultipartUpload", "kind": "drop"}'
    curl <url>/__faults__                    # faults with their counters, and the request log
    curl -X DELETE <url>/__faults__          # remove every fault and forget the log
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import re
import socket
import threading
import time
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

CONTROL_PATH = "/__faults__"
_HOP_BY_HOP = {"connection", "keep-alive", "proxy-authorization", "proxy-connection", "transfer-encoding", "te",
               "trailer", "upgrade", "expect"}
_ERROR_CODES = {500: "InternalError", 503: "SlowDown", 429: "SlowDown"}


def s3_operation(method: str, target: str) -> str:
    """The S3 operation a path-style request stands for (PutObject, UploadPart, ...), or '' if unknown."""
    parts = urlsplit(target)
    query = parse_qs(parts.query, keep_blank_values=True)
    has_key = "/" in parts.path.strip("/")
    if method == "PUT":
        if "partNumber" in query and "uploadId" in query:
            return "UploadPart"
        return "PutObject" if has_key else "CreateBucket"
    if method == "POST":
        if "uploads" in query:
            return "CreateMultipartUpload"
        if "uploadId" in query:
            return "CompleteMultipartUpload"
        return "DeleteObjects" if "delete" in query else ""
    if method == "DELETE":
        if "uploadId" in query:
            return "AbortMultipartUpload"
        return "DeleteObject" if has_key else "DeleteBucket"
    if method == "GET":
        if has_key:
            return "GetObject"
        if "uploads" in query:
            return "ListMultipartUploads"
        return "ListObjectsV2" if query.get("list-type") == ["2"] else "ListObjects"
    if method == "HEAD":
        return "HeadObject" if has_key else "HeadBucket"
    return ""


@dataclass
class Fault:
    kind: str  # "status" | "delay" | "drop"
    op: str | None = None
    method: str | None = None
    pattern: str | None = None
    nth: int = 1
    times: int = 1
    status: int = 500
    code: str | None = None
    delay: float = 2.0
    after_upstream: bool = False
    seen: int = 0  # matching requests so far
    fired: int = 0  # faults injected so far

    def __post_init__(self):
        if self.kind not in ("status", "delay", "drop"):
            raise ValueError(f"unknown fault kind {self.kind!r}: status, delay or drop")
        if self.op is None and self.method is None and self.pattern is None:
            raise ValueError("a fault needs an op, a method or a pattern to match")

    def matches(self, method: str, target: str, op: str) -> bool:
        return ((self.op is None or self.op == op) and (self.method is None or self.method == method)
                and (self.pattern is None or re.search(self.pattern, target) is not None))


@dataclass
class Request:
    method: str
    target: str
    op: str
    headers: dict[str, str] = field(repr=False)  # lower-case names
    body_size: int  # the payload's (without aws-chunked framing)
    outcome: str = ""  # the status forwarded or answered, or the fault


class FaultyProxy:
    """The proxy, served by threads of this process. See the module docstring."""

    def __init__(self, upstream: str | None = None, host: str = "127.0.0.1", port: int = 0,
                 proxy_auth: tuple[str, str] | None = None, timeout: float = 30.0):
        self.upstream = upstream
        self.proxy_auth = proxy_auth
        self.timeout = timeout
        self.faults: list[Fault] = []
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, port), _Handler)
        self._server.daemon_threads = True
        self._server.proxy = self
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FaultyProxy:
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="faulty-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> FaultyProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def inject(self, op: str | None = None, kind: str = "status", **options) -> Fault:
        """Add a fault (options: method, pattern, nth, times, status, code, delay, after_upstream)."""
        fault = Fault(kind=kind, op=op, **options)
        with self._lock:
            self.faults.append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self.faults.clear()
            self.requests.clear()

    def seen(self, op: str) -> list[Request]:
        """The requests of one S3 operation, in order."""
        with self._lock:
            return [r for r in self.requests if r.op == op]

    def _fault_for(self, method: str, target: str, op: str) -> Fault | None:
        with self._lock:
            chosen = None
            for fault in self.faults:
                if fault.matches(method, target, op):
                    fault.seen += 1
                    if chosen is None and fault.nth <= fault.seen < fault.nth + fault.times:
                        fault.fired += 1
                        chosen = fault
            return chosen

    def _log(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def _state(self) -> dict:
        with self._lock:
            return {"faults": [asdict(f) for f in self.faults],
                    "requests": [{k: v for k, v in asdict(r).items() if k != "headers"} for r in self.requests]}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and `Expect: 100-continue` answered as S3 does

    def log_message(self, format, *args) -> None:  # quiet: the request log is in FaultyProxy.requests
        pass

    def do_GET(self):
        self._handle()

    do_PUT = do_POST = do_DELETE = do_HEAD = do_GET

    @property
    def proxy(self) -> FaultyProxy:
        return self.server.proxy

    def _handle(self) -> None:
        if self.path.startswith(CONTROL_PATH):
            return self._control()
        if self.path.startswith("http://"):  # forward-proxy form: absolute URL
            parts = urlsplit(self.path)
            upstream, target = f"http://{parts.netloc}", parts.path + (f"?{parts.query}" if parts.query else "")
        else:
            upstream, target = self.proxy.upstream, self.path
        op = s3_operation(self.command, target)
        headers = {k.lower(): v for k, v in self.headers.items()}
        size = headers.get("x-amz-decoded-content-length") or headers.get("content-length") or 0  # aws-chunked
        request = Request(self.command, target, op, headers, int(size))
        self.proxy._log(request)
        if self.proxy.proxy_auth and not self._authorized(headers):
            self._read_body()
            request.outcome = "407"
            return self._answer(407, b"proxy authentication required",
                                {"Proxy-Authenticate": 'Basic realm="faulty-proxy"'})
        fault = self.proxy._fault_for(self.command, target, op)
        if fault and fault.kind == "drop" and not fault.after_upstream:
            self.rfile.read(request.body_size // 2)
            request.outcome = "drop"
            return self._drop()
        body = self._read_body()
        if fault and fault.kind == "status":
            request.outcome = str(fault.status)
            code = fault.code or _ERROR_CODES.get(fault.status, "InjectedFault")
            xml = (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code><Message>injected fault"
                   f"</Message><RequestId>faulty-proxy</RequestId></Error>").encode()
            return self._answer(fault.status, xml, {"Content-Type": "application/xml"})
        if fault and fault.kind == "delay" and not fault.after_upstream:
            time.sleep(fault.delay)
            if self._client_gone():
                request.outcome = "delay, client gone"
                self.close_connection = True
                return
        status, reason, answer_headers, answer = self._forward(upstream, target, body)
        request.outcome = str(status)
        if fault and fault.after_upstream:
            request.outcome = f"{status}, then {fault.kind}"
            if fault.kind == "drop":
                return self._drop()
            time.sleep(fault.delay)
        self._answer(status, answer, answer_headers, reason)

    def _authorized(self, headers: dict[str, str]) -> bool:
        user, password = self.proxy.proxy_auth
        expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        return headers.get("proxy-authorization") == expected

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                        pass
                    return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _forward(self, upstream: str, target: str, body: bytes):
        parts = urlsplit(upstream)
        conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=self.proxy.timeout)
        try:
            # the Host header goes as the client sent it: it is part of the request's signature
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            if body or self.command in ("PUT", "POST"):
                headers["Content-Length"] = str(len(body))
            conn.request(self.command, target, body=body, headers=headers, encode_chunked=False)
            answer = conn.getresponse()
            data = answer.read()
            answer_headers = {k: v for k, v in answer.getheaders() if k.lower() not in _HOP_BY_HOP}
            return answer.status, answer.reason, answer_headers, data
        finally:
            conn.close()

    def _answer(self, status: int, body: bytes, headers: dict[str, str], reason: str | None = None) -> None:
        try:
            self.send_response(status, reason)
            for name, value in headers.items():
                if name.lower() != "content-length":
                    self.send_header(name, value)
            length = headers.get("Content-Length", headers.get("content-length")) if self.command == "HEAD" else None
            self.send_header("Content-Length", length or str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timed out) meanwhile
            self.close_connection = True

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _client_gone(self) -> bool:
        try:
            return self.connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    def _control(self) -> None:
        body = self._read_body()
        if self.command == "POST":
            fault = self.proxy.inject(**json.loads(body or b"{}"))
            return self._answer(201, json.dumps(asdict(fault)).encode(), {"Content-Type": "application/json"})
        if self.command == "DELETE":
            self.proxy.clear()
            return self._answer(204, b"", {})
        self._answer(200, json.dumps(self.proxy._state()).encode(), {"Content-Type": "application/json"})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="An S3 proxy that injects faults (see the module docstring).")
    parser.add_argument("--upstream", required=True, help="the S3 server, e.g. http://127.0.0.1:5055")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (see --port-file)")
    parser.add_argument("--port-file", help="write the port there once listening")
    args = parser.parse_args(argv)
    proxy = FaultyProxy(args.upstream, args.host, args.port)
    if args.port_file:
        Path(args.port_file).write_text(f"{proxy.url.rsplit(':', 1)[1]}\n")
    print(f"faulty proxy on {proxy.url} -> {args.upstream}", flush=True)
    try:
        proxy._server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
