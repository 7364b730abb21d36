"""Book layer: profiles, the papermill runner, results files, the CLI, the ledger, the myst-nb
plugin, and the live ipywidgets explorers."""
