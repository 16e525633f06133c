"""In the preflight jobs: checks on each node, then the gate over their results."""
