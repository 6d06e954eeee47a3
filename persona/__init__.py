"""MarathonMemBench's engine, in subpackages that follow a run's flow:

    benchmark/  the benchmark folder as data: loading, phases, fact files, grading rules, lint,
                the skeleton of `mmb new`, the QuickJS sandbox for phase scripts
    engine/     playing a run: the persona loop, its tools and models (scripted, OpenAI-compatible),
                the agent channel, compaction, the runner, the dry run and its oracle agent
    report/     what a run shows: report.md, report.html, leaderboard, scores, decay, live progress
    cli/        the `mmb` commands, on top of everything

At the root, shared by all: config (config.jsonc), state (results/<id>/state.json), errors,
tokens, secrets, crashpoints, textfile, jsonc.

Imports run one way (tests/test_architecture.py checks it): root utilities ← benchmark ← state,
config ← report ← engine ← cli. The chat drivers (top-level `drivers/`) never import persona.
"""
