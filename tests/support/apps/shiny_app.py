# A minimal Shiny for Python chat (shinychat's Chat) over an OpenAI-compatible model, streaming, with a
# "New chat" button. (Shiny express renders a module docstring on the page: a comment here.)
import os

from openai import AsyncOpenAI
from shiny import reactive
from shiny.express import input, ui
from shinychat.express import Chat

client = AsyncOpenAI()
MODEL = os.environ["MMB_TEST_MODEL"]

ui.page_opts(title="Test chat", fillable=True)
ui.input_action_button("new_chat", "New chat")
chat = Chat(id="chat")
chat.ui()


@chat.on_user_submit
async def answer(user_input: str):
    messages = [{"role": m["role"], "content": m["content"]} for m in chat.messages() if m["role"] in ("user", "assistant")]
    stream = await client.chat.completions.create(model=MODEL, messages=messages, stream=True)

    async def tokens():
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                yield chunk.choices[0].delta.content

    await chat.append_message_stream(tokens())


@reactive.effect
@reactive.event(input.new_chat)
async def _():
    await chat.clear_messages()
