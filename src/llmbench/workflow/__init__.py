"""On the login node, inside Snakemake: the values rules need (all that the .smk import)."""
