// A simulated Telegram bot for the Web K / Web A markup fixtures (no Telegram involved).
//
// It behaves like the bots MarathonMemBench meets: /start greets, /new forgets the session,
// every reply is streamed first as an ephemeral draft (Bot API sendMessageDraft) while the
// "typing" action is shown, then persisted as several messages with typing between them.
// The page supplies `ui`, which draws that in its client's real markup.
//
// window.mmbBot.config (or `?fast`) lets a test change timings; window.mmbBot.log records what happened.
(function () {
  const config = { draftMs: 500, gapMs: 1200, stepMs: 60 };
  // `?fast` in the page URL: the quicker timings of tests/test_telegram_web.py's FAST_BOT, for
  // runs driven through `mmb run`, where no script can set them.
  if (new URLSearchParams(location.search).has("fast")) Object.assign(config, { draftMs: 200, gapMs: 700, stepMs: 30 });
  const log = [];
  let facts = [];
  let busy = Promise.resolve();

  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  function answer(text) {
    const t = text.trim();
    if (t === "/start") return ["Hi! I'm MemBot. Tell me things and ask me later."];
    if (t === "/new") {
      facts = [];
      return ["New session started: I have forgotten this chat."];
    }
    if (t.endsWith("?")) {
      if (!facts.length) return ["You never told me anything in this session."];
      return ["Let me think.", "You told me: " + facts.join(" | ")];
    }
    facts.push(t);
    return ["Noted: " + t, "That's " + facts.length + (facts.length === 1 ? " thing" : " things") + " this session."];
  }

  async function stream(ui, text) {
    const draft = ui.addDraft();
    for (let i = 1; i <= text.length; i += Math.max(1, Math.ceil(text.length / 8))) {
      ui.setDraft(draft, text.slice(0, i));
      await sleep(config.stepMs);
    }
    await sleep(config.draftMs);
    ui.removeDraft(draft);
  }

  async function reply(ui, text) {
    const parts = answer(text);
    log.push({ in: text, out: parts });
    for (let i = 0; i < parts.length; i++) {
      ui.setTyping(true);
      if (i === 0) await stream(ui, parts[0]);
      else await sleep(config.gapMs);
      ui.addIncoming(parts[i]);
      if (i === parts.length - 1) ui.setTyping(false);
    }
  }

  window.mmbBot = {
    config,
    log,
    // Queue replies so that fast senders still get them in order, like a real bot.
    receive(ui, text) {
      busy = busy.then(() => reply(ui, text));
      return busy;
    },
  };
})();
