"""A minimal Gradio ChatInterface over an OpenAI-compatible model (OPENAI_BASE_URL), streaming.

With MMB_AGENT=1 it is an agent (agent_loop.py): its reasoning shows as a thought and each tool call
as another (`gr.ChatMessage(metadata={"title": ..., "status": "pending" | "done"})`), pending while
the tool runs, then the answer, as Gradio's docs show an agent's work."""

import os
import time

import agent_loop
import gradio as gr
from openai import OpenAI

client = OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY come from the environment
MODEL = os.environ["MMB_TEST_MODEL"]


def text_of(content) -> str:
    """Gradio history content is a string or a list of parts; the model gets plain text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return str(content or "")


def conversation(message, history) -> list[dict]:
    """The chat as the model gets it: the words said, not the thoughts shown (messages with a title)."""
    said = [{"role": m["role"], "content": text_of(m["content"])} for m in history
            if not (m.get("metadata") or {}).get("title")]
    return [*said, {"role": "user", "content": text_of(message)}]


def respond(message, history):
    reply = ""
    for chunk in client.chat.completions.create(model=MODEL, messages=conversation(message, history), stream=True):
        if chunk.choices and chunk.choices[0].delta.content:
            reply += chunk.choices[0].delta.content
            yield reply


def respond_as_agent(message, history):
    shown: list[gr.ChatMessage] = []
    thought = tool = answer = None
    started = time.monotonic()

    def thought_done() -> None:
        if thought is not None and thought.metadata["status"] == "pending":
            thought.metadata.update(status="done", duration=round(time.monotonic() - started, 1))

    for event in agent_loop.run(client, MODEL, conversation(message, history)):
        if event.kind == "thinking":
            if thought is None:
                thought = gr.ChatMessage(role="assistant", content="", metadata={"title": "💭 Thinking", "status": "pending"})
                shown.append(thought)
            thought.content = event.text
        elif event.kind == "calling":
            thought_done()
            tool = gr.ChatMessage(role="assistant", content=f"Arguments: {event.arguments}",
                                  metadata={"title": f"🔧 Using tool {event.tool}", "status": "pending"})
            shown.append(tool)
        elif event.kind == "called" and tool is not None:
            tool.content = f"Arguments: {event.arguments}\nResult: {event.text}"
            tool.metadata.update(title=f"🔧 Used tool {event.tool}", status="done")
        elif event.kind == "answer":
            thought_done()
            if answer is None:
                answer = gr.ChatMessage(role="assistant", content="")
                shown.append(answer)
            answer.content = event.text
        yield list(shown)


demo = gr.ChatInterface(respond_as_agent if agent_loop.ENABLED else respond, title="Test chat",
                        chatbot=gr.Chatbot(placeholder="Ask me anything."))

if __name__ == "__main__":
    demo.launch(server_name="127.0.0.1", server_port=int(os.environ["PORT"]))
