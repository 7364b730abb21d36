"""dsmlib: the tested library behind the Doubly Stochastic Models book.

Modules map to concepts of Xiong et al.:

- :mod:`dsmlib.ols`     -- SGD on least squares with label noise (Section 6, Fig. 3),
  and the exact stationary moments of the iterates.
- :mod:`dsmlib.stats`   -- batch-means standard errors for correlated chains.
- :mod:`dsmlib.claims`  -- claims with measured verdicts, the ledger.
- :mod:`dsmlib.plots`   -- plotly figures and the offline HTML renderer.
- :mod:`dsmlib.widgets` -- live ipywidgets explorers.
- :mod:`dsmlib.profiles`, :mod:`dsmlib.runner` -- profiles, papermill execution, book build.
"""
__version__ = "0.1.0"
