"""What the page's reading of our test message's turn (drivers/discover_turn.py) means for the profile:
the two sides (a selector each, or every bubble and its author's name), the agent's work (tool,
thought, status, and how long a tool's pause may be), the busy marker, and which selectors rest on
class names a build generated. Pure functions: each returns the profile's parts and what to say."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from .discover_page import GENERATED

ACTIVITY_QUIET_MIN_MS = 5000  # the runtime's default: a proposal never goes below it


class Found(BaseModel):
    """What discovery decided for one part of the profile, and what it weighed (said on stderr)."""

    part: str
    selector: str | None = None
    how: str = ""
    rejected: list[str] = []


def _found(part: str, selector: str | None, how: str, rejected: list[str] | None = None) -> Found:
    return Found(part=part, selector=selector, how=how, rejected=rejected or [])


@dataclass
class Reading:
    selectors: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    findings: list[Found] = field(default_factory=list)
    problem: str | None = None  # set when the sides could not be told apart: discovery stops there


def _rejected(pairs: list[list[str]]) -> list[str]:
    return [f"{sel!r}: {why}" for sel, why in pairs]


def regex_literal(text: str) -> str:
    """`text` as a regular expression that matches it alone (the same in Python and JavaScript)."""
    return re.sub(r"[.*+?^${}()|[\]\\]", lambda m: "\\" + m.group(0), text)


def sides(turn: dict[str, Any]) -> Reading:
    """Selectors for our bubbles and the agent's; where none tells them apart, every bubble and the
    element that names its author (selectors.message, selectors.author, options.authors)."""
    out = Reading()
    assistant, user, authors = turn["assistant"], turn["user"], turn.get("authors")
    if assistant["ok"] and user["ok"]:
        out.selectors["assistant_message"], out.selectors["user_message"] = assistant["ok"][0], user["ok"][0]
        styled = ("; told by an inline style: no class, role or attribute tells the sides apart"
                  if "[style*=" in assistant["ok"][0] + user["ok"][0] else "")
        out.findings += [_found("assistant_message", assistant["ok"][0], f"{turn['rows']} reply row(s){styled}",
                                _rejected(assistant["rejected"])),
                         _found("user_message", user["ok"][0], f"holds our message{styled}", _rejected(user["rejected"]))]
        return out
    found = authors and authors.get("found")
    if found:
        out.selectors.update(message=found["message"], author=found["author"])
        out.options["authors"] = {"agent": regex_literal(found["agent"]), "user": regex_literal(found["user"])}
        failed = "the reply's bubble" if not assistant["ok"] else "the bubble of our message"
        out.findings += [
            _found("message", found["message"], f"every bubble, ours and the agent's: no selector matches {failed} "
                    f"and not the other's", _rejected((assistant if not assistant["ok"] else user)["rejected"])),
            _found("author", found["author"], f"names the author in each bubble: {found['user']!r} in ours, "
                    f"{found['agent']!r} in the reply's (options.authors)", _rejected(authors["rejected"]))]
        return out
    side, whose = (assistant, "the reply's bubble") if not assistant["ok"] else (user, "the bubble of our message")
    tried = _rejected(side["rejected"])[:6] + (_rejected(authors["rejected"])[:3] if authors else [])
    out.problem = (f"no selector matches {whose} and not the other's, and no element in each bubble names its "
                   f"author: {'; '.join(tried)}")
    return out


def work(turn: dict[str, Any], longest_pause_s: float, shown: str | None) -> Reading:
    """The agent's work as the turn showed it: a selector per kind (the run keeps it as the turn's activity,
    never as the answer), and completion.activity_quiet_ms from the longest pause seen while it worked."""
    out = Reading()
    found, rejected = turn["work"]["found"], _rejected(turn["work"]["rejected"])
    for kind in ("tool", "thought", "status"):
        piece = found.get(kind)
        if not piece:
            continue
        out.selectors[kind] = piece["sel"]
        titles = ", ".join(repr(t[:50]) for t in piece["titles"][:3])
        how = f"{piece['count']} piece(s) of the agent's work, taken as activity, never as the answer: {titles}"
        if piece.get("shared"):
            how += " (its thoughts and tool cards look alike: all kept as tool)"
        out.findings.append(_found(kind, piece["sel"], how, rejected))
        rejected = []
    if out.selectors:
        quiet = max(ACTIVITY_QUIET_MIN_MS, math.ceil(longest_pause_s * 2 * 2) * 500)
        out.options["completion"] = {"activity_quiet_ms": quiet}
        out.findings.append(_found("completion.activity_quiet_ms", None, f"{quiet} ms: twice the longest pause seen while the agent "
                                    f"worked ({longest_pause_s:.1f} s), the runtime's 5000 at least"))
    elif shown:
        out.findings.append(_found("activity", None, f"the page showed {shown} during the turn, but no selector tells "
                                    "it from the answer: not kept", rejected))
    return out


def strip(turn: dict[str, Any]) -> Reading:
    """Parts of each bubble that are not its words (an avatar, a dot, a time): selectors.strip."""
    parts = turn.get("strip") or []
    if not parts:
        return Reading()
    sel = ", ".join(p["sel"] for p in parts)
    shown = ", ".join(repr(p["text"]) for p in parts)
    return Reading(selectors={"strip": sel}, findings=[_found("strip", sel, f"parts of each bubble that are not its words "
                                                                          f"({shown}): the run reads a bubble without them")])


def busy(markers: dict[str, Any]) -> Reading:
    """The busy marker: the best element seen only while the agent worked (or the text box disabled then)."""
    rejected = _rejected(markers["rejected"])
    if markers["found"]:
        best = markers["found"][0]
        return Reading(selectors={"busy": best["sel"]},
                       findings=[_found("busy", best["sel"], f"shown only while the agent worked ({best['name'][:50]!r})", rejected)])
    return Reading(findings=[_found("busy", None, "nothing showed only while the agent worked: replies end on a quiet window",
                                    rejected)])


_CLASS = re.compile(r"\.((?:\\.|[\w-])+)")
_PREFIX = re.compile(r'\[class\*="([^"]+)"\]')


def build_made(selectors: dict[str, str]) -> list[str]:
    """What to say of selectors resting on names a build made: whole generated classes (they hold until
    the next deploy), or the stable prefix taken of a class whose counter changes."""
    made, prefixed = [], []
    for part, sel in selectors.items():
        names = [name for name in (c.replace("\\", "") for c in _CLASS.findall(sel)) if GENERATED.match(name)]
        if names:
            made.append(f"{part} {sel!r}")
        if _PREFIX.search(sel):
            prefixed.append(f"{part} {sel!r}")
    lines = []
    if made:
        lines.append("these rest on class names a build generated, stable only until its next deploy (nothing stabler "
                     "marks them: no role, test id or attribute of their own): " + ", ".join(made))
    if prefixed:
        lines.append("these take the stable prefix of a class whose number changes (a build's counter): " + ", ".join(prefixed))
    return lines
