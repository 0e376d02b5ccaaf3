from deblur.cli import app

app(prog_name="deblur")
