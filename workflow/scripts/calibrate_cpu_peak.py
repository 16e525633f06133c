import json
import sys

from llmbench.embedded.peak import measure_peak

sys.stderr = open(snakemake.log[0], "w")
with open(snakemake.output.peak, "w") as fh:
    json.dump(measure_peak(snakemake.params.threads), fh, indent=2, sort_keys=True)
