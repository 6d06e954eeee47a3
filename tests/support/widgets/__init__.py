"""Real chat widgets from the npm registry, each on a page of its own, served with a local backend
that speaks the widget's own protocol (n8n's chat webhook, Flowise's prediction API, Direct Line,
an assistant-ui LocalRuntime adapter) in front of one small agent with a memory of each session."""
