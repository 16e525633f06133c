"""On each rank of the embedded workload: a tiny Llama trained for real with PyTorch."""
