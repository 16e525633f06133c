import sys

from llmbench.errors import LlmbenchError
from llmbench.preflight.run import write_gate
from llmbench.preflight.settings import settings_from_dict

sys.stderr = open(snakemake.log[0], "w")
try:
    settings = settings_from_dict(snakemake.params.settings)
    write_gate(snakemake.input.results, settings, snakemake.output)
except LlmbenchError as err:  # one line: which nodes failed and how many the sweep needs
    print(f"llmbench: error: {err}", file=sys.stderr)
    sys.exit(f"llmbench: error: {err}")
