// assistant-ui's own templates (the shadcn registry's assistant-modal.tsx, thread.tsx and the
// thread list's New Thread button), written without Tailwind, lucide icons or motion, on
// `useLocalRuntime` with a ChatModelAdapter that streams from the site's backend: the way the docs
// wire a custom backend. `?mode=full` shows the thread on the page instead of in the modal.
import React from "react";
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

const UserMessage = () => (
  <MessagePrimitive.Root className="aui-user-message-root" data-role="user">
    <div className="aui-user-message-content"><MessagePrimitive.Parts /></div>
  </MessagePrimitive.Root>
);

const AssistantMessage = () => (
  <MessagePrimitive.Root className="aui-assistant-message-root" data-role="assistant">
    <div className="aui-assistant-message-content"><MessagePrimitive.Parts /></div>
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

const App = () => {
  const runtime = useLocalRuntime(BackendAdapter);
  const full = new URLSearchParams(location.search).get("mode") === "full";
  return (
    <AssistantRuntimeProvider runtime={runtime}>
      {full ? <Thread /> : <AssistantModal />}
    </AssistantRuntimeProvider>
  );
};

createRoot(document.getElementById("root")).render(<App />);
