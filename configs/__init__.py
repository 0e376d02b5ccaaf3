"""The shipped configs; installed as the package `deblur.configs` so they travel with the code."""
