"""A minimal Chainlit app over an OpenAI-compatible model (OPENAI_BASE_URL), streaming, with a
welcome message at the start of every chat."""

import os

import chainlit as cl
from openai import AsyncOpenAI

client = AsyncOpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY come from the environment
MODEL = os.environ["MMB_TEST_MODEL"]
WELCOME = "Hello! I'm the test assistant. What is on your mind?"


@cl.on_chat_start
async def start() -> None:
    await cl.Message(content=WELCOME).send()


@cl.on_message
async def on_message(message: cl.Message) -> None:
    history = [m for m in cl.chat_context.to_openai() if m["role"] in ("user", "assistant")]
    reply = cl.Message(content="")
    stream = await client.chat.completions.create(model=MODEL, messages=history, stream=True)
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            await reply.stream_token(chunk.choices[0].delta.content)
    await reply.send()
