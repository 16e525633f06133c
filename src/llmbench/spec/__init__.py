"""What to run; pure, used everywhere: catalog, config, run specs, formulas, limits."""
