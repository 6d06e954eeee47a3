"""Driver profiles by name, as config.jsonc's `agent.driver` names them."""

from __future__ import annotations

import importlib
from typing import Any

from .profile import Profile, profile_from_dict

# name -> module holding PROFILE; modules load only when used.
PROFILE_MODULES = {
    "demo": "drivers.demo",
    "gradio": "drivers.gradio",
    "chainlit": "drivers.chainlit",
    "streamlit": "drivers.streamlit",
    "openwebui": "drivers.openwebui",
    "openclaw": "drivers.openclaw",
    "telegram_k": "drivers.telegram_k",
    "telegram_a": "drivers.telegram_a",
    "hydrogen": "drivers.hydrogen",
    "librechat": "drivers.librechat",
    "hermes": "drivers.hermes",
    "deep_chat": "drivers.deep_chat",
    "n8n_chat": "drivers.n8n_chat",
    "flowise": "drivers.flowise",
    "botframework_webchat": "drivers.botframework_webchat",
    "assistant_ui": "drivers.assistant_ui",
    "panel": "drivers.panel",
}
GENERIC = "generic"  # no defaults: every selector comes from config.jsonc
IN_PROCESS = {"oracle"}  # drivers without a browser (the dry run's oracle agent, persona/engine/oracle.py)


def driver_names() -> list[str]:
    return sorted([*PROFILE_MODULES, GENERIC, *IN_PROCESS])


def needs_browser(name: str) -> bool:
    return name not in IN_PROCESS


def build_profile(name: str, selectors: dict[str, Any], options: dict[str, Any]) -> Profile | None:
    """The named profile with config overrides (None for in-process drivers); ValueError names what is wrong."""
    if name in IN_PROCESS:
        return None
    if name == GENERIC:
        return profile_from_dict({"name": GENERIC, "selectors": selectors, **options})
    if name not in PROFILE_MODULES:
        raise ValueError(f"unknown driver {name!r} (known: {', '.join(driver_names())})")
    profile: Profile = importlib.import_module(PROFILE_MODULES[name]).PROFILE
    return profile.with_overrides(selectors, options)

