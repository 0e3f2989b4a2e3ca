"""FileStream cases of the oracle corpus: file bytes a FileStreamSourceTask reads, records a sink prints."""

from __future__ import annotations

from tests.oracle.builders import SCHEMALESS_ROWS, b64
from tests.oracle.corpus_converters import SAMPLES

FILES = {
    "lines": b"First record\nAnother record\nThird record\n",
    "partial-last-line": b"one\ntwo\npartial",
    "crlf": b"a\r\nb\r\n\r\nc\n",
    "cr-only": b"a\rb\rc\n",
    "cr-at-end": b"a\rb\r",  # the last \r waits for the next byte: is it \r\n?
    "cr-then-crlf": b"x\r\ry\r\nz\r\n\r",
    "empty-lines": b"\n\n\nx\n",
    "empty-file": b"",
    "unicode": "ünï ☃ 😀\nnext\n".encode(),
    "invalid-utf8": b"ok\n\xff\xfe bad\nafter\n",
    "long-line": b"x" * 5000 + b"\nshort\n",
    "tabs-and-spaces": b"  lead\ttab  \n trailing \n",
}


def file_cases() -> list[dict]:
    out = [{"id": f"filesource/{name}", "kind": "filesource", "content": b64(data),
            "config": {"topic": "lines"}} for name, data in FILES.items()]
    # Not bytes: Kafka prints a byte[] as its identity ("[B@1b6d3586"), different in every run.
    sink_samples = [(n, s, p) for n, s, p in SAMPLES if n not in ("required-null", "bytes", "struct")]
    sink_samples += [("schemaless-map", None, SCHEMALESS_ROWS), ("schemaless-scalars", None,
                                                                  ["t", 1, 2.5, True, [1, "a"], {}, None])]
    for name, schema, payloads in sink_samples:
        out.append({"id": f"filesink/{name}", "kind": "filesink", "valueSchema": schema,
                    "records": [{"topic": "lines", "value": p} for p in payloads]})
    return out
