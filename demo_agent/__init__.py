"""DemoMind: the embedded default agent under test (a small chat agent with a web UI)."""

from demo_agent.brain import Brain, Reply

__all__ = ["Brain", "Reply", "DemoChatServer"]


def __getattr__(name: str):
    # Lazy so importing the brain alone does not pull in the web server.
    if name == "DemoChatServer":
        from demo_agent.web import DemoChatServer

        return DemoChatServer
    raise AttributeError(name)
