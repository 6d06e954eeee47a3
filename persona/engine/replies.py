"""How the agent's words are shown to the persona: fenced as data, so they can't pose as instructions."""

AGENT_REPLY_OPEN, AGENT_REPLY_CLOSE = "<agent_reply>", "</agent_reply>"
_ESCAPED_CLOSE = "<\\/agent_reply>"


def wrap_reply(text: str) -> str:
    """A closing tag inside the agent's text cannot end the block early."""
    escaped = text.replace(AGENT_REPLY_CLOSE, _ESCAPED_CLOSE)
    return f"{AGENT_REPLY_OPEN}\n{escaped}\n{AGENT_REPLY_CLOSE}"


def unwrap_reply(content: str) -> str:
    text = content.strip()
    if text.startswith(AGENT_REPLY_OPEN) and text.endswith(AGENT_REPLY_CLOSE):
        text = text[len(AGENT_REPLY_OPEN):-len(AGENT_REPLY_CLOSE)]
    return text.replace(_ESCAPED_CLOSE, AGENT_REPLY_CLOSE).strip()


def is_agent_reply(content: str) -> bool:
    return content.lstrip().startswith(AGENT_REPLY_OPEN)
