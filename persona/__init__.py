"""MarathonMemBench engine: benchmarks, the persona loop, grading, state and reports."""
