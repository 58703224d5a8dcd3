"""When a scheduled routine fires (issue 43): a five-field cron read in an IANA time zone.

The cron is matched against the zone's wall clock, not against UTC: `0 7 * * 1` is 7:00 on
Mondays in Sydney whatever Sydney's offset is that week. croniter (a dependency of
procrastinate, kept up) walks the wall-clock times as naive datetimes; each is then placed
on the zone's clock with `zoneinfo`:

- a wall-clock time that does not exist (the hour skipped when clocks go forward) is
  skipped: that day has no fire;
- a wall-clock time that occurs twice (the hour repeated when clocks go back) fires once,
  at its first occurrence (`fold=0`, the earlier UTC instant).

Everything here is plain data in and out, with no database; `fire_times` is bounded by
`count` (at most MAX_PREVIEW), and a cron that matches nothing in croniter's search window
(`0 0 30 2 *`) is refused when the routine is saved (`NeverFires`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from strongroom.lazy import LazyModule

# Imported at the first schedule read or fired, not at every start (issue 29).
cron = LazyModule("croniter")

MAX_PREVIEW = 500  # fire times one preview answers at most
MAX_CRON_CHARS = 100
MAX_ZONE_CHARS = 64
# Only the five classic fields: minute, hour, day of month, month, day of week, with month
# and day names. croniter's own extensions (a sixth field of seconds, `@daily`, `R` and `H`
# for random and hashed times) are refused.
_FIELD = re.compile(r"[0-9*/,\-#LW?]+")
_NAMES = re.compile(
    r"jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri|sat|sun", re.I
)


_RANGE = re.compile(r"([0-9]+|[a-z]{3})-([0-9]+|[a-z]{3})", re.I)
_NUMBER_OF = {
    name: number
    for names in (
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        ("sun", "mon", "tue", "wed", "thu", "fri", "sat"),
    )
    for number, name in enumerate(names, start=1 if len(names) == 12 else 0)
}


def _number(value: str) -> int:
    """A range's end as a number: digits, or a month's or a day's name."""
    return int(value) if value.isdigit() else _NUMBER_OF.get(value.lower(), -1)


