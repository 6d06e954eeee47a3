// assistant-ui's own templates (the shadcn registry's assistant-modal.tsx, thread.tsx and the
// thread list's New Thread button), written without Tailwind, lucide icons or motion, on
// `useLocalRuntime` with a ChatModelAdapter that streams from the site's backend: the way the docs
// wire a custom backend. `?mode=full` shows the thread on the page instead of in the modal.
// `?agent=1` talks to an agent instead, through the data-stream runtime (the AI SDK's UI message
// stream): its reasoning and tool calls show as the templates' Reasoning and ToolFallback parts
// (reasoning.tsx, tool-fallback.tsx: same data-slot and aui-* hooks, no Radix) before the answer.
import React, { useState } from "react";
import { createRoot } from "react-dom/client";
import {
  AssistantModalPrimitive,
  AssistantRuntimeProvider,
  ComposerPrimitive,
  MessagePrimitive,
  ThreadListPrimitive,
  ThreadPrimitive,
  useLocalRuntime,
} from "@assistant-ui/react";
import { useDataStreamRuntime } from "@assistant-ui/react-data-stream";

const BackendAdapter = {
  async *run({ messages, abortSignal, unstable_threadId }) {
    const response = await fetch("/api/chat", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        threadId: unstable_threadId,
        messages: messages.map((m) => ({
          role: m.role,
          content: m.content.filter((p) => p.type === "text").map((p) => p.text).join("\n"),
        })),
      }),
      signal: abortSignal,
    });
    if (!response.ok) throw new Error(`The assistant failed (${response.status})`);
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let text = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      yield { content: [{ type: "text", text }] };
    }
  },
};

// tool-fallback.tsx: "Used tool: <name>", a shimmer over the label while the tool runs, the arguments
// and the result in the collapsible content.
const ToolFallback = ({ toolName, argsText, result, status }) => {
  const [open, setOpen] = useState(false);
  const running = status?.type === "running";
  const label = <>Used tool: <b>{toolName}</b></>;
  return (
    <div data-slot="tool-fallback-root" className="aui-tool-fallback-root" data-state={open ? "open" : "closed"}>
      <button type="button" data-slot="tool-fallback-trigger" className="aui-tool-fallback-trigger"
              aria-expanded={open} onClick={() => setOpen(!open)}>
        <span data-slot="tool-fallback-trigger-label" className="aui-tool-fallback-trigger-label-wrapper">
          <span>{label}</span>
          {running && <span aria-hidden data-slot="tool-fallback-trigger-shimmer"
                            className="aui-tool-fallback-trigger-shimmer shimmer">{label}</span>}
        </span>
      </button>
      {open && (
        <div data-slot="tool-fallback-content" className="aui-tool-fallback-content">
          <div data-slot="tool-fallback-args" className="aui-tool-fallback-args"><pre>{argsText}</pre></div>
          {result !== undefined && (
            <div data-slot="tool-fallback-result" className="aui-tool-fallback-result">
              <p className="aui-tool-fallback-result-header">Result:</p>
              <pre className="aui-tool-fallback-result-content">
                {typeof result === "string" ? result : JSON.stringify(result, null, 2)}
              </pre>
            </div>
          )}
        </div>
      )}
    </div>
  );
};

// reasoning.tsx: "Reasoning", a shimmer while it streams, the text in content marked aria-busy meanwhile.
const Reasoning = ({ text, status }) => {
  const [open, setOpen] = useState(false);
  const streaming = status?.type === "running";
  return (
    <div data-slot="reasoning-root" className="aui-reasoning-root">
      <button type="button" data-slot="reasoning-trigger" className="aui-reasoning-trigger" aria-expanded={open}
              onClick={() => setOpen(!open)}>
        <span data-slot="reasoning-trigger-label" className="aui-reasoning-trigger-label-wrapper">
          <span>Reasoning</span>
          {streaming && <span aria-hidden data-slot="reasoning-trigger-shimmer"
                              className="aui-reasoning-trigger-shimmer shimmer">Reasoning</span>}
        </span>
      </button>
      <div data-slot="reasoning-content" className="aui-reasoning-content" aria-busy={streaming}>
        {open && <div data-slot="reasoning-text" className="aui-reasoning-text">{text}</div>}
      </div>
    </div>
  );
};

const UserMessage = () => (
  <MessagePrimitive.Root className="aui-user-message-root" data-role="user">
    <div className="aui-user-message-content"><MessagePrimitive.Parts /></div>
  </MessagePrimitive.Root>
);

const AssistantMessage = () => (
  <MessagePrimitive.Root className="aui-assistant-message-root" data-role="assistant">
    <div className="aui-assistant-message-content">
      <MessagePrimitive.Parts components={{ Reasoning, tools: { Fallback: ToolFallback } }} />
    </div>
  </MessagePrimitive.Root>
);

const Thread = () => (
  <ThreadPrimitive.Root className="aui-thread-root">
    <div className="aui-thread-header">
      <ThreadListPrimitive.New className="aui-thread-list-new">New Thread</ThreadListPrimitive.New>
    </div>
    <ThreadPrimitive.Viewport className="aui-thread-viewport">
      <ThreadPrimitive.Empty>
        <div className="aui-thread-welcome-root">Hello there! How can I help you today?</div>
      </ThreadPrimitive.Empty>
      <ThreadPrimitive.Messages components={{ UserMessage, AssistantMessage }} />
    </ThreadPrimitive.Viewport>
    <ComposerPrimitive.Root className="aui-composer-root">
      <ComposerPrimitive.Input placeholder="Send a message..." className="aui-composer-input" rows={1}
                               autoFocus aria-label="Message input" />
      <ThreadPrimitive.If running={false}>
        <ComposerPrimitive.Send className="aui-composer-send" aria-label="Send message">Send</ComposerPrimitive.Send>
      </ThreadPrimitive.If>
      <ThreadPrimitive.If running>
        <ComposerPrimitive.Cancel className="aui-composer-cancel" aria-label="Stop generating">Stop</ComposerPrimitive.Cancel>
      </ThreadPrimitive.If>
    </ComposerPrimitive.Root>
  </ThreadPrimitive.Root>
);

const AssistantModal = () => (
  <AssistantModalPrimitive.Root>
    <AssistantModalPrimitive.Anchor className="aui-root aui-modal-anchor">
      <AssistantModalPrimitive.Trigger className="aui-modal-button" aria-label="Open Assistant">
        <span className="aui-sr-only">Open Assistant</span>
      </AssistantModalPrimitive.Trigger>
    </AssistantModalPrimitive.Anchor>
    <AssistantModalPrimitive.Content sideOffset={16} className="aui-modal-content">
      <Thread />
    </AssistantModalPrimitive.Content>
  </AssistantModalPrimitive.Root>
);

const params = new URLSearchParams(location.search);
const Chat = ({ runtime }) => (
  <AssistantRuntimeProvider runtime={runtime}>
    {params.get("mode") === "full" ? <Thread /> : <AssistantModal />}
  </AssistantRuntimeProvider>
);
const App = () => <Chat runtime={useLocalRuntime(BackendAdapter)} />;
const AgentApp = () => <Chat runtime={useDataStreamRuntime({ api: "/api/agent", protocol: "ui-message-stream" })} />;

createRoot(document.getElementById("root")).render(params.get("agent") === "1" ? <AgentApp /> : <App />);
