import json

from llmbench.files.job_log import job_log
from llmbench.ranks.embedded.peak import measure_peak

job_log(snakemake.log[0], list(snakemake.output))
with open(snakemake.output.peak, "w") as fh:
    json.dump(measure_peak(snakemake.params.threads), fh, indent=2, sort_keys=True)
