"""On the GPU machine under test: the GPU proof kit's steps, one module each.

``python -m llmbench.proof <step> ...`` runs one; benchmarks/gpu_proof/run.sh runs them
in order (docs/gpu-proof.md): the wheel list, the environment, one node's checks, the
Megatron-Core framework runs, the combined tables and the summary.
"""
