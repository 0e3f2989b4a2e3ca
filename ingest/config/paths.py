"""Where a connector may read and write files of its own: inside the lake, or below a directory (or an
object-store prefix) the worker allows in `lake.allowed.paths`.

A connector config may come from anyone who can reach the REST API, so a path in it (the S3 sink's
`store.url=file:…`, the Delta table sink's `delta.table.path`, a `jdbc:sqlite:` file, a MySQL trust
store) is a file of the worker's user: without this gate a config could write Delta tables over the
worker's own files or open any database file. Local paths are compared after resolving symlinks and `..`.
FileStream connectors stay outside this gate: `file.connectors.enable` loads them, for the book's examples.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

from ingest.config.configdef import redact_url
from ingest.config.worker import ALLOWED_PATHS
from ingest.errors import Problem



def _is_local(uri: str) -> bool:
    scheme = urlsplit(uri).scheme
    return not scheme or scheme == "file" or len(scheme) == 1  # a Windows drive letter is no scheme


def normalized(uri: str) -> str:
    """A local path made absolute with symlinks and `..` resolved; a URI with `.`/`..` segments resolved and
    no trailing slash."""
    if _is_local(uri):
        path = unquote(urlsplit(uri).path) if uri.startswith("file:") else uri
        return os.path.realpath(path or ".")
    parts = urlsplit(uri)
    path = posixpath.normpath("/" + parts.path.lstrip("/")) if parts.path else ""
    return f"{parts.scheme.lower()}://{parts.netloc}{'' if path == '/' else path}"


def within(uri: str, root: str) -> bool:
    """Whether `uri` is `root` or below it (both normalized)."""
    if _is_local(uri) != _is_local(root):
        return False
    if _is_local(uri):
        return os.path.commonpath([uri, root]) == root
    return uri == root or uri.startswith(root.rstrip("/") + "/")


def roots(lake_root: str, allowed: Iterable[str]) -> list[str]:
    return [normalized(r) for r in [lake_root, *allowed] if r.strip()]


def path_problems(paths: Iterable[tuple[str, str]], lake_root: str, allowed: Iterable[str]) -> list[Problem]:
    """A problem for each (key, path) outside the lake and every allowed root."""
    allowed = [a.strip() for a in allowed if a.strip()]
    bounds = roots(lake_root, allowed)
    problems = []
    for key, path in paths:
        if "\0" in path:
            problems.append(Problem(key, "a path must not contain a NUL character"))
            continue
        if any(within(normalized(path), root) for root in bounds):
            continue
        where = f"the lake ({lake_root})" + (f" and {ALLOWED_PATHS} ({', '.join(allowed)})" if allowed else "")
        problems.append(Problem(key, f"{redact_url(path)[:300]} is outside {where}: keep it in the lake, or add its directory "
                                     f"to {ALLOWED_PATHS} in the worker configuration"))
    return problems
