"""What a run shows, live and after: the report.md entry, report.html, the leaderboard, scores by
category and phase, memory decay, the terminal's live progress, and the same pages served live
(`mmb view`, live/).

May import: benchmark/ and the root (state, config, errors, tokens). Never the engine, the CLI or
drivers: every page is rebuilt from saved state files alone (`mmb report`).
"""
