"""A frontend profile: the selectors and habits that let the generic driver work a given chat UI.

Every field can be overridden from config.jsonc (`agent.selectors`, `agent.options`), so a user
can fix a profile for their build of a frontend without touching code.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

# What bots say when `/new` worked: "New conversation started", "Context cleared", "Начнём заново".
DEFAULT_NEW_SESSION_ACK = (r"\b(new|fresh|reset|clear(ed)?|restart(ed)?|start(ed)?|forg[eo]t\w*)\b"
                           r"|нов|сброс|сброш|очищ|забыл|заново")


class Selectors(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input: str = Field(..., description="Where the message is typed (textarea or contenteditable)")
    send: str | None = Field(None, description="Send button; None presses Enter")
    assistant_message: str | None = Field(None, description="Each agent bubble (or, where only the author's name "
                                                            "tells the sides apart, `message` with `author`)")
    user_message: str | None = Field(None, description="Each of our bubbles: proves a send, orders replies")
    message: str | None = Field(None, description="Every bubble, ours and the agent's alike, in a chat that tells them "
                                                  "apart only by the author's name or avatar (with `author` and the "
                                                  "profile's `authors`)")
    author: str | None = Field(None, description="Inside a bubble of `message`, what names its author: a name, or an "
                                                 "avatar whose alt, aria-label or title names it. A bubble showing "
                                                 "none is by the author of the bubble before it (messengers name the "
                                                 "author once per group)")
    busy: str | None = Field(None, description="Visible while the agent is generating (stop button, typing...)")
    done: str | None = Field(None, description="Marks a finished reply: on its bubble (or the bubble's container) or after it")
    ignore: str | None = Field(None, description="Bubbles that are never replies: welcome, placeholders")
    strip: str | None = Field(None, description="Parts of a bubble that are not its text: timestamps, buttons")
    tool: str | None = Field(None, description="The agent's work shown in the chat: a tool call or its result (a tool card, "
                                               "a step). In a bubble or beside it, never the answer: kept as the turn's "
                                               "activity")
    thought: str | None = Field(None, description="The agent's reasoning shown in the chat ('Thought for 3 seconds', a "
                                                  "thinking block): the turn's activity, never the answer")
    status: str | None = Field(None, description="A status line of the agent's work ('Searching memory…'): the turn's "
                                                 "activity, never the answer")
    notice: str | None = Field(None, description="UI notices about the agent itself, e.g. context compaction")
    new_chat: str | None = Field(None, description="Starts a new chat")
    new_chat_confirm: str | None = Field(None, description="Confirms the new chat dialog, if the UI asks")
    dismiss: str | None = Field(None, description="Clicked whenever it shows up over the chat: what's-new dialogs, banners")
    error: str | None = Field(None, description="Shown instead of a reply when the agent fails (error bubble, toast)")
    ready: str | None = Field(None, description="Present once the chat has rendered its history (else: the input)")
    start: str | None = Field(None, description="Shown instead of the input in a chat never used: a Telegram "
                                                "bot's START, pressed once on opening (its greeting is not a reply)")
    launcher: str | None = Field(None, description="Opens the chat when its input is not shown (a widget's floating "
                                                   "bubble): clicked on opening, after a reload and after a new chat; "
                                                   "looked for in the page and in every frame")


    @model_validator(mode="after")
    def _sides(self) -> Selectors:
        if self.message and not self.author:
            raise ValueError("message needs author: the element in each bubble that names who wrote it")
        if self.author and not self.message:
            raise ValueError("author needs message: every bubble, ours and the agent's")
        if not self.assistant_message and not self.message:
            raise ValueError("assistant_message is required (or message with author, where only the author's name "
                             "tells the agent's bubbles from ours)")
        if self.message and (self.assistant_message or self.user_message):
            raise ValueError("message with author tells both sides apart: leave assistant_message and user_message out")
        return self

    @property
    def by_author(self) -> bool:
        """The two sides are told apart by the author's name, not by a selector of their own."""
        return bool(self.message)

    @property
    def tells_ours(self) -> bool:
        """Our own bubbles can be found (they prove a send and order the replies)."""
        return bool(self.user_message or self.message)


class Authors(BaseModel):
    """Who wrote a bubble, from the name its `author` element shows: JS regular expressions, case-insensitive,
    searched in the name. One side may be left out: it is then every author the other does not match."""

    model_config = ConfigDict(extra="forbid")

    agent: str | None = Field(None, description="The agent's name (a bot's display name, 'Assistant')")
    user: str | None = Field(None, description="Our name (the logged-in user's, 'User', 'You')")

    @field_validator("agent", "user")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as e:
                raise ValueError(f"not a regular expression: {e}") from None
        return value

    @model_validator(mode="after")
    def _one_at_least(self) -> Authors:
        if self.agent is None and self.user is None:
            raise ValueError("name the agent's author, ours, or both")
        return self


