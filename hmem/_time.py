"""The one codec between aware datetimes and the integers/floats backends store.

Stores keep times as integer microseconds since the Unix epoch (UTC): they
round-trip exactly (float epoch seconds would not) and compare as numbers, in
SQLite columns, Redis JSON and sorted-set scores alike. Session stores keep float
epoch seconds from their clock; :func:`from_seconds` reads those back.

Example::

    >>> from datetime import UTC, datetime
    >>> t = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)
    >>> to_micros(t)
    1714564800123456
    >>> from_micros(to_micros(t)) == t
    True
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

__all__ = ["EPOCH", "MONTH_NAMES", "day_key", "from_micros", "from_seconds", "to_micros"]

#: 1970-01-01T00:00:00Z, the zero of every stored time.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)


def to_micros(dt: datetime) -> int:
    """Integer microseconds since the epoch of an aware ``dt`` (exact, any zone).

    A naive datetime is a bug upstream (hmem's values are always aware), so it raises
    ``TypeError`` rather than guessing the local zone.

    >>> to_micros(datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC))
    1000000
    """
    if dt.tzinfo is None:
        raise TypeError(f"to_micros needs an aware datetime, got {dt!r}")
    return (dt - EPOCH) // _US


def from_micros(us: int) -> datetime:
    """The UTC datetime ``us`` microseconds after the epoch; inverse of :func:`to_micros`.

    >>> from_micros(-1).isoformat()
    '1969-12-31T23:59:59.999999+00:00'
    """
    return EPOCH + int(us) * _US


def from_seconds(seconds: float) -> datetime:
    """The UTC datetime of float epoch ``seconds`` (a session store's clock reading).

    >>> from_seconds(86400.5).isoformat()
    '1970-01-02T00:00:00.500000+00:00'
    """
    return datetime.fromtimestamp(float(seconds), UTC)


#: English month names of written dates ("7 May 2023"): fixed, never the locale's.
MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
               "November", "December")


def day_key(day: date) -> str:
    """A day as hmem writes it (index keys, dated statements): ``"7 May 2023"``, English,
    no locale.

    >>> day_key(date(2023, 5, 7))
    '7 May 2023'
    """
    return f"{day.day} {MONTH_NAMES[day.month - 1]} {day.year}"
