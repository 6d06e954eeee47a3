"use strict";
// DemoMind chat page. The DOM classes and ids here are a contract with the Playwright driver:
// #messages > div.msg.(user|assistant|notice), .placeholder, data-done="1", aria-busy, #send, #stop.
(() => {
  const WELCOME = "Hi! I'm DemoMind. Tell me about your life — I'll try to remember.";
  const THINKING = "Thinking…";
  const convId = decodeURIComponent(location.pathname.split("/")[2] || "");

  const messages = document.getElementById("messages");
  const form = document.getElementById("composer");
  const prompt = document.getElementById("prompt");
  const send = document.getElementById("send");
  const stop = document.getElementById("stop");
  const newChat = document.getElementById("new-chat");

  let busy = false;
  let controller = null;
  let current = null; // the assistant bubble being streamed

  function scrollDown() {
    messages.scrollTop = messages.scrollHeight;
  }

  function bubble(classes, text, before = null) {
    const el = document.createElement("div");
    el.className = ["msg", ...classes].join(" ");
    el.textContent = text;
    messages.insertBefore(el, before);
    scrollDown();
    return el;
  }

  function placeholder() {
    return bubble(["assistant", "placeholder"], THINKING);
  }

  function setBusy(on) {
    busy = on;
    send.disabled = on;
    stop.hidden = !on;
    messages.setAttribute("aria-busy", on ? "true" : "false");
  }

  function renderHistory(items) {
    // The welcome is part of the page, not of the history: always first, never sent back.
    bubble(["assistant", "welcome"], WELCOME).dataset.done = "1";
    for (const m of items) {
      if (m.kind === "notice") {
        bubble(["notice", "compaction"], m.text);
      } else if (m.role === "user") {
        bubble(["user"], m.text);
      } else {
        bubble(["assistant"], m.text).dataset.done = "1";
      }
    }
  }

  const ready = (async () => {
    try {
      const res = await fetch(`/api/c/${encodeURIComponent(convId)}`, { cache: "no-store" });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      renderHistory((await res.json()).messages);
    } catch (err) {
      renderHistory([]);
      bubble(["notice", "error"], `Could not load the chat: ${err.message}`);
    }
    messages.dataset.ready = "1";
  })();

  // Ends the bubble being streamed when the stream stops early (Stop, lost connection).
  function cutCurrent() {
    if (!current) return;
    if (current.classList.contains("placeholder")) {
      current.remove();
    } else {
      current.dataset.done = "1";
      current.dataset.stopped = "1";
    }
    current = null;
  }

  function handleEvent(name, data) {
    if (name === "notice") {
      bubble(["notice", data.kind || "compaction"], data.text, current);
    } else if (name === "bubble") {
      if (!current) current = placeholder();
    } else if (name === "chunk") {
      if (current.classList.contains("placeholder")) {
        current.classList.remove("placeholder");
        current.textContent = "";
      }
      current.textContent += data.text;
      scrollDown();
    } else if (name === "bubble_done") {
      current.classList.remove("placeholder");
      current.textContent = data.text; // the server's full text is authoritative
      current.dataset.done = "1";
      current = null;
    }
  }

  async function readStream(res) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    let finished = false;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const raw = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        let name = "message";
        let data = "";
        for (const line of raw.split("\n")) {
          if (line.startsWith("event:")) name = line.slice(6).trim();
          else if (line.startsWith("data:")) data += line.slice(5).trim();
        }
        if (name === "done") finished = true;
        else handleEvent(name, data ? JSON.parse(data) : {});
      }
    }
    if (!finished) throw new Error("the connection closed before the reply was complete");
  }

  async function submit() {
    const text = prompt.value;
    if (busy || !text.trim()) return;
    setBusy(true);
    prompt.value = "";
    autosize();
    await ready;
    bubble(["user"], text);
    current = placeholder();
    controller = new AbortController();
    try {
      const res = await fetch(`/api/c/${encodeURIComponent(convId)}/messages`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ text }),
        signal: controller.signal,
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      await readStream(res);
    } catch (err) {
      cutCurrent();
      if (err.name !== "AbortError") bubble(["notice", "error"], `Error: ${err.message}`);
    } finally {
      cutCurrent();
      controller = null;
      setBusy(false);
      prompt.focus();
    }
  }

  function autosize() {
    prompt.style.height = "auto";
    prompt.style.height = `${Math.min(prompt.scrollHeight, 200)}px`;
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    submit();
  });
  prompt.addEventListener("keydown", (e) => {
    // Enter sends, Shift+Enter is a newline; ignore Enter while an IME is composing.
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    }
  });
  prompt.addEventListener("input", autosize);
  stop.addEventListener("click", () => {
    if (controller) controller.abort();
  });
  newChat.addEventListener("click", async () => {
    if (controller) controller.abort();
    try {
      const res = await fetch("/api/new", { method: "POST" });
      const { id } = await res.json();
      location.assign(`/c/${encodeURIComponent(id)}`);
    } catch (err) {
      bubble(["notice", "error"], `Could not start a new chat: ${err.message}`);
    }
  });

  prompt.focus();
})();
