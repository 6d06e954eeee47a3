"""The `mmb` command line (typer): app.py assembles one module per group of commands.

May import anything in persona/ and drivers/; nothing imports it.
"""
