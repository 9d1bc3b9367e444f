"""Parsing ``--since`` / ``--until`` values into timestamps.

Accepted: ISO dates (``2025-03-01``), ISO datetimes (``2025-03-01T12:00``,
with or without an offset) and relative ages counted back from now
(``30s``, ``30m``, ``24h``, ``7d``, ``2w``).

Store timestamps are naive UTC, so results are naive UTC datetimes; :func:`utcnow` is now in
that convention, and :func:`window_sql` the SQL condition keeping a timestamp column within a
window.
"""
from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone

_RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def utcnow() -> datetime:
    """The current time as a naive UTC datetime (the store's convention).

    >>> utcnow().tzinfo is None and abs(utcnow() - datetime.now(timezone.utc).replace(tzinfo=None)) < timedelta(minutes=1)
    True
    """
    return datetime.now(timezone.utc).replace(tzinfo=None)


def parse_time(value: str | datetime | date | None, *, end: bool = False,
               now: datetime | None = None) -> datetime | None:
    """Turn a user time bound into a naive UTC datetime (``None`` stays ``None``).

    ``end=True`` makes a bare date mean the last instant of that day, so that
    ``--until 2025-03-01`` includes captures made on March 1st.

    >>> parse_time("2025-03-01")
    datetime.datetime(2025, 3, 1, 0, 0)
    >>> parse_time("2025-03-01", end=True)
    datetime.datetime(2025, 3, 1, 23, 59, 59, 999999)
    >>> parse_time("7d", now=datetime(2025, 3, 8))
    datetime.datetime(2025, 3, 1, 0, 0)
    """
    if value is None:
        return None
    if isinstance(value, datetime):
        return _naive_utc(value)
    if isinstance(value, date):
        start = datetime(value.year, value.month, value.day)
        return start + timedelta(days=1, microseconds=-1) if end else start
    text = str(value).strip()
    m = _RELATIVE.match(text)
    if m:
        amount, unit = float(m.group(1)), m.group(2).lower()
        return (now or utcnow()) - timedelta(**{_UNITS[unit]: amount})
    try:
        if len(text) == 10:  # a bare date
            return parse_time(date.fromisoformat(text), end=end)
        return _naive_utc(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        raise ValueError(
            f"cannot read time {value!r}: use an ISO date or datetime (2025-03-01, "
            "2025-03-01T12:00) or an age such as 30m, 24h, 7d") from None


def _naive_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        return value
    return value.astimezone(timezone.utc).replace(tzinfo=None)


def window(since: str | datetime | None, until: str | datetime | None) -> tuple[datetime | None, datetime | None]:
    """Both bounds parsed; raises ValueError when ``since`` is after ``until``."""
    lo, hi = parse_time(since), parse_time(until, end=True)
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"--since {since} is after --until {until}")
    return lo, hi



def window_sql(column: str, since: datetime | None, until: datetime | None,
               key: str = "") -> tuple[str, dict[str, datetime]]:
    """The SQL condition keeping ``column`` within ``since``..``until``, both ends included (a
    ``None`` end is open: ``true`` when both are), and its named parameters ``$since`` and
    ``$until`` (their names suffixed with ``key``: several windows in one statement).

    >>> window_sql("c.captured_at", datetime(2025, 3, 1), None)
    ('c.captured_at >= $since', {'since': datetime.datetime(2025, 3, 1, 0, 0)})
    >>> window_sql("captured_at", datetime(2025, 3, 1), datetime(2025, 3, 7), key="_old")[0]
    'captured_at >= $since_old AND captured_at <= $until_old'
    >>> window_sql("captured_at", None, None)
    ('true', {})
    """
    conditions, params = [], {}
    for name, op, value in (("since", ">=", since), ("until", "<=", until)):
        if value is not None:
            conditions.append(f"{column} {op} ${name}{key}")
            params[name + key] = value
    return " AND ".join(conditions) or "true", params
