"""On the login node, inside Snakemake: the values the workflow's rules need."""
