"""Parsing ``--since`` / ``--until`` values into timestamps.

Accepted: ISO dates (``2025-03-01``), ISO datetimes (``2025-03-01T12:00``,
with or without an offset) and relative ages counted back from now
(``30s``, ``30m``, ``24h``, ``7d``, ``2w``).

Store timestamps are naive UTC, so results are naive UTC datetimes.
"""
from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone

_RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def utcnow() -> datetime:
    """The current time as a naive UTC datetime (the store's convention)."""
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
