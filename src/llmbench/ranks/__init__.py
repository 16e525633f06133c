"""Inside the container on each rank: the standard library, the framework, spec, errors."""
