"""The story's dates: a phase's `📅 2023-05-08 13:56` line, how the date is said, and how it is heard.

An agent in a chat knows today's date from its own clock, never from the story: a person who says
"I went yesterday" on a day the agent believes is in 2026 cannot be asked "when did I go?". So a
phase may carry the story's date (one line, `📅 YYYY-MM-DD` or `📅 YYYY-MM-DD HH:MM`), and the
persona tells it to the agent. This module reads that line, says the date in the benchmark's
language, finds the dates a typed message says (any common written form, with its year), and tells
which checks ask for a date, a time span or "how long ago".
"""

from __future__ import annotations

import re
from datetime import date, datetime

from pydantic import BaseModel

DATE_MARK = "📅"
_DATE_LINE = re.compile(r"^\s*📅\ufe0f?\s*(?P<date>\d{4}-\d{1,2}-\d{1,2})(?:[ T]+(?P<time>\d{1,2}:\d{2}))?\s*$")
DATE_FORM = f"'{DATE_MARK} YYYY-MM-DD' or '{DATE_MARK} YYYY-MM-DD HH:MM'"


class StoryDate(BaseModel):
    """A phase's date in the story, as its `📅` line gives it (the time only when the line has one)."""

    when: datetime
    has_time: bool = False
    line: int = 0

    @property
    def day(self) -> date:
        return self.when.date()

    def iso(self) -> str:
        return f"{self.when:%Y-%m-%d %H:%M}" if self.has_time else f"{self.when:%Y-%m-%d}"

    def line_text(self) -> str:
        """The phase line that gives this date, as an author writes it."""
        return f"{DATE_MARK} {self.iso()}"


def parse_date_line(line: str) -> tuple[StoryDate | None, str | None]:
    """The date a `📅` line gives, or why the line gives none."""
    m = _DATE_LINE.match(line)
    if m is None:
        return None, f"a date line must read {DATE_FORM}: the story's date (and time) in this phase"
    try:
        y, mo, d = (int(p) for p in m["date"].split("-"))
        hour, minute = (int(p) for p in m["time"].split(":")) if m["time"] else (0, 0)
        return StoryDate(when=datetime(y, mo, d, hour, minute), has_time=m["time"] is not None), None
    except ValueError as e:
        return None, f"{m['date']}{' ' + m['time'] if m['time'] else ''} is no date or time ({e})"


# -- saying a date ----------------------------------------------------------------------------------

EN_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
             "November", "December"]
EN_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
RU_MONTHS = ["января", "февраля", "марта", "апреля", "мая", "июня", "июля", "августа", "сентября", "октября",
             "ноября", "декабря"]  # genitive: "8 мая"
RU_DAYS = ["понедельник", "вторник", "среда", "четверг", "пятница", "суббота", "воскресенье"]


def spoken(story: StoryDate, language: str = "en") -> str:
    """'Monday, 8 May 2023, 1:56 pm' (ru: 'понедельник, 8 мая 2023 года, 13:56'); other languages as en."""
    w = story.when
    if language == "ru":
        day = f"{RU_DAYS[w.weekday()]}, {w.day} {RU_MONTHS[w.month - 1]} {w.year} года"
        return f"{day}, {w:%H:%M}" if story.has_time else day
    day = f"{EN_DAYS[w.weekday()]}, {w.day} {EN_MONTHS[w.month - 1]} {w.year}"
    if not story.has_time:
        return day
    return f"{day}, {w.hour % 12 or 12}:{w:%M} {'am' if w.hour < 12 else 'pm'}"


def day_text(day: date) -> str:
    """'8 May 2023': a day as reports name it."""
    return f"{day.day} {EN_MONTHS[day.month - 1]} {day.year}"


# -- hearing a date ---------------------------------------------------------------------------------

# Month names as they are written: English in full or cut to three letters, Russian in any case ending.
_EN_MONTH = {m.lower()[:3]: i for i, m in enumerate(EN_MONTHS, 1)}
_RU_MONTH = {stem: i for i, stem in enumerate(
    ["январ", "феврал", "март", "апрел", "ма", "июн", "июл", "август", "сентябр", "октябр", "ноябр", "декабр"], 1)}
