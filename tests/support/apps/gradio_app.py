"""A minimal Gradio ChatInterface over an OpenAI-compatible model (OPENAI_BASE_URL), streaming."""

import os

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


def respond(message, history):
    messages = [{"role": m["role"], "content": text_of(m["content"])} for m in history]
    messages.append({"role": "user", "content": text_of(message)})
    reply = ""
    for chunk in client.chat.completions.create(model=MODEL, messages=messages, stream=True):
        if chunk.choices and chunk.choices[0].delta.content:
            reply += chunk.choices[0].delta.content
            yield reply


demo = gr.ChatInterface(respond, title="Test chat", chatbot=gr.Chatbot(placeholder="Ask me anything."))

if __name__ == "__main__":
    demo.launch(server_name="127.0.0.1", server_port=int(os.environ["PORT"]))
