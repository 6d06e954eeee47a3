"""A minimal NiceGUI chat (ui.chat_message) over an OpenAI-compatible model (OPENAI_BASE_URL), streaming, as
NiceGUI's own chat example does it, with a "New chat" button."""
import os

from nicegui import ui
from openai import AsyncOpenAI

client = AsyncOpenAI()
MODEL = os.environ["MMB_TEST_MODEL"]


@ui.page("/")
def index():
    history = []

    async def send() -> None:
        question = box.value
        if not question.strip():
            return
        box.value = ""
        history.append({"role": "user", "content": question})
        with messages:
            ui.chat_message(text=question, name="You", sent=True)
            answer = ui.chat_message(name="Bot", sent=False)
            spinner = ui.spinner(type="dots")
        reply = ""
        stream = await client.chat.completions.create(model=MODEL, messages=history, stream=True)
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                reply += chunk.choices[0].delta.content
                answer.clear()
                with answer:
                    ui.markdown(reply)
        messages.remove(spinner)
        history.append({"role": "assistant", "content": reply})

    def new_chat() -> None:
        history.clear()
        messages.clear()

    with ui.header():
        ui.label("Test chat")
        ui.button("New chat", on_click=new_chat)
    messages = ui.column().classes("w-full max-w-2xl mx-auto")
    with ui.footer():
        box = ui.input(placeholder="Message").props("rounded outlined").classes("flex-grow").on("keydown.enter", send)
        ui.button("Send", on_click=send)


ui.run(host="127.0.0.1", port=int(os.environ["PORT"]), reload=False, show=False)
