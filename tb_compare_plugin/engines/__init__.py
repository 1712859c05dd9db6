"""Comparison engines: pure functions of two Profiles (no file reading, no HTTP)."""
