"""Chapters layer: one module per notebook (same name), returning data, never figures."""
