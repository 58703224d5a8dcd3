"""Schedules of routines (issue 43, strongroom/routines/schedule.py): five-field cron on a
zone's wall clock, daylight saving done right, without a database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from strongroom.routines.schedule import (
    MAX_PREVIEW,
    BadSchedule,
    NeverFires,
    check_cron,
    fire_times,
    latest_due,
    zone_of,
)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def times(cron: str, zone: str, after: datetime, count: int) -> list[datetime]:
    return fire_times(cron, zone_of(zone), after=after, count=count)


def test_sydney_2am_on_2027_04_04_when_clocks_go_back_fires_once_at_the_first_2am():
    # 3:00 AEDT (+11) becomes 2:00 AEST (+10): 2:00 happens at 15:00 and 16:00 UTC.
    fired = times("0 2 * * *", "Australia/Sydney", utc(2027, 4, 2, 0), 3)
    assert fired == [utc(2027, 4, 2, 15), utc(2027, 4, 3, 15), utc(2027, 4, 4, 16)]


def test_sydney_2am_on_2027_10_03_when_clocks_go_forward_is_skipped():
    # 2:00 AEST becomes 3:00 AEDT: no 2:00 on 3 October 2027.
    fired = times("0 2 * * *", "Australia/Sydney", utc(2027, 10, 1, 0), 3)
    assert fired == [utc(2027, 10, 1, 16), utc(2027, 10, 3, 15), utc(2027, 10, 4, 15)]
    assert all(instant.astimezone(zone_of("Australia/Sydney")).hour == 2 for instant in fired)


def test_new_york_2am_on_2027_03_14_when_clocks_go_forward_is_skipped():
    fired = times("0 2 * * *", "America/New_York", utc(2027, 3, 12, 12), 3)
    assert fired == [utc(2027, 3, 13, 7), utc(2027, 3, 15, 6), utc(2027, 3, 16, 6)]


def test_new_york_2am_on_2027_11_07_when_clocks_go_back_fires_once():
    # 2:00 EDT becomes 1:00 EST: 1:00-1:59 repeat, 2:00 (EST) happens once.
    fired = times("0 2 * * *", "America/New_York", utc(2027, 11, 5, 12), 3)
    assert fired == [utc(2027, 11, 6, 6), utc(2027, 11, 7, 7), utc(2027, 11, 8, 7)]


def test_a_repeated_hour_fires_each_minute_once():
    # New York, 7 November 2027: 1:30 local occurs at 05:30 and 06:30 UTC; fires at 05:30.
    fired = times("30 1 * * *", "America/New_York", utc(2027, 11, 7, 0), 2)
    assert fired == [utc(2027, 11, 7, 5, 30), utc(2027, 11, 8, 6, 30)]
    # Starting inside the repeat (after the first 1:30) does not fire the second one.
    assert times("30 1 * * *", "America/New_York", utc(2027, 11, 7, 5, 45), 1) == [
        utc(2027, 11, 8, 6, 30)
    ]


def test_every_minute_across_a_repeated_hour_has_no_duplicate_instants():
    fired = times("* * * * *", "America/New_York", utc(2027, 11, 7, 5, 0), MAX_PREVIEW)
    assert len(fired) == len(set(fired)) == MAX_PREVIEW
    assert fired == sorted(fired)


def test_weekly_monday_7am_in_sydney():
    fired = times("0 7 * * 1", "Australia/Sydney", utc(2027, 3, 30), 2)
    assert fired == [utc(2027, 4, 4, 21), utc(2027, 4, 11, 21)]  # +10 after 4 April


def test_count_is_bounded_by_the_preview_maximum():
    assert len(times("* * * * *", "UTC", utc(2027, 1, 1), 10_000)) == MAX_PREVIEW


def test_a_preview_that_reaches_the_calendars_end_stops_there():
    """Issue 52: the leap days after 8999-06-01 walked past the year 9999 (a 500)."""
    found = times("0 0 29 2 *", "UTC", utc(8999, 6, 1), MAX_PREVIEW)
    assert found[0] == utc(9004, 2, 29) and found[-1] == utc(9996, 2, 29)


@pytest.mark.parametrize(
    "cron", ["* * * *", "* * * * * *", "@daily", "61 * * * *", "a b c d e", "R * * * *", ""]
)
def test_anything_but_five_cron_fields_is_refused(cron):
    with pytest.raises(BadSchedule) as refused:
        check_cron(cron)
    assert refused.value.field == "cron"


@pytest.mark.parametrize(
    "cron", ["1-0 * * * *", "0 23-1 * * *", "0 0 * dec-jan *", "0 0 * * fri-mon"]
)
def test_a_range_that_runs_backwards_is_refused(cron):
    """Issue 52: `1-0 * * * *` was accepted and fired every minute."""
    with pytest.raises(BadSchedule, match="backwards") as refused:
        check_cron(cron)
    assert refused.value.field == "cron"


def test_forward_ranges_and_names_are_kept():
    assert check_cron("0-30 9-17 * jan-mar mon-fri") == "0-30 9-17 * jan-mar mon-fri"
    assert zone_of("Australia/Sydney").key == "Australia/Sydney" and zone_of("UTC").key == "UTC"


def test_a_cron_that_matches_no_date_is_refused():
    with pytest.raises(NeverFires):
        check_cron("0 0 30 2 *")


@pytest.mark.parametrize(
    "zone",
    [
        "Mars/Olympus", "UTC+3", "../etc/passwd", "/etc/localtime", "",
        # tz database files that are no IANA zone (issue 52: accepted before)
        "localtime", "posixrules", "Factory", "right/UTC", "posix/Europe/Paris",
    ],
)  # fmt: skip
def test_a_zone_that_is_not_iana_is_refused(zone):
    with pytest.raises(BadSchedule) as refused:
        zone_of(zone)
    assert refused.value.field == "timezone"


def test_latest_due_is_the_last_missed_time_only():
    since, until = utc(2027, 1, 1), utc(2027, 1, 3, 12, 30, 30)
    assert latest_due("* * * * *", zone_of("UTC"), since=since, until=until) == utc(
        2027, 1, 3, 12, 30
    )
    assert latest_due("0 7 * * *", zone_of("UTC"), since=since, until=until) == utc(2027, 1, 3, 7)


def test_latest_due_is_none_before_the_first_time():
    since = utc(2027, 1, 1, 7, 0, 1)
    until = since + timedelta(hours=2)
    assert latest_due("0 7 * * *", zone_of("UTC"), since=since, until=until) is None
