"""Playing a run: the persona loop and its seven tools, the persona models (scripted and
OpenAI-compatible), the channel to the agent's chat, persona-side compaction, the scenario's phase
scripts, the runner that plays config.jsonc's runs in parallel, and the dry run with its oracle agent.

May import: benchmark/, report/ (to publish a run's end), drivers/, and the root (config, state,
errors, tokens, secrets, crashpoints). Never the CLI.
"""
