"""On the GPU machine under test: the GPU proof kit's steps, one module each, beside its
shell driver and not in the installed package (a checkout runs the kit).

``python -m benchmarks.gpu_proof <step> ...`` (from the repository root, or with it on
PYTHONPATH) runs one; benchmarks/gpu_proof/run.sh runs them in order (docs/gpu-proof.md):
the wheel list, the environment, one node's checks, the Megatron-Core framework runs, the
combined tables and the summary.
"""
