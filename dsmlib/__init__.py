"""dsmlib: the tested library behind the Doubly Stochastic Models book.

Modules map to concepts of Xiong et al.:

- :mod:`dsmlib.ols`     -- SGD on least squares with label noise (Section 6, Fig. 3),
  and the exact stationary moments of the iterates.
- :mod:`dsmlib.ols_experiment` -- the eight panels of Figure 3 and Section 6's claims.
- :mod:`dsmlib.noise`   -- label-noise models (Gaussian, symmetric swap), fixed or fresh, and
  the split of one real SGD step into the three terms of Eq. (11).
- :mod:`dsmlib.covariances` -- per-sample gradients and Jacobians of any torch model, the
  diffusion matrices Sigma^SGD and Sigma^ULN of Eq. (15), the gradient norm of Prop. 3.
- :mod:`dsmlib.models`  -- seeded MLP, small CNN and CIFAR ResNets.
- :mod:`dsmlib.noise_experiment` -- the Prop. 1 / Prop. 3 / Remark 2 experiments and claims.
- :mod:`dsmlib.stats`   -- batch-means standard errors for correlated chains.
- :mod:`dsmlib.claims`  -- claims with measured verdicts, the ledger.
- :mod:`dsmlib.plots`   -- plotly figures and the offline HTML renderer.
- :mod:`dsmlib.widgets` -- live ipywidgets explorers.
- :mod:`dsmlib.profiles`, :mod:`dsmlib.runner` -- profiles, papermill execution, book build.
"""
__version__ = "0.1.0"
