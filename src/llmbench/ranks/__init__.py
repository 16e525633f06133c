"""Inside the container on each rank: entry points, the embedded trainer, step clock."""
