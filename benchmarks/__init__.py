"""Benchmarks: `python -m benchmarks.train` (kerasish vs PyTorch) and the per-op scripts."""
