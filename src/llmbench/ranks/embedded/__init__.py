"""The embedded workload: a tiny Llama trained for real with PyTorch on the CPU."""
