"""The browser settings of config.jsonc (`browser`): how Chromium is launched or reached, traced and
recorded. They live beside the drivers that use them, so drivers/ needs nothing from the engine.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic import Strict as StrictType

from .files import PathText


class Strict(BaseModel):
    """A section of config.jsonc: unknown keys, `true` for a number and NaN or Infinity (json5 allows them)
    are mistakes, not values to coerce."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


Pixels = Annotated[int, StrictType(), Field(gt=0)]


class ConnectConfig(Strict):
    """A browser that is already running, used instead of launching one (exactly one of the two)."""

    ws_endpoint: str | None = Field(None, description="A Playwright server (`playwright run-server`), e.g. ws://127.0.0.1:3000/")
    cdp_url: str | None = Field(None, description="A Chromium with --remote-debugging-port, e.g. http://127.0.0.1:9222")
    headers: dict[str, str] = Field({}, description="Sent when connecting, e.g. x-playwright-launch-options")
    timeout_s: float = Field(30, gt=0)

    @model_validator(mode="after")
    def _exactly_one(self) -> ConnectConfig:
        if (self.ws_endpoint is None) == (self.cdp_url is None):
            raise ValueError("give exactly one of ws_endpoint and cdp_url")
        return self


class BrowserConfig(Strict):
    headless: bool = True
    slow_mo_ms: int = Field(0, ge=0)
    executable_path: PathText | None = Field(None, description="Chromium binary; default: on PATH chromium-headless-shell (headless runs) or chromium, else Playwright's")
    trace: Literal["off", "on", "retain-on-failure"] = "retain-on-failure"
    video: bool = False
    screenshot_on_failure: bool = True
    viewport: Annotated[tuple[Pixels, Pixels], Field(strict=False)] = Field(  # a JSON array is a tuple here
        (1100, 800), description="Width and height of the page in pixels")
    connect: ConnectConfig | None = Field(None, description="Use a running browser instead of launching Chromium")
    auth_dir: PathText = Field(".auth", description="Where `mmb login` keeps logins (a secret: git-ignored, mode 0700)")
