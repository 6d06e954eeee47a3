"""The benchmark folder as data: benchmark.json, chapters and their phases, fact files, checks and
the grading rules, the author's lint and skeleton, and the QuickJS sandbox that plays phase scripts.

May import: the persona root utilities (errors, textfile, jsonc). Never the engine, reports, CLI,
config, state or drivers: a benchmark loads and validates with nothing else running.
"""
