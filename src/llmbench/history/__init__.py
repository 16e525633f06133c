"""In the history jobs and commands: sweeps across clusters and dates, archives."""
