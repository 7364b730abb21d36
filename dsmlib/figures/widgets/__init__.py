"""Live ipywidgets explorers, one module per chapter (book layer)."""
