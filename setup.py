"""The package list, found rather than written out: every package under ``spmdlab/``, and
the REPL, whose source is ``repl/`` and whose import name is ``spmdlab_repl`` (a name no
other package uses) with its subpackages. pyproject.toml's ``find`` cannot rename a
folder; everything else is configured there."""
from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["spmdlab", "spmdlab.*"]),
                "spmdlab_repl", *(f"spmdlab_repl.{p}" for p in find_packages("repl"))],
      package_dir={"spmdlab_repl": "repl"})
