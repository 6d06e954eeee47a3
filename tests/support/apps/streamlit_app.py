"""A minimal Streamlit chat over an OpenAI-compatible model (OPENAI_BASE_URL), streaming, with a
welcome bubble and a sidebar "New chat" button, as Streamlit chat apps usually have.

With MMB_AGENT=1 it is an agent (agent_loop.py): in the assistant's bubble its reasoning goes into
an expander ("💭 Thinking") and each tool call into `st.status` (running while the tool runs, then
complete), then the answer; the history shows them again on every rerun, as chat apps keep them."""

import os

import agent_loop
import streamlit as st
from openai import OpenAI

client = OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY come from the environment
MODEL = os.environ["MMB_TEST_MODEL"]
WELCOME = "Hello! I'm the test assistant. What is on your mind?"

new_chat = st.sidebar.button("New chat")
if new_chat or "messages" not in st.session_state:
    st.session_state.messages = []


def show_activity(activity: list[dict]) -> None:
    for work in activity:
        if work["kind"] == "thought":
            st.expander(work["title"]).markdown(work["text"])
        else:
            st.status(work["title"], state="complete").code(work["text"])


def answer_as_agent(history: list[dict]) -> dict:
    """Runs the agent inside the open assistant bubble, showing its work as it goes; the message kept."""
    activity, answer, thought, status, shown = [], "", None, None, None
    for event in agent_loop.run(client, MODEL, history):
        if event.kind == "thinking":
            if thought is None:
                thought = st.expander("💭 Thinking").empty()
                activity.append({"kind": "thought", "title": "💭 Thinking", "text": ""})
            thought.markdown(event.text)
            activity[-1]["text"] = event.text
        elif event.kind == "calling":
            status = st.status(f"Using tool {event.tool}…")
            status.code(f"Arguments: {event.arguments}")
        elif event.kind == "called" and status is not None:
            status.code(f"Result: {event.text}")
            status.update(label=f"Used tool {event.tool}", state="complete")
            activity.append({"kind": "tool", "title": f"Used tool {event.tool}",
                             "text": f"Arguments: {event.arguments}\nResult: {event.text}"})
        elif event.kind == "answer":
            shown = shown or st.empty()
            shown.markdown(event.text)
            answer = event.text
    return {"role": "assistant", "content": answer, "activity": activity}


with st.chat_message("assistant"):
    st.markdown(WELCOME)
for m in st.session_state.messages:
    with st.chat_message(m["role"]):
        show_activity(m.get("activity", []))
        st.markdown(m["content"])

if prompt := st.chat_input("Say something"):
    st.session_state.messages.append({"role": "user", "content": prompt})
    with st.chat_message("user"):
        st.markdown(prompt)
    history = [{"role": m["role"], "content": m["content"]} for m in st.session_state.messages]
    with st.chat_message("assistant"):
        if agent_loop.ENABLED:
            st.session_state.messages.append(answer_as_agent(history))
        else:
            stream = client.chat.completions.create(model=MODEL, messages=history, stream=True)
            st.session_state.messages.append({"role": "assistant", "content": st.write_stream(stream)})
