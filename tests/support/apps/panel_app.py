"""A minimal Panel ChatInterface over an OpenAI-compatible model (OPENAI_BASE_URL), streaming. Before
each answer it shows a step (`ChatStep`), as Panel agents show their work: never part of the answer."""

import os

import panel as pn
from openai import AsyncOpenAI

pn.extension()

client = AsyncOpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY come from the environment
MODEL = os.environ["MMB_TEST_MODEL"]


async def respond(contents, user, instance):
    # the chat's words only: a message holding steps is not one
    history = [{"role": "user" if m.user == user else "assistant", "content": m.object}
               for m in instance.objects if isinstance(m.object, str) and m.object]
    with instance.add_step(title="Reading this chat", status="running") as step:
        step.stream(f"{len(history) - 1} earlier messages")
        step.success_title = "Read this chat"
    stream = await client.chat.completions.create(model=MODEL, messages=history, stream=True)
    reply = ""
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            reply += chunk.choices[0].delta.content
            yield reply


pn.chat.ChatInterface(callback=respond, callback_user="Assistant").servable()
