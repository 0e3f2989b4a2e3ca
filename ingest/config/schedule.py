"""Schedules as connectors (`lakeconnect.schedule`) and the worker (`maintenance.schedule`) give them: a cron
expression or one of Airflow's presets, checked when the config is read, so a DAG file never fails to parse
on a typo and a schedule Airflow would refuse is named with its key."""

from __future__ import annotations

import re
from typing import Any

SCHEDULE_PRESETS = ("@once", "@continuous", "@hourly", "@daily", "@weekly", "@monthly", "@quarterly", "@yearly",
                    "@annually", "none")


def valid_schedule(key: str, value: Any) -> str | None:
    """What is wrong with a schedule (None when nothing): a five-field cron expression, each field within
    its bounds, or an Airflow preset."""
    if value is None:
        return None
    text = str(value).strip()
    if text.lower() in SCHEDULE_PRESETS:
        return None
    fields = text.split()
    if len(fields) == 5:
        for field, (what, low, high, names, specials) in zip(fields, _CRON_FIELDS):
            problem = _cron_field(field, low, high, names, specials)
            if problem:
                return f"'{text}' is not a valid cron expression: its {what} field '{field}' {problem}"
        return None
    return (f"'{text}' is neither a cron expression (five fields: minute hour day month weekday) nor one of "
            f"{', '.join(SCHEDULE_PRESETS)}")


_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
# (name, lowest, highest, names, croniter's special forms): L the month's last day, 5#3 its third Friday
_CRON_FIELDS = (("minute", 0, 59, (), "$^"), ("hour", 0, 23, (), "$^"), ("day-of-month", 1, 31, (), "L"),
                ("month", 1, 12, _MONTHS, "$^"), ("day-of-week", 0, 7, _DAYS, r"[0-7]#[1-5]|[0-7]L|L"))


def _cron_field(field: str, low: int, high: int, names: tuple[str, ...], specials: str) -> str | None:
    """What is wrong with one field of a cron expression as croniter (Airflow's) reads it: `*`, numbers and
    ranges within the field's bounds, `/step`, lists, month and weekday names; None when it is right."""
    def value(text: str) -> int | None:
        if text.upper() in names:
            return names.index(text.upper()) + (1 if names is _MONTHS else 0)
        return int(text) if text.isdigit() else None

    for item in field.split(","):
        if re.fullmatch(specials, item, flags=re.IGNORECASE):
            continue
        base, _, step = item.partition("/")
        if step and (not step.isdigit() or int(step) == 0):
            return f"has an invalid step '/{step}'"
        if base in ("*", "?"):
            continue
        start, _, end = base.partition("-")
        bounds = [value(start)] + ([value(end)] if end else [])
        if any(b is None for b in bounds):
            return f"has '{base}', which is not a number{' or a name' if names else ''}"
        if any(not low <= b <= high for b in bounds):
            return f"has {base}, outside {low}-{high}"
    return None
