"""Opening the first page fails with tracing on (the default keeps traces of failed runs): each retry
opens the page again in the same trace, and when every try fails the error says what failed, not that
"Tracing has been already started". Real Chromium, a page creation that fails on purpose."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Error as PlaywrightError

from drivers.base import DriverError
from drivers.generic import PlaywrightDriver
from drivers.recovery import Recovery
from drivers.resilient import ResilientDriver
from tests.support.chat_lab import ChatLab, LabScenario

pytestmark = pytest.mark.usefixtures("chromium")

BOOM = "Protocol error (Target.createTarget): cannot create a page right now"


async def no_wait(seconds: float) -> None:
    return None


def flaky_pages(context, failures: int) -> list[int]:
    """Make the context's first `failures` new pages fail; returns the list of calls made."""
    real, calls = context.new_page, []

    async def new_page():
        calls.append(len(calls) + 1)
        if len(calls) <= failures:
            raise PlaywrightError(BOOM)
        return await real()

    context.new_page = new_page
    return calls


@pytest.mark.parametrize("failures, opens", [(1, True), (9, False)])
def test_a_first_page_failing_to_open_is_retried_in_one_trace_and_its_error_kept(harness, tmp_path: Path, failures, opens):
    async def go() -> None:
        with ChatLab(LabScenario()) as lab:
            context = await harness.browser.new_context()
            calls = flaky_pages(context, failures)
            driver = ResilientDriver(PlaywrightDriver(lab.profile(), context, base_url=lab.url + "/", artifacts=tmp_path,
                                                      trace="retain-on-failure"),
                                     Recovery(attempts=3), sleep=no_wait)
            try:
                if opens:
                    await driver.open(None)
                    assert (await driver.send("hello")).text == "echo: hello"
                else:
                    with pytest.raises(DriverError) as err:
                        await driver.open(None)
                    assert BOOM in str(err.value) and "already started" not in str(err.value), err.value
                    assert "gave up after 3 attempt(s) over " in str(err.value) and "s to open the chat" in str(err.value)
            finally:
                files = await driver.close(failed=True)
            assert len(calls) == (2 if opens else 3)
            assert [f.name for f in files] == ["session-0.trace.zip"] and files[0].stat().st_size > 0

    harness.run(go())
