"""The `mmb` command line (typer): run, report, validate, new, probe, login, browsers-path.

May import anything in persona/ and drivers/; nothing imports it.
"""
