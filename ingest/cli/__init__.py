"""`lakeconnect`: the command line. Errors print one clear message and exit non-zero (2 for bad input);
a traceback only with --debug.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback

from ingest.errors import LakeConnectError
from ingest.config import secrets

DEBUG_ENV = "LAKECONNECT_DEBUG"


def _configure_logging(debug: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[%(asctime)s] %(levelname)s %(message)s", "%Y-%m-%d %H:%M:%S"))
    handler.addFilter(secrets.ScrubbingFilter())
    root = logging.getLogger("lakeconnect")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    root.propagate = False
    for noisy in ("py4j", "pyspark"):
        logging.getLogger(noisy).setLevel(logging.ERROR)


def build_parser() -> argparse.ArgumentParser:
    from ingest.cli import commands, maintenance, rest, topics, worker

    parser = argparse.ArgumentParser(prog="lakeconnect", description="Kafka Connect's connectors as batch jobs on "
                                     "Spark, with topics and state in Delta tables.")
    parser.add_argument("--worker", metavar="FILE", help="worker config (default: $LAKECONNECT_WORKER, else "
                        "conf/worker.properties, else MSK Connect's defaults)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    commands.register(sub)
    topics.register(sub)
    maintenance.register(sub)
    rest.register(sub)
    worker.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = args.debug or os.environ.get(DEBUG_ENV) == "1"
    _configure_logging(debug)
    try:
        return args.func(args) or 0
    except LakeConnectError as e:
        print(f"error: {secrets.scrub(str(e))}", file=sys.stderr)
        if debug:
            traceback.print_exc()
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # unexpected: one line, the trace on request
        from ingest.spark import jvm_exited

        status = jvm_exited()
        if status is not None:  # every later error is the lost bridge's: say what happened instead
            print(f"error: the Spark driver's JVM stopped (exit status {status}) during the command; its log "
                  "above says why. A java.lang.OutOfMemoryError means its heap is too small for this batch: "
                  "raise spark.driver.memory in the worker config. What was committed before stays committed, "
                  "and the next run resumes the batch", file=sys.stderr)
            if debug:
                traceback.print_exc()
            return 1
        message = secrets.scrub(f"{type(e).__name__}: {e}".split("\n")[0])
        print(f"error: unexpected failure: {message}\n(run again with --debug for the full trace)", file=sys.stderr)
        if debug:
            traceback.print_exc()
        return 1


def run() -> None:
    """The process entry point (console script and `python -m ingest`).

    Exits with `os._exit` once output is flushed: native libraries' worker threads (Arrow, delta-rs,
    the JVM bridge) can otherwise abort an ordinary interpreter shutdown ("terminate called without an
    active exception"), which would turn a clean exit code into SIGABRT.
    """
    from ingest.runtime import faults

    faults.mark_driver()
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):
            pass
    logging.shutdown()
    os._exit(code)
