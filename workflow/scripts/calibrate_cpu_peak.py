import json

from llmbench.embedded.peak import measure_peak
from llmbench.job_log import job_log

job_log(snakemake.log[0], list(snakemake.output))
with open(snakemake.output.peak, "w") as fh:
    json.dump(measure_peak(snakemake.params.threads), fh, indent=2, sort_keys=True)
