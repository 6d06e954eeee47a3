"""A benchmark of three phases for tests that play a whole run in seconds: two facts told, the profile
changed, then a new chat and two checks (one on the changed profile fact)."""

TINY = {
    "benchmark.json": {"title": "Tiny", "chapters": ["chapter1.md"], "fact_files": ["pets.md"]},
    "instructions.md": "You are Tom.",
    "profile.md": "# Me\n\n## 1. About\n1.1 I am Tom, 40\n",
    "pets.md": "# Pets\n\n## 1. Cats\n1.1 My cat Pixel is 3 years old\n1.2 Pixel sleeps on the piano\n",
    "chapter1.md": "## Start\n```js\nvars.require_all_facts = \"pets\";\n```\nTell the facts from pets.\n\n"
                   "## News\n✏️ profile 1.1: I am Tom, 41 today\n\n"
                   "## Exam\n```js\nawait bench.newSession();\n```\n"
                   "❓ q1 How old is my cat Pixel? Correct answer: 3\n"
                   "❓ q2 How old am I? Correct answer: 41\n",
}
