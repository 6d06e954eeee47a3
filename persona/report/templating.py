"""The Jinja2 environment of the HTML pages: templates from persona/report/templates/, autoescape on.

Every value that reaches a page is escaped by Jinja unless a template marks it safe, and none
does: the agent's words, run ids and benchmark titles are hostile text to a browser.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from persona.report.charts import bar_width, score_class
from persona.report.cost import money
from persona.report.markdown import duration


def thousands(value: int | float) -> str:
    return f"{value:,}"


# How a run's status is coloured where runs are listed: an end that needs a look stands out.
STATUS_CLASS = {"finished": "s10", "failed": "s0", "stalled": "s0", "budget": "s5", "interrupted": "s5"}


def status_class(status: str) -> str:
    return STATUS_CLASS.get(status, "")


def number(value: float, spec: str = "g") -> str:
    return format(value, spec)


@cache
def environment() -> Environment:
    env = Environment(loader=PackageLoader("persona.report", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(thousands=thousands, number=number, score_class=score_class, money=money, status_class=status_class,
                       duration=duration)
    env.globals.update(bar_width=bar_width)
    return env


def render_page(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)
