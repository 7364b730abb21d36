"""dsmlib: the tested library behind the Doubly Stochastic Models book.

The package is layered; imports point down only (a test checks it):

1. :mod:`dsmlib.foundation` -- argument checks, randomness and devices, statistics, claims.
2. :mod:`dsmlib.theory` -- one module per concept of the paper: least squares (exact moments
   and the compiled SGD kernel), minibatch sampling, label-noise models, per-sample Jacobians,
   the gradient norm, the diffusion matrices and the one-step decomposition.
3. :mod:`dsmlib.models` -- seeded networks, data sets, the settings of the noise chapters.
4. :mod:`dsmlib.chapters` -- one module per notebook, with the notebook's name: its experiment,
   claims and explorer states. Returns data, never figures.
5. :mod:`dsmlib.figures` -- one module per chapter, plus shared conventions and claims tables.
6. :mod:`dsmlib.book` -- profiles, the papermill runner, the CLI, the ledger, the myst-nb
   plugin, and the live ipywidgets explorers.

Equation numbers in docstrings are the paper's (the numbered equations of the tex, counted):
(12) the split of one step, (13) the two noise terms, (14) Proposition 1, (15) the diffusion
matrices, (16)-(17) the continuous and discrete doubly stochastic models, (18) Proposition 2's
bound, (22) Proposition 3's strength, (24) the symmetric swap, (25)-(30) least squares.
"""
__version__ = "0.2.0"