_EN_NAME = r"(?P<{g}>jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_RU_NAME = r"(?P<{g}>январ|феврал|март|апрел|ма|июн|июл|август|сентябр|октябр|ноябр|декабр)[а-я]*"
_DAY = r"(?P<{g}>[0-3]?\d)(?:st|nd|rd|th|-?го|-?е)?"
_YEAR = r"(?P<{g}>(?:19|20)\d\d)"
_SEP = r"[\s,]+(?:of\s+)?"
_FORMS = [re.compile(p, re.IGNORECASE) for p in (
    rf"\b{_DAY.format(g='d')}{_SEP}{_EN_NAME.format(g='m')}[\s,]+{_YEAR.format(g='y')}\b",  # 8 May 2023, 8th of May, 2023
    rf"\b{_EN_NAME.format(g='m')}\s+{_DAY.format(g='d')}[\s,]+{_YEAR.format(g='y')}\b",  # May 8, 2023
    rf"(?<!\w){_DAY.format(g='d')}\s+{_RU_NAME.format(g='rm')}[\s,]+{_YEAR.format(g='y')}(?!\d)",  # 8 мая 2023 года
    r"\b(?P<y>(?:19|20)\d\d)[-/.](?P<mo>[01]?\d)[-/.](?P<d>[0-3]?\d)\b",  # 2023-05-08
    r"\b(?P<d>[0-3]?\d)[./-](?P<mo>[01]?\d)[./-](?P<y>(?:19|20)\d\d)\b",  # 08.05.2023, 8/5/2023
    r"\b(?P<mo2>[01]?\d)/(?P<d2>[0-3]?\d)/(?P<y>(?:19|20)\d\d)\b",  # 5/8/2023, as in the US
)]


def _month(m: re.Match[str]) -> int | None:
    groups = m.groupdict()
    if groups.get("m"):
        return _EN_MONTH.get(groups["m"].lower()[:3])
    if groups.get("rm"):
        return _RU_MONTH.get(groups["rm"].lower())
    number = groups.get("mo") or groups.get("mo2")
    return int(number) if number else None


def dates_in(text: str) -> set[date]:
    """Every calendar date the text says with its day, month and year, in any common form: '8 May 2023',
    'May 8th, 2023', '8 мая 2023', '2023-05-08', '08.05.2023', '5/8/2023' (day/month and month/day both)."""
    found = set()
    for form in _FORMS:
        for m in form.finditer(text):
            month = _month(m)
            day = m.groupdict().get("d") or m.groupdict().get("d2")
            try:
                found.add(date(int(m["y"]), month or 0, int(day)))
            except (ValueError, TypeError):
                continue
    return found


# -- checks that ask for a time ---------------------------------------------------------------------

_TIME_ANSWER = re.compile(
    r"\b(?:" + "|".join(m.lower() for m in EN_MONTHS) + r"|(?:19|20)\d\d|ago|yesterday|tomorrow|today|last (?:week|month|year)"
    r"|next (?:week|month|year)|weekend|" + "|".join(d.lower() for d in EN_DAYS) + r")\b"
    r"|\b\d+(?:[.,]\d+)?\s*(?:days?|weeks?|months?|years?|hours?|nights?)\b"
    r"|(?<!\w)(?:(?:" + "|".join(s for s in _RU_MONTH if len(s) > 2) + r"|назад|вчера|завтра|сегодня)[а-я]*|ма[йя](?![а-я]))"
    r"|\d+\s*(?:дн|день|недел|месяц|год|лет|час|ноч|сут)[а-я]*",
    re.IGNORECASE)


def asks_for_time(category: str, answer: str) -> bool:
    """A check whose answer is a date, a time span or "how long ago": [temporal], or an answer that
    names a month, a year, a weekday or a span ("4 years", "The week before 9 June 2023")."""
    return category == "temporal" or bool(_TIME_ANSWER.search(answer))
