"""Profile for the bundled demo chat (demo_agent/), the embedded default agent under test."""

from .profile import Completion, Profile, Selectors

PROFILE = Profile(
    name="demo",
    selectors=Selectors(
        input="textarea#prompt",
        send="button#send",
        assistant_message=".msg.assistant",
        user_message=".msg.user",
        busy="button#stop",
        done="[data-done='1']",
        ignore=".welcome, .placeholder",
        notice=".msg.notice.compaction",
        new_chat="button#new-chat",
        error=".msg.notice.error",
        ready="#messages[data-ready='1']",
    ),
    completion=Completion(first_bubble_timeout_s=30, timeout_s=120),
    keeps_history=True,  # the chat is kept by the server and drawn again at its address (tests/test_faults_driver.py)
)
