"""`mmb import locomo|longmemeval`: a published memory dataset as benchmarks any chat agent can be run on."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from persona.cli.common import EXIT_BAD_INPUT, fail
from persona.errors import InputError

app = typer.Typer(no_args_is_help=True, help="Import a memory dataset (LoCoMo, LongMemEval) as benchmark folders.")


def _new_chat(value: str) -> str | int:
    if value in ("every", "never"):
        return value
    if value.isdigit() and int(value) > 0:
        return int(value)
    raise typer.BadParameter("every, never or a number of sessions (2: a new chat every 2 sessions)")


def _write(built: list, out: Path, force: bool, started: float) -> None:
    """Each benchmark into `out` (one) or `out/<id>/` (several); what it holds and every count shown."""
    from persona.benchmark.importers.writer import write_benchmark
    from persona.benchmark.loader import load_benchmark

    if not built:
        fail("nothing to import: the file has no samples")
    many = len(built) > 1
    folders = []
    for bench in built:
        folder = out / bench.folder if many else out
        try:
            write_benchmark(bench, folder, force)
        except InputError as e:
            fail(e)
        folders.append(folder)
        typer.echo(f"{folder}: {len(bench.phases)} phases, {bench.fact_count()} facts, {len(bench.checks)} checks"
                   f" — {bench.title}")
        for line in bench.tally.lines():
            typer.echo(f"  {line}")
    elapsed = time.perf_counter() - started
    bad = 0
    for folder in folders:  # what was written must load: an importer bug shows here, not in the run
        try:
            load_benchmark(folder)
        except InputError as e:
            bad += 1
            for p in e.problems[:20]:
                typer.secho(str(p), fg="red", err=True)
    typer.echo(f"imported {len(folders)} benchmark(s) in {elapsed:.1f} s; details in each SOURCE.md")
    if bad:
        typer.secho(f"{bad} imported benchmark(s) do not load: a bug of the importer, please report it", fg="red", err=True)
        raise typer.Exit(EXIT_BAD_INPUT)
    typer.echo("next: mmb validate FOLDER, then mmb run --dry --benchmark FOLDER (the data is CC BY-NC or similar: "
               "see SOURCE.md before sharing the folders)")


@app.command()
def locomo(
    file: Annotated[Path, typer.Argument(help="locomo10.json, or one conversation (multimodal_dialog/locomo10_v2/NN.json)")],
    out: Annotated[Path, typer.Option("-o", "--out", help="The benchmark folder (one sample), or where one folder per "
                                      "sample goes (several)")],
    sample: Annotated[list[str] | None, typer.Option("--sample", help="Import only this sample id (repeatable)")] = None,
    play: Annotated[str, typer.Option("--as", help="The speaker the persona plays: A or B")] = "A",
    new_chat: Annotated[str, typer.Option("--new-chat", help="A new chat before every session, every N sessions, "
                                          "or never (the questions always start one unless never)")] = "every",
    ask: Annotated[tuple[str, int] | None, typer.Option("--ask", help="'after-each N': ask each question after every "
                                                        "N sessions, once its evidence is told (default: all at the end)")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace a folder that exists")] = False,
) -> None:
    """LoCoMo as benchmarks: the persona lives one speaker's sessions, then asks LoCoMo's questions."""
    from persona.benchmark.importers.locomo import Options, import_locomo

    started = time.perf_counter()
    if play.upper() not in ("A", "B"):
        fail("--as takes A or B")
    if ask is not None and (ask[0] != "after-each" or ask[1] < 1):
        fail("--ask takes 'after-each N' with N at least 1")
    try:
        opts = Options(play=play.upper(), new_chat=_new_chat(new_chat), ask_after_each=ask[1] if ask else None)
    except typer.BadParameter as e:
        fail(f"--new-chat: {e}")
    try:
        built = import_locomo(file, sample or None, opts)
    except InputError as e:
        fail(e)
    _write(built, out, force, started)


@app.command()
def longmemeval(
    file: Annotated[Path, typer.Argument(help="longmemeval_oracle.json (or _s/_m: only their evidence sessions are told)")],
    out: Annotated[Path, typer.Option("-o", "--out", help="The benchmark folder (one bundle), or where one folder per "
                                      "bundle goes (several)")],
    bundle: Annotated[int, typer.Option("--bundle", min=1, help="Questions per benchmark: one run asks them all")] = 10,
    question: Annotated[list[str] | None, typer.Option("--question", help="Import only this question id (repeatable)")] = None,
    new_chat: Annotated[str, typer.Option("--new-chat", help="every (a new chat before each session and each "
                                          "question phase) or never")] = "every",
    force: Annotated[bool, typer.Option("--force", help="Replace a folder that exists")] = False,
) -> None:
    """LongMemEval as benchmarks: bundles of questions, each asked on its date after its evidence sessions are retold."""
    from persona.benchmark.importers.longmemeval import Options, import_longmemeval

    started = time.perf_counter()
    if new_chat not in ("every", "never"):
        fail("--new-chat takes every or never")
    try:
        built = import_longmemeval(file, Options(bundle=bundle, questions=question or [], new_chat=new_chat))
    except InputError as e:
        fail(e)
    _write(built, out, force, started)
