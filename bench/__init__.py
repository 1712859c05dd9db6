"""Benchmarks: a generator of large profiles built from the real corpus, and the loader benchmark.

Run ``python -m bench.gen_traces --help`` and ``python -m bench.run_bench --help``;
see bench/README.md and docs/performance.md.
"""
