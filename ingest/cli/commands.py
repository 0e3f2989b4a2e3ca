"""Connector, run, validate, plugins and offsets commands."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ingest.api import Compactable
from ingest.cli import jobs
from ingest.config.connector import NAME, common_config_def
from ingest.config.loader import file_connector_name, load_connector_file, parse_json
from ingest.errors import ConfigError, Problem
from ingest.registry import PluginKind, default_registry
from ingest.state.states import PAUSED, RUNNING, STOPPED


def worker_for(args):
    from ingest.runtime.worker import Worker

    return Worker.load(args.worker)


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


def _table(rows: list[list[str]], headers: list[str]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    line = lambda r: "  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


# --- connectors ------------------------------------------------------------------------------------


NAME_HELP = "the connector's name, when the file has none (default: the file's name without .json or .properties)"


def _connector_file(path: str, name: str | None = None) -> tuple[str, dict[str, str]]:
    """A connector file; one without a name takes `name` (--name), else the file's name, refused clearly when that
    is no connector name (Kafka Connect's rules, as the `name` key's validator checks them)."""
    derived = file_connector_name(path)
    problem = common_config_def("source").keys[NAME].validator(NAME, derived)
    return load_connector_file(path, name=name, default_name=derived, default_problem=problem)


def cmd_create(args) -> int:
    name, raw = _connector_file(args.file, args.name)
    worker = worker_for(args)
    worker.create(name, raw, source=args.file)
    print(f"Created connector {name}")
    return 0


def cmd_update(args) -> int:
    name, raw = _connector_file(args.file, args.name)
    version = worker_for(args).update(name, raw, source=args.file)
    print(f"Updated connector {name} (config version {version})")
    return 0


def cmd_apply(args) -> int:
    """Create, or update when the file differs from the stored config: what a scheduler runs before each
    batch so the file stays the source of truth without a new config version per run."""
    name, raw = _connector_file(args.file, args.name)
    worker = worker_for(args)
    current = worker.stores.configs.get(name)
    if current is None:
        worker.create(name, raw, source=args.file)
        print(f"Created connector {name}")
    elif current["config"] != raw:
        version = worker.update(name, raw, source=args.file)
        print(f"Updated connector {name} (config version {version})")
    else:
        print(f"Connector {name} unchanged (config version {current['version']})")
    return 0


def cmd_delete(args) -> int:
    worker_for(args).delete(args.name)
    print(f"Deleted connector {args.name} (its offsets are kept: a connector created again with this name resumes)")
    return 0


def cmd_list(args) -> int:
    worker = worker_for(args)
    names = worker.list()
    if args.json:
        _print_json(names)
    else:
        for n in names:
            print(n)
    return 0


def cmd_get(args) -> int:
    worker = worker_for(args)
    found = worker.get(args.name)
    tasks = int(found["config"].get("tasks.max", "1") or 1)
    _print_json({"name": args.name, "config": found["config"],
                 "tasks": [{"connector": args.name, "task": t} for t in range(tasks)], "type": found["type"]})
    return 0


def cmd_status(args) -> int:
    _print_json(worker_for(args).status(args.name, runs=args.runs))
    return 0


def _target(state: str, verb: str):
    def cmd(args) -> int:
        worker_for(args).set_target_state(args.name, state)
        print(f"Connector {args.name} {verb}")
        return 0
    return cmd


def cmd_restart(args) -> int:
    restarted = worker_for(args).restart(args.name, include_tasks=args.include_tasks, only_failed=args.only_failed)
    print(f"Restarted connector {args.name}" + (f" (tasks: {', '.join(str(t) for t in restarted if t >= 0)})"
                                                  if args.include_tasks else ""))
    return 0


def cmd_compact(args) -> int:
    worker = worker_for(args)
    found = worker.stores.configs.require(args.name)
    info = worker.registry.find_connector(found["config"].get("connector.class", ""))
    if info is None or not issubclass(info.cls, Compactable):
        raise ConfigError([Problem("connector.class", f"connector '{args.name}' has nothing to compact: "
                                                      "compaction is for object-store sinks (S3Sink)")])
    summary = info.cls.compact(worker, args.name, min_age_ms=args.min_age_ms, target_bytes=args.target_bytes,
                               dry_run=args.dry_run)
    print(json.dumps(summary, indent=2))
    return 0


def cmd_validate(args) -> int:
    name, raw = _connector_file(args.file)
    worker = worker_for(args)
    setup = worker.validate(raw, source=args.file)
    print(f"{args.file}: configuration of connector '{name}' is valid")
    for warning in setup.warnings:
        print(f"{args.file}: warning: {warning}")
    for warning in setup.connector().warnings():
        print(f"{args.file}: warning: {warning}")
    return 0


# --- run -------------------------------------------------------------------------------------------


def cmd_run(args) -> int:
    from ingest.cli.delegate import worker_url

    url = worker_url(args.worker)
    if url:
        return _run_on_worker(args, url)
    worker = worker_for(args)
    def show(step: str) -> None:
        sys.stderr.write(f"\r  {args.name}: {step} done".ljust(60))
        sys.stderr.flush()

    progress = show if sys.stderr.isatty() else None
    reports = worker.run(args.name, task=args.task, until_caught_up=args.until_caught_up, progress=progress,
                         skip_missing_task=args.skip_missing_task)
    if progress:
        sys.stderr.write("\r" + " " * 60 + "\r")
    for r in reports:
        print(json.dumps(r.to_json()) if args.json else f"{args.name} {r.summary()}")
    if not reports:
        state = worker.get(args.name)["target_state"]
        why = f"connector is {state}" if state != RUNNING else f"the connector has no task {args.task}"
        print(json.dumps({"connector": args.name, "task": args.task, "outcome": "NOT_RUN", "target_state": state,
                          "reason": why}) if args.json else f"{args.name}: not run ({why})")
    return 0


def _run_on_worker(args, url: str) -> int:
    """The run, by the long-running worker at `url`: the same lines, reports and exit code as one run here."""
    from ingest.cli.delegate import run_remote

    def on_log(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def on_result(report: dict[str, Any], summary: str) -> None:
        print(json.dumps(report) if args.json else summary, flush=True)

    result = run_remote(url, args.name, task=args.task, until_caught_up=args.until_caught_up,
                        skip_missing_task=args.skip_missing_task, on_log=on_log, on_result=on_result)
    if result.exit_code and result.error:
        print(f"error: {result.error}", file=sys.stderr)
    return result.exit_code


# --- plugins ---------------------------------------------------------------------------------------


def cmd_plugins_list(args) -> int:
    registry = default_registry()
    kinds = [PluginKind[args.kind.upper().replace(" ", "_").replace("-", "_")]] if args.kind else list(PluginKind)
    rows = []
    for kind in kinds:
        for info in registry.plugins(kind):
            rows.append([kind.label, info.class_name, info.name, info.version])
    if args.json:
        _print_json([{"type": r[0], "class": r[1], "alias": r[2], "version": r[3]} for r in rows])
    else:
        print(_table(rows, ["TYPE", "CLASS", "ALIAS", "VERSION"]))
    for (kind, name), error in sorted(registry.broken.items(), key=lambda i: (i[0][0].label, i[0][1])):
        print(f"warning: {kind.label} plugin '{name}' is installed but {error}", file=sys.stderr)
    return 0


def cmd_plugins_config(args) -> int:
    from ingest.reference import KEY_COLUMNS, find_plugin, key_row, plugin_definition

    registry = default_registry()
    info = find_plugin(registry, args.plugin)
    if info is None:
        known = ", ".join(i.class_name for i in registry.plugins())
        raise ConfigError([Problem(None, f"unknown plugin '{args.plugin}'; known plugins: {known}")])
    rows = [key_row(key) for key in plugin_definition(info).keys.values()]
    if args.json:
        _print_json(rows)
    else:
        print(f"{info.class_name} ({info.kind.label})\n")
        print(_table([[r[c] for c in KEY_COLUMNS] for r in rows],
                     ["NAME", "TYPE", "DEFAULT", "IMPORTANCE", "VALID VALUES", "GROUP", "DOCUMENTATION"]))
    return 0


# --- offsets ---------------------------------------------------------------------------------------


def cmd_offsets_list(args) -> int:
    _print_json({"offsets": worker_for(args).offsets(args.name)})
    return 0


def cmd_offsets_alter(args) -> int:
    try:
        with open(args.file, "rb") as f:
            body = parse_json(f.read())
    except FileNotFoundError:
        raise ConfigError(f"file not found: {args.file}") from None
    except OSError as e:
        raise ConfigError(f"cannot read {args.file}: {e.strerror}") from None
    except ValueError as e:
        raise ConfigError(str(e), source=args.file) from None
    if not isinstance(body, dict) or not isinstance(body.get("offsets"), list):
        raise ConfigError('expected {"offsets": [{"partition": {…}, "offset": {…}}, …]}', source=args.file)
    n = worker_for(args).alter_offsets(args.name, body["offsets"])
    print(f"The offsets for connector {args.name} have been altered ({n} partition(s))")
    return 0


def cmd_offsets_reset(args) -> int:
    n = worker_for(args).reset_offsets(args.name)
    print(f"The offsets for connector {args.name} have been reset ({n} partition(s))")
    return 0


def cmd_demo(args) -> int:
    from ingest.cli.demo import run_demo

    return run_demo(args)


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("connectors", help="create, inspect and control connectors").add_subparsers(
        dest="action", metavar="ACTION", required=True)
    p = c.add_parser("create", help="create a connector from a JSON or properties file")
    p.add_argument("file"), p.add_argument("--name", help=NAME_HELP)
    p.set_defaults(func=cmd_create)
    p = c.add_parser("update", help="replace a connector's config")
    p.add_argument("file"), p.add_argument("--name")
    p.set_defaults(func=cmd_update)
    for action, func, help_ in (("delete", cmd_delete, "delete a connector (offsets are kept)"),
                                ("get", cmd_get, "show a connector's config (secrets masked)"),
                                ("status", cmd_status, "show connector and task states"),
                                ("pause", _target(PAUSED, "paused"), "pause: runs do nothing until resumed"),
                                ("resume", _target(RUNNING, "resumed"), "resume a paused or stopped connector"),
                                ("stop", _target(STOPPED, "stopped"), "stop: required before altering offsets")):
        p = c.add_parser(action, help=help_)
        p.add_argument("name")
        p.set_defaults(func=func)
    p = c.add_parser("apply", help="create a connector from a file, or update it when the file differs")
    p.add_argument("file"), p.add_argument("--name", help=NAME_HELP)
    p.set_defaults(func=cmd_apply)
    c.choices["status"].add_argument("--runs", type=int, default=0, metavar="N",
                                     help="also show the metrics of the last N batches (records, bytes, lag, "
                                          "time per step)")
    p = c.add_parser("list", help="list connectors")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)
    p = c.add_parser("restart", help="restart a connector (clears FAILED states)")
    p.add_argument("name"), p.add_argument("--include-tasks", action="store_true")
    p.add_argument("--only-failed", action="store_true")
    p.set_defaults(func=cmd_restart)

    p = sub.add_parser("run", help="run one batch of a connector (every task, or --task N)")
    p.add_argument("name"), p.add_argument("--task", type=int)
    p.add_argument("--until-caught-up", action="store_true", help="run batches until one finds nothing new")
    p.add_argument("--skip-missing-task", action="store_true",
                   help="with --task N: do nothing when the connector made fewer than N+1 tasks (tasks.max is a "
                        "ceiling)")
    p.add_argument("--json", action="store_true", help="one JSON object per batch (outcome, records, topics)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("compact", help="merge the small objects of an S3 sink's closed partitions (opt-in)")
    p.add_argument("name")
    p.add_argument("--min-age-ms", type=int, default=3_600_000,
                   help="a directory whose newest object is this old is closed (default: an hour)")
    p.add_argument("--target-bytes", type=int, default=128 * 2**20, help="largest merged object (default 128 MiB)")
    p.add_argument("--dry-run", action="store_true", help="print what would be merged, change nothing")
    p.set_defaults(func=cmd_compact)
    p = sub.add_parser("validate", help="validate a connector config file; lists every problem")
    p.add_argument("file")
    p.set_defaults(func=cmd_validate)

    pl = sub.add_parser("plugins", help="installed plugins").add_subparsers(dest="action", metavar="ACTION",
                                                                          required=True)
    p = pl.add_parser("list", help="list plugins of every kind")
    p.add_argument("--kind", choices=[k.name.lower() for k in PluginKind]), p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_plugins_list)
    p = pl.add_parser("config", help="a plugin's configuration keys")
    p.add_argument("plugin"), p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_plugins_config)

    o = sub.add_parser("offsets", help="list, alter or reset a connector's offsets (KIP-875)").add_subparsers(
        dest="action", metavar="ACTION", required=True)
    p = o.add_parser("list", help="committed offsets")
    p.add_argument("name")
    p.set_defaults(func=cmd_offsets_list)
    p = o.add_parser("alter", help='alter offsets from a file {"offsets": [...]} (connector must be STOPPED)')
    p.add_argument("name"), p.add_argument("file")
    p.set_defaults(func=cmd_offsets_alter)
    p = o.add_parser("reset", help="reset every offset (connector must be STOPPED)")
    p.add_argument("name")
    p.set_defaults(func=cmd_offsets_reset)

    jobs.register(sub)

    p = sub.add_parser("demo", help="run the main example job on the embedded default lake")
    p.add_argument("--lake", default=None, help="lake root (default: the worker's lake.root)")
    p.set_defaults(func=cmd_demo)
