from pathlib import Path

from llmbench.setup.venv import build_venv

marker = Path(snakemake.output.marker)
build_venv(marker.parent, snakemake.input.requirements, marker, log=snakemake.log[0])
