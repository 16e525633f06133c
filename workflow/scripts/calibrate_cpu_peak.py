from llmbench.files.atomic import write_json_atomic
from llmbench.files.job_log import job_log
from llmbench.ranks.embedded.peak import measure_peak

job_log(snakemake.log[0], list(snakemake.output))
write_json_atomic(snakemake.output.peak, measure_peak(snakemake.params.threads))
