import sys

from llmbench.containers import import_image

sys.stderr = open(snakemake.log[0], "w")
params = snakemake.params
import_image(params.image, snakemake.output.sqsh, params.arch, params.registry)
