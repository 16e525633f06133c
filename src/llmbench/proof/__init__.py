"""The GPU proof kit's steps (benchmarks/gpu_proof/run.sh, docs/gpu-proof.md): its wheel
list, the environment it found, one node's checks, the Megatron-Core framework runs, the
combined tables and the summary. ``python -m llmbench.proof <step> ...`` runs one."""
