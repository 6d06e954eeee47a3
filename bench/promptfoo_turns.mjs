// promptfoo's `browser` provider playing chat turns on the bench page, one turn per stdin line.
//
// Usage: node promptfoo_turns.mjs URL WAIT_MS CDP_PORT  (copied into bench/.promptfoo so `promptfoo` resolves)
// stdin: one JSON line per turn, {"prompt": "..."}; stdout: one JSON line per turn,
// @@{"ms": wall time of callApi, "output": {text, turn}, "error"}. The steps are the docs' multi-turn
// recipe: navigate once (persistSession keeps the page), type the prompt and Enter, wait a fixed
// time (the provider cannot tell when a streamed reply is finished), extract the last reply.
// The provider attaches to a Chromium started with a CDP port (connectOptions): when it launches
// its own, it closes it at the end of every callApi, persistSession or not (promptfoo 0.123.1).
import { createInterface } from "node:readline";
import { loadApiProvider } from "promptfoo";

const [url, waitMs, cdpPort] = process.argv.slice(2);
const extract = `
  const replies = document.querySelectorAll(".msg.assistant");
  const last = replies[replies.length - 1];
  const turns = window.__bench.turns;
  return JSON.stringify({text: last ? last.textContent : "", done: !!(last && last.dataset.done),
                         turn: turns[turns.length - 1], extractedAt: performance.timeOrigin + performance.now()});
`;
const provider = await loadApiProvider("browser", {
  options: {
    config: {
      headless: true,
      persistSession: true,
      connectOptions: { mode: "cdp", debuggingPort: Number(cdpPort) },
      steps: [
        { action: "navigate", args: { url }, runOnce: true },
        { action: "type", args: { selector: "#prompt", text: "{{prompt}}<enter>" } },
        { action: "wait", args: { ms: Number(waitMs) } },
        { action: "extract", args: { script: extract }, name: "reply" },
      ],
      transformResponse: "JSON.parse(extracted.reply)",
    },
  },
});

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const { prompt } = JSON.parse(line);
  const started = performance.now();
  const result = await provider.callApi(prompt, { vars: {} });
  const ms = performance.now() - started;
  process.stdout.write("@@" + JSON.stringify({ ms, output: result.output ?? null, error: result.error ?? null }) + "\n");
}
process.exit(0);  // the attached browser belongs to the caller
