"""A minimal Chainlit app over an OpenAI-compatible model (OPENAI_BASE_URL), streaming, with a
welcome message at the start of every chat.

With MMB_AGENT=1 it is an agent (agent_loop.py): its reasoning streams into a "Thinking" step and
each tool call is a `cl.Step(type="tool")`, open ("Using …") while the tool runs, then the answer
message, as Chainlit shows an agent's chain of thought."""

import asyncio
import os

import agent_loop
import chainlit as cl
from openai import AsyncOpenAI, OpenAI

client = AsyncOpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY come from the environment
MODEL = os.environ["MMB_TEST_MODEL"]
WELCOME = "Hello! I'm the test assistant. What is on your mind?"


@cl.on_chat_start
async def start() -> None:
    await cl.Message(content=WELCOME).send()


@cl.on_message
async def on_message(message: cl.Message) -> None:
    history = [m for m in cl.chat_context.to_openai() if m["role"] in ("user", "assistant")]
    if agent_loop.ENABLED:
        return await answer_as_agent(history)
    reply = cl.Message(content="")
    stream = await client.chat.completions.create(model=MODEL, messages=history, stream=True)
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            await reply.stream_token(chunk.choices[0].delta.content)
    await reply.send()


async def answer_as_agent(history: list[dict]) -> None:
    # the loop is synchronous (the apps share it); each step runs in a thread, the UI keeps updating
    events = agent_loop.run(OpenAI(), MODEL, history)
    thinking = tool = reply = None
    shown = ""
    while (event := await asyncio.to_thread(next, events, None)) is not None:
        if event.kind == "thinking":
            if thinking is None:
                thinking = cl.Step(name="Thinking", type="llm")
                await thinking.__aenter__()
            await thinking.stream_token(event.text[len(shown):])
            shown = event.text
        elif event.kind == "calling":
            if thinking is not None and thinking.end is None:
                await thinking.__aexit__(None, None, None)
            tool = cl.Step(name=event.tool, type="tool")
            tool.input = event.arguments
            await tool.__aenter__()
        elif event.kind == "called" and tool is not None:
            tool.output = event.text
            await tool.__aexit__(None, None, None)
        elif event.kind == "answer":
            if thinking is not None and thinking.end is None:
                await thinking.__aexit__(None, None, None)
            if reply is None:
                reply, shown = cl.Message(content=""), ""
            await reply.stream_token(event.text[len(shown):])
            shown = event.text
    if reply is not None:
        await reply.send()
