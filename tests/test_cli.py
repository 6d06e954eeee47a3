"""The command line's habits: --version, one clear line for bad arguments, documented exit codes."""

from __future__ import annotations

from typer.testing import CliRunner

from persona.cli.app import app, package_version


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), prog_name="mmb")


def test_version():
    done = invoke("--version")
    assert done.exit_code == 0 and done.stdout == f"mmb (MarathonMemBench) {package_version()}\n"
    assert package_version()[0].isdigit()


def test_bad_arguments_exit_2_with_one_line():
    for args, line in [(["run", "--nope"], "mmb run: No such option: --nope (mmb run --help)"),
                       (["nope"], "mmb: No such command 'nope'. (mmb --help)"),
                       (["validate"], "mmb validate: Missing argument 'benchmarks'. (mmb validate --help)")]:
        done = invoke(*args)
        assert done.exit_code == 2, args
        assert done.stderr.splitlines() == [line] and done.stdout == ""


def test_no_arguments_show_the_help():
    done = invoke()
    assert done.exit_code == 2 and "Usage: mmb" in done.output and "run" in done.output
