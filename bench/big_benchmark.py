"""Big benchmarks, written to a folder: N facts in fact files of 250, one check per 10 facts, edits
and additions along the way, checks linked by 🔗 or left to inference. What a marathon of a year of
someone's life may hold, to measure how loading, validating and playing one grows with its size.

    python -m bench.big_benchmark OUT_FOLDER --facts 20000 [--checks 2000] [--inferred]

Every fact says something distinct (a person, an object, a number, a place), so inference has words
to go on, and checks ask about facts told in an earlier phase, as a real benchmark does.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

FACTS_PER_FILE = 250
FACTS_PER_SECTION = 25
PEOPLE = ("Anna", "Boris", "Clara", "Dmitri", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Karin", "Lars")
THINGS = ("bicycles", "books", "candles", "drums", "easels", "fiddles", "globes", "hammocks", "kettles", "lamps",
          "maps", "notebooks", "oars", "pianos", "quilts", "rugs", "saddles", "teapots", "umbrellas", "vases")
PLACES = ("attic", "barn", "cellar", "dacha", "garage", "garden", "kitchen", "loft", "office", "porch", "shed", "studio")
RELATIONS = ("cousin", "neighbour", "colleague", "friend", "teacher", "uncle", "aunt", "coach")


def name_of(n: int) -> str:
    """A name of its own for each n, of letters alone (digits in a question would read as its answer)."""
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    out = ""
    while True:
        n, k = divmod(n, len(syllables))
        out += syllables[k]
        if not n:
            return out.capitalize()


def fact_text(rng: random.Random, n: int) -> tuple[str, str, str, int]:
    """A fact, with the person it is about, the thing and the number (what a check asks back)."""
    person = f"{rng.choice(PEOPLE)} {name_of(n)}"
    thing, place, count = rng.choice(THINGS), rng.choice(PLACES), rng.randint(2, 99)
    return f"My {rng.choice(RELATIONS)} {person} keeps {count} {thing} in the {place}.", person, thing, count


def write_benchmark(folder: Path, facts: int, checks: int | None = None, *, linked: bool = True,
                    seed: int = 7, per_file: int = FACTS_PER_FILE) -> Path:
    """The benchmark, in `folder` (made, or overwritten): its files, a phase per fact file."""
    rng = random.Random(seed)
    checks = facts // 10 if checks is None else checks
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.md"):
        old.unlink()
    files = max(1, -(-facts // per_file))
    known: list[tuple[str, str, str, str, int]] = []  # (file, id, person, thing, count) of every fact written
    n = 0
    for f in range(files):
        name = f"life{f + 1}"
        lines = [f"# Life, part {f + 1}", ""]
        in_file = min(per_file, facts - n)
        for s in range(-(-in_file // FACTS_PER_SECTION)):
            lines += [f"## {s + 1}. Year {f + 1}, month {s + 1}"]
            for i in range(min(FACTS_PER_SECTION, in_file - s * FACTS_PER_SECTION)):
                n += 1
                text, person, thing, count = fact_text(rng, n)
                lines.append(f"{s + 1}.{i + 1} {text}")
                known.append((name, f"{s + 1}.{i + 1}", person, thing, count))
            lines.append("")
        (folder / f"{name}.md").write_text("\n".join(lines), encoding="utf-8")
    (folder / "profile.md").write_text("# Me\n\n## 1. About\n1.1 I am Maya, 34, and I collect things\n", encoding="utf-8")
    (folder / "instructions.md").write_text("You are Maya. You write short, friendly messages.\n", encoding="utf-8")

    per_phase = -(-checks // files) if checks else 0
    chapter, asked, by_file = ["# The year", ""], 0, {}
    for name, fid, *rest in known:
        by_file.setdefault(name, []).append((name, fid, *rest))
    for f in range(files):
        name = f"life{f + 1}"
        chapter += [f"## Part {f + 1}"]
        if f % 3 == 2:  # a new chat now and then: the checks after it test memory, not the context window
            chapter += ["```js", "await bench.newSession();", "```"]
        chapter += [f"Tell the facts from {name}, a few at a time, as things come up."]
        if f % 4 == 3:  # now and then something changes, or something new comes up
            chapter.append(f"✏️ {name} 1.1: My cousin {name_of(10**6 + f)} moved all the lamps to the attic.")
            chapter.append(f"➕ {name} 1: My friend {name_of(2 * 10**6 + f)} gave me {f + 3} teapots for the kitchen.")
        pool = [fact for fact in (by_file[f"life{f}"] if f else []) if fact[1] != "1.1"]  # the part before: told
        rng.shuffle(pool)
        for _ in range(min(per_phase, checks - asked, len(pool))):
            file, fid, person, thing, count = pool.pop()
            asked += 1
            link = f" 🔗 {file} {fid}" if linked else ""
            chapter.append(f"❓ c{asked} [single] How many {thing} does {person} keep? Correct answer: {count}{link}")
        chapter.append("")
    (folder / "chapter1.md").write_text("\n".join(chapter), encoding="utf-8")
    manifest = {"title": f"Big: {facts} facts, {asked} checks", "chapters": ["chapter1.md"],
                "fact_files": [f"life{f + 1}.md" for f in range(files)]}
    (folder / "benchmark.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.big_benchmark", description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--facts", type=int, default=20000)
    ap.add_argument("--checks", type=int, default=None, help="default: one per 10 facts")
    ap.add_argument("--inferred", action="store_true", help="no 🔗 on the check lines: links are inferred")
    ap.add_argument("--per-file", type=int, default=FACTS_PER_FILE, help="facts in each fact file")
    args = ap.parse_args()
    write_benchmark(args.folder, args.facts, args.checks, linked=not args.inferred, per_file=args.per_file)
    print(f"wrote {args.folder}")


if __name__ == "__main__":
    main()
