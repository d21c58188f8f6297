"""Time named in a query: a window or a preference on the memories' ``occurred_at``.

"yesterday", "last week", "in March", "this month" become a window (memories inside it
keep their score, the others are down-weighted, never dropped); "the latest", "most
recent" ask for a stronger preference for new memories; "when did …" asks about a time
and must not prefer new memories at all. Rules, no parser library: it runs on every
query inside the deadline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

__all__ = ["MONTHS", "TimeIntent", "TimeMode", "parse_time"]

MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip

_MONTH = "|".join([*MONTHS, *(m[:3] for m in MONTHS if m != "may"), "sept"])

_RELATIVE = re.compile(
    r"\b(?P<phrase>yesterday|today|tonight|this morning|"
    r"(?:last|this|past|previous) (?:week|month|year|weekend)|"
    r"(?:a|one|two|three|few|couple of) (?:days?|weeks?) ago|"
    r"(?:past|last) (?P<n>\d{1,3}|two|three|few) (?P<unit>days|weeks|months))\b",
    re.IGNORECASE,
)
_IN_MONTH = re.compile(rf"\b(?:in|during|since|of|early|late|mid) (?P<month>{_MONTH})\b\.?", re.I)
_LATEST = re.compile(
    r"\b(?:the )?(?:latest|most recent(?:ly)?|newest|last time|currently|these days|"
    r"right now|lately|recently)\b",
    re.IGNORECASE,
)
_WHEN = re.compile(r"^\s*(?:when|what (?:day|date|month|year|time)|how long ago)\b", re.I)

_NUMBERS = {"two": 2, "three": 3, "few": 3}


class TimeMode(StrEnum):
    DEFAULT = "default"
    WINDOW = "window"
    LATEST = "latest"
    NEUTRAL = "neutral"


@dataclass(frozen=True, slots=True)
class TimeIntent:
    """What the query says about time; ``query`` is the text left for lexical matching."""

    mode: TimeMode
    query: str
    start: datetime | None = None
    end: datetime | None = None

    def contains(self, moment: datetime) -> bool:
        return (self.start is None or moment >= self.start) and (
            self.end is None or moment < self.end
        )


def _strip(query: str, match: re.Match[str]) -> str:
    rest = (query[: match.start()] + " " + query[match.end() :]).strip()
    return rest if re.search(r"\w", rest) else query


def _day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _relative_window(phrase: str, n: str | None, unit: str | None, now: datetime) -> tuple[
    datetime, datetime
]:  # fmt: skip
    phrase = phrase.lower()
    today = _day(now)
    if phrase in ("today", "tonight", "this morning"):
        return today, now + timedelta(days=1)
    if phrase == "yesterday":
        return today - timedelta(days=1), today
    if unit and n:
        count = int(n) if n.isdigit() else _NUMBERS.get(n, 3)
        days = {"days": 1, "weeks": 7, "months": 30}[unit.lower()] * count
        return now - timedelta(days=days), now + timedelta(days=1)
    if phrase.endswith("ago"):
        weeks = "week" in phrase
        amount = _NUMBERS.get(phrase.split()[0], 1) * (7 if weeks else 1)
        centre = now - timedelta(days=amount)
        slack = timedelta(days=4 if weeks else 1)
        return centre - slack, centre + slack
    span = {"week": 7, "weekend": 7, "month": 31, "year": 366}[phrase.split()[-1]]
    if phrase.startswith("this"):
        return now - timedelta(days=span), now + timedelta(days=1)
    # "last week": the week before this one, with a day of slack on both sides
    return now - timedelta(days=2 * span + 1), now - timedelta(days=max(1, span // 7))


def _month_window(month: str, now: datetime) -> tuple[datetime, datetime]:
    """The most recent such month that has begun (``in March`` asked in May: this March)."""
    lower = month.lower().rstrip(".")
    number = next(i for i, name in enumerate(MONTHS, start=1) if name.startswith(lower[:3]))
    year = now.year if number <= now.month else now.year - 1
    start = now.replace(year=year, month=number, day=1, hour=0, minute=0, second=0, microsecond=0)
    end = start.replace(year=year + 1, month=1) if number == 12 else start.replace(month=number + 1)
    return start, end


def parse_time(query: str, now: datetime) -> TimeIntent:
    """The time intent of ``query`` relative to ``now`` (timezone-aware)."""
    match = _RELATIVE.search(query)
    if match:
        start, end = _relative_window(match.group("phrase"), match["n"], match["unit"], now)
        return TimeIntent(TimeMode.WINDOW, _strip(query, match), start, end)
    month = _IN_MONTH.search(query)
    if month:
        start, end = _month_window(month.group("month"), now)
        return TimeIntent(TimeMode.WINDOW, _strip(query, month), start, end)
    if _WHEN.search(query):
        return TimeIntent(TimeMode.NEUTRAL, query)
    latest = _LATEST.search(query)
    if latest:
        return TimeIntent(TimeMode.LATEST, _strip(query, latest))
    return TimeIntent(TimeMode.DEFAULT, query)
