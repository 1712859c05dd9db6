"""tb-compare: compare two deep-learning performance profiles (TensorBoard plugin + CLI)."""
__version__ = "0.1.0"
PLUGIN_NAME = "profile_compare"
