"""How errors from the server and from Spark read in the connector's own messages: a pymysql error's code
and text, whether a connection failed on TLS, and the first line of a long error. Shared by the task and
the modules it hands work to, so every message words these the same way."""

from __future__ import annotations


def tls_failure(e: Exception) -> bool:
    args = getattr(e, "args", ())
    text = str(args[1] if len(args) >= 2 else e).lower()
    return (bool(args) and args[0] == 2026) or "ssl" in text or "certificate" in text or "secure transport" in text


def db_message(e: Exception) -> str:
    args = getattr(e, "args", ())
    if len(args) >= 2 and isinstance(args[0], int):
        return f"{args[1]} (error {args[0]})"
    return str(e) or type(e).__name__


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:500]
    return text[:500]
