"""Figures layer: one module per chapter (same name), shared conventions, claims tables."""
