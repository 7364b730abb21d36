"""Theory layer: one module per concept of the paper.

- :mod:`.least_squares` -- the least-squares problem and the exact moments of SGD on it;
- :mod:`.least_squares_sgd` -- the compiled SGD kernel and the naive reference loop;
- :mod:`.minibatch` -- the one minibatch sampler and Prop. 1's sampling factors;
- :mod:`.label_noise` -- Gaussian and symmetric-swap label noise, drawn once or fresh;
- :mod:`.jacobians` -- per-sample Jacobians and loss gradients of any torch model;
- :mod:`.gradient_norm` -- the gradient norm G(theta) of Prop. 3, exact and by probes;
- :mod:`.diffusion` -- the diffusion matrices of Eq. (15) and the step decomposition of Eq. (12);
- :mod:`.valley` -- valleys of minima along which G varies (diagonal linear networks), exactly;
- :mod:`.valley_sgd` -- label-noisy SGD on them, vectorised over runs (numba or torch);
- :mod:`.valley_dsm` -- the discrete doubly stochastic model, Eq. (17), for the same networks.
- :mod:`.psd` -- the robust symmetric square root of a PSD matrix;
- :mod:`.brownian` -- Brownian increments coupled across step sizes;
- :mod:`.sde` -- SDE solvers vectorised over paths, with their declared strong orders;
- :mod:`.dsm` -- the three processes of Prop. 2: SGD, Eq. (17) and Eq. (16), over many paths;
- :mod:`.perturbation` -- Remark 2's probe: the outputs' response to random parameter noise.
"""
