"""What every messenger profile shares (Telegram Web K and A, Matrix clients): the agent is a bot.

A messenger is not a web chat, and these habits are the same whichever client shows it:
- the agent is a bot in a direct chat the run opens by a deep link, after a login kept once with
  `mmb login` (storage state with IndexedDB, where these clients keep their sessions);
- the only busy signal is the bot's typing notice, where the client shows one at all; bots answer
  in one or several messages with pauses between them, so a reply is over only after a quiet
  window longer than such a pause (and, with no typing shown, longer than the bot's thinking);
- a bot never used may show START instead of the input (Telegram), pressed once on opening;
- a new session is the bot's `/new` command: the chat and its history stay on screen, so the
  reset is verified by the bot's acknowledgement (`new_session_ack`), not by an emptied chat.
  A client that takes `/…` as its own command gets the escaped form that sends it as text;
- bots think and type slowly: the limits are minutes, not seconds.
"""

from __future__ import annotations

from typing import Literal

from .profile import Completion, Profile, Selectors

BOT_COMMAND_NEW = "/new"


def messenger_profile(name: str, *, url: str, selectors: Selectors, input_method: Literal["fill", "type"] = "type",
                      new_session_message: str = BOT_COMMAND_NEW, quiet_ms: int = 4000,
                      quiet_ms_with_markers: int = 3000) -> Profile:
    """A profile for a bot in a messenger's web client: `selectors` are the client's, the rest is shared.

    `quiet_ms` (no typing notice seen) and `quiet_ms_with_markers` (typing seen, then gone) must stay
    above the bot's pause between two messages of one answer.
    """
    return Profile(
        name=name,
        url=url,  # where `mmb login` logs in; a run names the bot's chat in agent.url
        selectors=selectors,
        input_method=input_method,
        new_session="message",
        new_session_message=new_session_message,
        completion=Completion(quiet_ms=quiet_ms, quiet_ms_with_markers=quiet_ms_with_markers,
                              first_bubble_timeout_s=180, timeout_s=900),
        send_timeout_s=30,
        ready_timeout_s=120,
    )
