from llmbench.containers import import_image
from llmbench.job_log import job_log

job_log(snakemake.log[0], list(snakemake.output))
params = snakemake.params
import_image(params.image, snakemake.output.sqsh, params.arch, params.registry)
