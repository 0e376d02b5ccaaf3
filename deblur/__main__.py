from deblur.cli import run

run()
