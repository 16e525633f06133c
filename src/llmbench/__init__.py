"""llmbench: LLM pre-training performance benchmarks, from config to report.

The package holds all logic as pure, typed functions; the Snakemake workflow in
``workflow/`` only wires them together. Nothing here imports snakemake.
"""

__version__ = "0.1.0"
