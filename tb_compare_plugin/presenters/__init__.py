"""Presenters: turn engine results and discovery state into JSON, xlsx and CLI text."""
