from persona.cli.app import app

app(prog_name="mmb")