class BadSchedule(ValueError):
    """The cron or the zone cannot be used; `field` says which (`cron` or `timezone`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class NeverFires(BadSchedule):
    """The cron is well formed but matches no time (`0 0 30 2 *`)."""


# Files of a tz database that are no zone of the IANA list: the host's own clock, a file
# naming no place, and the alternative trees (issue 52: all were accepted).
_NOT_ZONES = frozenset({"localtime", "posixrules", "Factory"})


@functools.cache
def _iana_zones() -> frozenset[str]:
    return frozenset(available_timezones()) - _NOT_ZONES


def zone_of(name: str) -> ZoneInfo:
    """The IANA zone `name`; raises BadSchedule for anything else (`UTC+3`, `../etc`,
    `localtime`, `right/UTC`)."""
    if not name or len(name) > MAX_ZONE_CHARS or name.startswith(("/", ".")) or ".." in name:
        raise BadSchedule("timezone", "not an IANA time zone name")
    if name not in _iana_zones():
        raise BadSchedule("timezone", f"unknown IANA time zone: {name}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as error:
        raise BadSchedule("timezone", f"unknown IANA time zone: {name}") from error


def saved_zone(name: str) -> ZoneInfo:
    """The zone a routine was saved with: checked by `zone_of` then, and read as it is here,
    so that a routine saved before a check was added still fires and previews."""
    return ZoneInfo(name)


def check_cron(expression: str) -> str:
    """`expression` with its fields separated by single spaces; raises BadSchedule when it is
    not five cron fields croniter can read, NeverFires when it matches no time."""
    fields = expression.split()
    if len(fields) != 5 or len(expression) > MAX_CRON_CHARS:
        raise BadSchedule("cron", "five fields: minute hour day-of-month month day-of-week")
    if not all(_FIELD.fullmatch(_NAMES.sub("0", field)) for field in fields):
        raise BadSchedule("cron", "a field holds characters cron does not use")
    for field in fields:
        for low, high in _RANGE.findall(field):
            if _number(low) > _number(high):  # croniter read `1-0` as every minute
                raise BadSchedule("cron", f"a range runs backwards: {low}-{high}")
    normal = " ".join(fields)
    try:
        cron.croniter(normal, datetime(2000, 1, 1))
    except (cron.CroniterBadCronError, ValueError, KeyError, IndexError) as error:
        raise BadSchedule("cron", f"not a valid cron expression: {error}") from error
    try:
        next(_wall_clock(normal, datetime(2000, 1, 1)))
    except (cron.CroniterBadDateError, StopIteration) as error:
        raise NeverFires("cron", "the expression matches no date") from error
    return normal


def _wall_clock(expression: str, after: datetime) -> Iterator[datetime]:
    """Naive wall-clock times matching `expression`, strictly after naive `after`."""
    walk = cron.croniter(expression, after, day_or=True)
    while True:
        yield walk.get_next(datetime)


def fire_times(
    expression: str,
    zone: ZoneInfo,
    *,
    after: datetime,
    count: int,
    until: datetime | None = None,
) -> list[datetime]:
    """The next `count` (at most MAX_PREVIEW) fire instants in UTC strictly after the aware
    `after` (and not after `until`, when given), with daylight saving done as the module
    says. Fewer when croniter finds no further match, or the calendar ends."""
    count = max(0, min(count, MAX_PREVIEW))
    after_utc = after.astimezone(UTC)
    # Start an hour early on the wall clock: the local time `after` maps to may be in a
    # repeated hour, whose first occurrence is earlier in UTC than the second.
    start = after_utc.astimezone(zone).replace(tzinfo=None, fold=0) - timedelta(hours=1)
    found: list[datetime] = []
    seen: set[datetime] = set()
    try:
        for local in _wall_clock(expression, start):
            instant = _first_instant(local, zone)
            if instant is None or instant <= after_utc or instant in seen:
                continue
            if until is not None and instant > until:
                break
            seen.add(instant)
            found.append(instant)
            if len(found) >= count:
                break
    except (cron.CroniterBadDateError, OverflowError):
        pass  # no further match within croniter's search, or past the year 9999
    except ValueError as error:  # dateutil's step past the year 9999 (issue 52: a 500)
        if "out of range" not in str(error):
            raise
    return found


def next_fire(expression: str, zone: ZoneInfo, *, after: datetime) -> datetime | None:
    """The first fire instant (UTC) strictly after `after`; None when there is none."""
    times = fire_times(expression, zone, after=after, count=1)
    return times[0] if times else None


def latest_due(
    expression: str, zone: ZoneInfo, *, since: datetime, until: datetime
) -> datetime | None:
    """The last fire instant in [`since`, `until`] (UTC), None when none is. Walks back
    from `until` (croniter's `get_prev`), so a long outage costs a few steps, not one per
    missed minute."""
    since_utc, until_utc = since.astimezone(UTC), until.astimezone(UTC)
    # An hour late on the wall clock: `until` may be the second pass of a repeated hour.
    start = until_utc.astimezone(zone).replace(tzinfo=None, fold=0) + timedelta(hours=1)
    walk = cron.croniter(expression, start, day_or=True)
    try:
        while True:
            local = walk.get_prev(datetime)
            instant = _first_instant(local, zone)
            if instant is None or instant > until_utc:
                continue
            return instant if instant >= since_utc else None
    except (cron.CroniterBadDateError, OverflowError):
        return None


def _first_instant(local: datetime, zone: ZoneInfo) -> datetime | None:
    """The UTC instant of the naive wall-clock time `local` in `zone`: None when the zone
    skips it, the earlier instant when it occurs twice."""
    placed = local.replace(tzinfo=zone, fold=0)
    instant = placed.astimezone(UTC)
    back = instant.astimezone(zone).replace(tzinfo=None)
    if back != local:
        return None  # in a gap: the clocks jumped over it
    return instant


def local_time(instant: datetime, zone: ZoneInfo) -> datetime:
    """`instant` on the zone's clock, with its offset."""
    return instant.astimezone(zone)
