import sys
from pathlib import Path

from llmbench.history.store import add_sweep, open_history
from llmbench.runner import write_json_atomic

sys.stderr = open(snakemake.log[0], "w")
results = Path(snakemake.input.sweep).parent.parent
added = add_sweep(open_history(snakemake.params.history), results)
write_json_atomic(
    Path(snakemake.output.added),
    {"sweep_id": added.sweep_id, "history": snakemake.params.history, "path": added.path},
)
print(
    f"sweep {added.sweep_id} {'added to' if added.new else 'already in'} {added.path}",
    file=sys.stderr,
)