class Completion(BaseModel):
    """When a reply counts as complete: busy marker gone, done marker there, text stable; all bounded."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    quiet_ms: int = Field(1500, ge=0, strict=True, description="Nothing changed this long, when no busy/done marker has spoken")
    quiet_ms_with_markers: int = Field(
        120, ge=0, strict=True, description="Nothing changed this long once busy was seen and is gone (no done marker); raise it "
                         "above the pause between bubbles for agents that send several (Telegram bots)")
    quiet_ms_with_done: int = Field(
        20, ge=0, strict=True, description="Nothing changed this long once the done marker is shown on the last bubble and busy is "
                        "gone: the UI itself says the reply is over, so this only lets a render queued with the "
                        "marker land (a frame at 60 Hz); any change restarts it")
    activity_quiet_ms: int = Field(
        5000, ge=0, strict=True, description="Nothing changed this long when the turn shows work (a tool card, a thought) "
                          "after the last words of its answer and no busy marker speaks: the answer may go on once "
                          "the tool is done")
    poll_ms: int = Field(40, gt=0, strict=True, description="Checks between DOM changes (the page is also checked on every change)")
    first_bubble_timeout_s: float = Field(120, gt=0, strict=True, description="No reply bubble at all after this: error")
    timeout_s: float = Field(600, gt=0, strict=True, description="Hard limit for a whole reply")
    placeholder_patterns: list[str] = Field(
        [r"^\s*$", r"^(…|\.\.\.|\.\.)$", r"^(Thinking|Typing|Loading)\b.{0,3}$"],
        description="Bubble texts (JS regexes, case-insensitive) that are placeholders, not replies",
    )
    rate_limit_patterns: list[str] = Field(
        [r"^\W*(rate.?limit|too many (requests|messages)|you('re| are) sending messages too (fast|quickly)|"
         r"quota exceeded|slow down)"],
        description="Reply or error texts (Python regexes, case-insensitive, searched) that mean: wait, then resend",
    )
    placeholder_means_busy: bool = Field(
        True, description="A placeholder shown after the last real bubble means the reply goes on")


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str
    url: str | None = Field(None, description="Default chat page")
    selectors: Selectors
    completion: Completion = Completion()
    input_method: Literal["fill", "type"] = Field("fill", description="'type' presses each key (editors that ignore fill)")
    authors: Authors | None = Field(
        None, description="With selectors.message and author: which authors' bubbles are the agent's and ours")
    frame: str | list[str] | None = Field(
        None, description="The iframe that holds the chat, outermost first (nested: ['#outer', 'iframe.chat']): each "
                          "step a selector of the iframe element, or 'url=<glob>' matching the frame's address; "
                          "None: the page itself")
    new_session: Literal["button", "message", "url", "reload", "storage"] = Field(
        "button", description="button: click new_chat; message: type new_session_message; url: open new_session_url; "
                              "reload: reload the page; storage: forget the chat origin's storage (localStorage, "
                              "sessionStorage, IndexedDB, cookies) and open the page again, for widgets that keep "
                              "the conversation id there")
    new_session_message: str = "/new"
    new_session_ack: str | None = Field(
        DEFAULT_NEW_SESSION_ACK, description="With new_session 'message': the agent's reply (minus the command) "
                                             "must match this regex (case-insensitive); None accepts any reply")
    new_session_message_opens_chat: bool = Field(
        False, description="With new_session 'message': the UI itself opens a fresh chat on it (OpenClaw's /new), "
                           "so the reset is verified like a button's, not by the agent's acknowledgement")
    new_session_url: str | None = None
    keeps_history: bool | None = Field(
        None, description="Reopening the chat's address shows its messages (False: a reload empties it, as in "
                          "Gradio, Streamlit or a bare deep-chat; None: not known). A run sees it for itself on the "
                          "first reopening after a confirmed reply, and what it sees wins. Only a chat known to keep "
                          "them proves by an empty reopened chat that a first message never arrived, so that it may be "
                          "typed again; else the run stops rather than type it twice")
    reset_timeout_s: float = Field(15, gt=0, strict=True, description="After 'new chat', the old messages must be gone this soon")
    send_timeout_s: float = Field(15, gt=0, strict=True, description="Our bubble must show up this soon after sending")
    ready_timeout_s: float = Field(60, gt=0, strict=True, description="The input must show up this soon after opening the page")

    @model_validator(mode="after")
    def _authors(self) -> Profile:
        if self.selectors.by_author and self.authors is None:
            raise ValueError("selectors.message tells the sides apart by the author's name: options.authors must say "
                             "whose name is the agent's (authors.agent) or ours (authors.user)")
        return self

    def with_overrides(self, selectors: dict[str, Any], options: dict[str, Any]) -> Profile:
        """This profile with config.jsonc overrides applied; raises ValueError on unknown keys."""
        data = self.model_dump()
        data["selectors"].update(selectors)
        for key, value in options.items():
            if key == "completion" and isinstance(value, dict):
                data["completion"].update(value)
            else:
                data[key] = value
        return profile_from_dict(data)


def profile_from_dict(data: dict[str, Any]) -> Profile:
    """Validate a profile; ValueError lists each wrong field as 'selectors.input: Field required'."""
    try:
        return Profile.model_validate(data)
    except ValidationError as e:
        raise ValueError("; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())) from None
