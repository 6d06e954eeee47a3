"""The real frontends the integration tests install and start: pinned versions, commands, offline env.

The names match the driver profiles in drivers/registry.py. Versions are pinned so a cached venv
is reused until this table changes, and a new release cannot break CI unnoticed.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.support.frontends import Frontend, Launch

OPENAI = "openai==3.57.0"  # the small apps call the model through it, as real apps do


def _python_app(bin: Path, launch: Launch) -> list[str]:
    return [str(bin / "python"), "app.py"]


GRADIO = Frontend(
    name="gradio",
    requirements=("gradio==6.31.0", OPENAI),
    app="gradio_app.py",
    command=_python_app,
    env=lambda launch: {"PORT": str(launch.port), "GRADIO_ANALYTICS_ENABLED": "False",
                        "HF_HUB_OFFLINE": "1", "GRADIO_SERVER_NAME": "127.0.0.1"},
)

CHAINLIT = Frontend(
    name="chainlit",
    requirements=("chainlit==2.12.0", OPENAI),
    app="chainlit_app.py",
    command=lambda bin, launch: [str(bin / "chainlit"), "run", "app.py", "--host", "127.0.0.1",
                                 "--port", str(launch.port), "--headless"],
)

STREAMLIT = Frontend(
    name="streamlit",
    requirements=("streamlit==1.67.0", OPENAI),
    app="streamlit_app.py",
    command=lambda bin, launch: [str(bin / "streamlit"), "run", "app.py", "--server.address", "127.0.0.1",
                                 "--server.port", str(launch.port), "--server.headless", "true",
                                 "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
    ready_path="/_stcore/health",
)

PANEL = Frontend(
    name="panel",
    requirements=("panel==1.9.4", OPENAI),
    app="panel_app.py",
    command=lambda bin, launch: [str(bin / "panel"), "serve", "app.py", "--address", "127.0.0.1",
                                 "--port", str(launch.port), "--allow-websocket-origin", f"127.0.0.1:{launch.port}"],
    path="/app",
    ready_path="/app",
)


def _openwebui_env(launch: Launch) -> dict[str, str]:
    """Everything Open WebUI needs to start with no network, no login and no side generations."""
    off = ["ENABLE_OLLAMA_API", "ENABLE_TITLE_GENERATION", "ENABLE_TAGS_GENERATION", "ENABLE_FOLLOW_UP_GENERATION",
           "ENABLE_AUTOCOMPLETE_GENERATION", "ENABLE_SEARCH_QUERY_GENERATION", "ENABLE_RETRIEVAL_QUERY_GENERATION",
           "ENABLE_EVALUATION_ARENA_MODELS", "ENABLE_COMMUNITY_SHARING", "ENABLE_VERSION_UPDATE_CHECK",
           "ENABLE_PERSISTENT_CONFIG", "RAG_EMBEDDING_MODEL_AUTO_UPDATE", "RAG_RERANKING_MODEL_AUTO_UPDATE",
           "WHISPER_MODEL_AUTO_UPDATE", "ANONYMIZED_TELEMETRY", "WEBUI_AUTH"]
    return {
        **{name: "False" for name in off},
        "DATA_DIR": str(launch.workdir / "data"), "WEBUI_SECRET_KEY": "mmb-test-only",
        "OFFLINE_MODE": "True", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
        "OPENAI_API_BASE_URL": launch.model_url, "OPENAI_API_KEY": "sk-local-test", "DEFAULT_MODELS": launch.model,
        "BYPASS_EMBEDDING_AND_RETRIEVAL": "True", "RAG_EMBEDDING_ENGINE": "openai",
        "DO_NOT_TRACK": "True", "SCARF_NO_ANALYTICS": "True",
    }


OPENWEBUI = Frontend(
    name="openwebui",
    # torch first, with pip: where the machine keeps a CPU build of 2.13.0 on disk pip takes it;
    # otherwise open-webui's sentence-transformers pulls a CUDA build of several GB.
    pip_first=("torch==2.13.0",),
    requirements=("open-webui==0.12.4",),
    command=lambda bin, launch: [str(bin / "open-webui"), "serve", "--host", "127.0.0.1", "--port", str(launch.port)],
    env=_openwebui_env,
    ready_path="/health",
    ready_timeout_s=300,
)

FRONTENDS = [GRADIO, CHAINLIT, STREAMLIT, OPENWEBUI, PANEL]

# Chat UIs with no ready profile: what `mmb discover` finds on them must play the benchmark.
NICEGUI = Frontend(
    name="nicegui",
    requirements=("nicegui==3.18.0", OPENAI),
    app="nicegui_app.py",
    command=_python_app,
    env=lambda launch: {"PORT": str(launch.port)},
)

SHINY = Frontend(
    name="shiny",
    requirements=("shiny==1.8.0", "shinychat==0.7.2", OPENAI),
    app="shiny_app.py",
    command=lambda bin, launch: [str(bin / "shiny"), "run", "app.py", "--host", "127.0.0.1", "--port", str(launch.port)],
)

DISCOVERED_ONLY = [NICEGUI, SHINY]


def as_agent(frontend: Frontend, tool_pause_s: float) -> Frontend:
    """The frontend's app in agent mode (apps/agent_loop.py): reasoning and a memory search shown before
    each answer, the search taking `tool_pause_s`. Same venv, same driver profile."""
    base = frontend.env
    return dataclasses.replace(frontend, env=lambda launch: {**base(launch), "MMB_AGENT": "1",
                                                             "MMB_TOOL_PAUSE_S": str(tool_pause_s)})
