"""Routing shared by the REST server's resources: a table of (method, path pattern, handler)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import unquote

Route = tuple[str, re.Pattern[str], Callable[..., Any]]
NOT_FOUND, NOT_ALLOWED = 404, 405


def find(routes: Sequence[Route], method: str, path: str) -> tuple[Callable[..., Any], dict[str, str]] | int:
    """The handler of `method` on `path` and the path's parameters (URL-decoded), or 404 when no pattern
    matches the path, 405 when patterns match it for other methods only."""
    allowed = False
    for m, pattern, handler in routes:
        match = pattern.fullmatch(path)
        if not match:
            continue
        if m != method:
            allowed = True
            continue
        return handler, {k: unquote(v) for k, v in match.groupdict().items()}
    return NOT_ALLOWED if allowed else NOT_FOUND
