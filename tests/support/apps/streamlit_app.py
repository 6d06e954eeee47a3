"""A minimal Streamlit chat over an OpenAI-compatible model (OPENAI_BASE_URL), streaming, with a
welcome bubble and a sidebar "New chat" button, as Streamlit chat apps usually have."""

import os

import streamlit as st
from openai import OpenAI

client = OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY come from the environment
MODEL = os.environ["MMB_TEST_MODEL"]
WELCOME = "Hello! I'm the test assistant. What is on your mind?"

new_chat = st.sidebar.button("New chat")
if new_chat or "messages" not in st.session_state:
    st.session_state.messages = []

with st.chat_message("assistant"):
    st.markdown(WELCOME)
for m in st.session_state.messages:
    with st.chat_message(m["role"]):
        st.markdown(m["content"])

if prompt := st.chat_input("Say something"):
    st.session_state.messages.append({"role": "user", "content": prompt})
    with st.chat_message("user"):
        st.markdown(prompt)
    with st.chat_message("assistant"):
        stream = client.chat.completions.create(model=MODEL, messages=st.session_state.messages, stream=True)
        reply = st.write_stream(stream)
    st.session_state.messages.append({"role": "assistant", "content": reply})
