"""LLM pre-training performance benchmarks, one package per place where code runs."""

__version__ = "0.1.0"
