// A memoryless streamed "model" for the LibreChat and Hermes markup fixtures: it acknowledges a
// statement, answers a question from this conversation's statements, streams word by word.
// window.mmbModel.config sets the pace; the page draws the stream in its app's markup. With toolMs
// above 0 the page first draws an agent's reasoning and a tool call that runs that long.
(function () {
  const config = { thinkMs: 400, wordMs: 40, toolMs: 0 };
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const words = (t) => new Set(t.toLowerCase().match(/[a-z0-9]{3,}/g) || []);

  function answer(history, text) {
    if (!text.trim().endsWith("?")) return "Got it: " + text.trim();
    const asked = words(text);
    const known = history.filter((h) => !h.endsWith("?") && [...words(h)].some((w) => asked.has(w)));
    return known.length ? "You told me: " + known.join(" ") : "You did not tell me that in this chat.";
  }

  // onText(partial) while streaming, then resolves with the full text.
  async function reply(history, text, onText) {
    const full = answer(history, text);
    await sleep(config.thinkMs);
    const parts = full.split(" ");
    for (let i = 1; i <= parts.length; i++) {
      onText(parts.slice(0, i).join(" "));
      await sleep(config.wordMs);
    }
    return full;
  }

  window.mmbModel = { config, reply };
})();
