"""A Schema Registry client for the Avro converter: the calls Confluent's `CachedSchemaRegistryClient` makes,
over HTTP with the standard library, cached per process so a known schema costs no call at all.

`schema.registry.url` may list several registries (the same cluster behind several addresses): each call
tries them in order until one answers. Credentials come from `basic.auth.user.info` (`USER_INFO`) or the
URL's own `user:password@` (`URL`, Confluent's default source); neither is ever printed: URLs are shown
without their user info, and a refusal names the key to check.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ingest.cache import BoundedCache
from ingest.config import secrets
from ingest.errors import ConfigError, DataError, Problem, RetriableError

TIMEOUT_S = 30.0
MAX_RESPONSE = 4 << 20
MAX_MESSAGE = 2000
# (registry urls, call, arguments) -> answer: ids, schemas and versions never change once given. 8,192 entries
# hold a 1,000-table pipeline's (its source registers 2,000 subjects, key and value; its sink asks as many ids
# and lookups) or many smaller ones', batch after batch. Entries hold schema texts (1 to 10 KB for a table): at
# most 80 MB. The least recently used go first; a dropped answer is asked of the registry again.
_CACHE: BoundedCache[tuple[Any, ...], Any] = BoundedCache(8192)


class RegistryRefused(DataError):
    """The registry answered with an error: its HTTP status, Confluent error code and message."""

    def __init__(self, message: str, status: int, code: int | None):
        super().__init__(message)
        self.status, self.code = status, code


@dataclass(frozen=True)
class RegistryClient:
    urls: tuple[str, ...] = field(repr=False)  # may hold user:password@
    credentials_source: str = "URL"
    user_info: str = field(default="", repr=False)
    auth_key: str = "basic.auth.user.info"  # the key a refusal names (prefixed as the connector has it)
    timeout_s: float = TIMEOUT_S

    def __repr__(self) -> str:
        return f"RegistryClient({', '.join(_shown(u) for u in self.urls)})"

    @classmethod
    def of(cls, urls: Sequence[str], credentials_source: str, user_info: str, auth_key: str) -> RegistryClient:
        cleaned = tuple(u.strip().rstrip("/") for u in urls if u and u.strip())
        if not cleaned:
            raise ConfigError([Problem("schema.registry.url", "Missing required configuration \"schema.registry.url\" "
                                                              "which has no default value.")])
        for u in cleaned:
            parts = urllib.parse.urlsplit(u)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ConfigError([Problem("schema.registry.url", f"expected http(s)://host[:port][/path], got "
                                                                  f"'{_shown(u)}'")])
            if parts.password:
                secrets.register([parts.password, f"{parts.username}:{parts.password}"])
        source = credentials_source.upper()
        if source not in ("URL", "USER_INFO"):
            raise ConfigError([Problem("basic.auth.credentials.source", f"'{credentials_source}' is not supported; "
                                                                        "expected URL or USER_INFO")])
        if user_info:
            secrets.register([user_info, user_info.partition(":")[2]])
        return cls(cleaned, source, user_info, auth_key)

    # --- the calls ---------------------------------------------------------------------------------

    def register(self, subject: str, schema: str) -> int:
        """The id of `schema` under `subject`, registering it when new (`auto.register.schemas`)."""
        return self._cached(("register", subject, schema), lambda: int(self._call(
            "POST", f"/subjects/{_quote(subject)}/versions", {"schema": schema})["id"]))

    def lookup(self, subject: str, schema: str) -> tuple[int, int]:
        """(id, version) of `schema` registered under `subject` (RegistryRefused 40401/40403 when it is not)."""
        def call():
            found = self._call("POST", f"/subjects/{_quote(subject)}", {"schema": schema})
            return int(found["id"]), int(found["version"])

        return self._cached(("lookup", subject, schema), call)

    def latest(self, subject: str) -> tuple[int, int, str]:
        """(id, version, schema) of the subject's latest version; asked each time (it changes)."""
        found = self._call("GET", f"/subjects/{_quote(subject)}/versions/latest")
        return int(found["id"]), int(found["version"]), str(found["schema"])

    def schema(self, schema_id: int) -> str:
        return self._cached(("schema", schema_id),
                            lambda: str(self._call("GET", f"/schemas/ids/{int(schema_id)}")["schema"]))

    # --- HTTP --------------------------------------------------------------------------------------

    def _cached(self, key: tuple[Any, ...], call):
        return _CACHE.get_or_build((self.urls, *key), call)

    def _headers(self, url: str) -> dict[str, str]:
        headers = {"Content-Type": "application/vnd.schemaregistry.v1+json",
                   "Accept": "application/vnd.schemaregistry.v1+json, application/json"}
        info = self.user_info
        if self.credentials_source == "URL":
            parts = urllib.parse.urlsplit(url)
            info = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}" \
                if parts.username else ""
        if info:
            headers["Authorization"] = "Basic " + base64.b64encode(info.encode()).decode()
        return headers

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        failures = []
        for url in self.urls:
            bare = _without_user_info(url)
            request = urllib.request.Request(bare + path, data=data, method=method, headers=self._headers(url))
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    return json.loads(response.read(MAX_RESPONSE) or b"null")
            except urllib.error.HTTPError as e:
                raise self._refusal(e, bare, method, path) from None
            except (urllib.error.URLError, OSError, TimeoutError) as e:
                reason = getattr(e, "reason", e)
                failures.append(f"{_shown(url)}: {reason}")
            except ValueError:
                raise DataError(f"the Schema Registry at {_shown(url)} answered {method} {path} with something "
                                "that is not JSON; check schema.registry.url") from None
        raise RetriableError("the Schema Registry cannot be reached (" + "; ".join(failures) + "); check "
                             "schema.registry.url and that the registry is up; the batch will be tried again")

    def _refusal(self, e: urllib.error.HTTPError, url: str, method: str, path: str) -> Exception:
        try:
            answer = json.loads(e.read(MAX_RESPONSE) or b"{}")
        except ValueError:
            answer = {}
        code = answer.get("error_code") if isinstance(answer, dict) else None
        message = answer.get("message") if isinstance(answer, dict) else None
        if e.code in (401, 403):
            key = self.auth_key if self.credentials_source == "USER_INFO" else "schema.registry.url's user info"
            return ConfigError([Problem(self.auth_key, f"the Schema Registry at {_shown(url)} refused the credentials "
                                                       f"(HTTP {e.code}); check {key} and "
                                                       "basic.auth.credentials.source")])
        if e.code >= 500:
            return RetriableError(f"the Schema Registry at {_shown(url)} failed {method} {path} (HTTP {e.code}"
                                  f"{f', error code {code}' if code else ''}: "
                                  f"{secrets.scrub(str(message))[:MAX_MESSAGE]}); the "
                                  "batch will be tried again")
        # the registry's own words, scrubbed and cut short (a URL may name a server that is no registry)
        return RegistryRefused(secrets.scrub(str(message or f"HTTP {e.code}"))[:MAX_MESSAGE], e.code, code)


def _quote(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


def _without_user_info(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if not parts.username and not parts.password:
        return url
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _shown(url: str) -> str:
    """A URL for messages: never its user info."""
    try:
        return _without_user_info(url)
    except ValueError:
        return "(an invalid URL)"
