from llmbench.files.job_log import job_log
from llmbench.setup.containers import import_image

job_log(snakemake.log[0], list(snakemake.output))
params = snakemake.params
import_image(params.image, snakemake.output.sqsh, params.arch, params.registry)
