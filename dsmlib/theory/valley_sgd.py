"""Label-noisy SGD along a valley of minima (theory), vectorised over runs.

``R`` independent runs of the diagonal linear network of :mod:`dsmlib.theory.valley` advance
together, each with its own ``eta`` and ``sigma^2`` (so a whole sweep is one batch). Step ``k``
of a run is SGD on the noisy labels (Eq. 11): with the minibatch ``B_k`` (``b`` indices from
:func:`dsmlib.theory.minibatch.draw_minibatches`) and noisy labels ``y~`` (Gaussian, from
:mod:`dsmlib.theory.label_noise`: FRESH at every step, or drawn ONCE per run),

    c_j = (1/b) sum_{i in B_k} (f(x_i) - y~_i) x_ij,    u <- u - eta c*v,    v <- v - eta c*u.

Random inputs are drawn chunk by chunk (torch, on the problem's device), then consumed by a
backend: ``"numba"`` (a compiled loop over steps and runs, the CPU default: tiny tensors make
per-step torch calls cost more than the arithmetic) or ``"torch"`` (one batched step per
iteration, any device). Both consume the same draws, so on the same seed they agree to
rounding. :func:`simulate` is the driver; the discrete doubly stochastic model (Eq. 17) plugs
into it (:mod:`dsmlib.theory.valley_dsm`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
from numba import njit
from torch import Tensor

from ..foundation.checks import check_choice, check_int
from ..foundation.rng import as_generator, as_torch_generator
from .label_noise import FixedLabelNoise, GaussianNoise
from .minibatch import draw_minibatches
from .valley import ValleyProblem, gradient_norm, loss, sharpness

__all__ = ["ValleyRuns", "per_run", "initial_point", "choose_backend", "simulate",
           "SGDDraws", "sgd_kernel", "sgd_torch", "run_valley_sgd"]

CHUNK_ELEMENTS = 1 << 21   # random numbers drawn per chunk: bounds working memory


@dataclass
class ValleyRuns:
    """Recorded trajectories of ``R`` runs (numpy, on the CPU)."""

    steps: np.ndarray      # (T,) recorded step indices: 0, every record_every, and the last
    u: np.ndarray          # (T, R, d)
    v: np.ndarray          # (T, R, d)
    G: np.ndarray          # (T, R) gradient norm, Eq. (22)
    loss: np.ndarray       # (T, R) label-noiseless loss
    eta: np.ndarray        # (R,)
    sigma2: np.ndarray     # (R,)
    batch_size: int
    noise_mode: str

    @property
    def w(self) -> np.ndarray:
        return self.u * self.v

    @property
    def n_runs(self) -> int:
        return int(self.u.shape[1])

    def imbalance_rate(self, *, per: str = "time") -> np.ndarray:
        """``-log(|delta_K| / |delta_0|) / K`` per run and coordinate (``/ (K eta)`` per unit
        time ``t = k eta``): the mean rate at which the imbalance shrinks, (R, d)."""
        per = check_choice("per", per, ["time", "step"])
        d0 = np.abs(self.u[0] ** 2 - self.v[0] ** 2)
        d1 = np.abs(self.u[-1] ** 2 - self.v[-1] ** 2)
        rate = -np.log(d1 / d0) / float(self.steps[-1])
        return rate / self.eta[:, None] if per == "time" else rate


def per_run(name: str, value: Any, n_runs: int, *, positive: bool) -> np.ndarray:
    """A scalar or an ``(R,)`` array of finite numbers, ``> 0`` or ``>= 0``, as ``(R,)``."""
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        arr = np.full(n_runs, float(arr))
    if arr.shape != (n_runs,) or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be a finite number or an array of {n_runs} finite numbers "
                         f"(one per run), got shape {arr.shape}")
    if np.any(arr <= 0) if positive else np.any(arr < 0):
        raise ValueError(f"{name} must be {'> 0' if positive else '>= 0'}, got min {arr.min()}")
    return arr


def initial_point(problem: ValleyProblem, u0: Any, v0: Any, n_runs: int) -> tuple[Tensor, Tensor]:
    """``u0, v0`` of shape (d,) or (R, d), broadcast to (R, d) on the problem's device."""
    out = []
    for name, t in (("u0", u0), ("v0", v0)):
        t = torch.as_tensor(t, dtype=torch.float64).to(problem.X.device)
        if t.ndim == 1:
            t = t.expand(n_runs, -1)
        if t.shape != (n_runs, problem.d) or not torch.isfinite(t).all():
            raise ValueError(f"{name} must be finite with shape (d,) = ({problem.d},) or "
                             f"(n_runs, d) = ({n_runs}, {problem.d}), got {tuple(t.shape)}")
        out.append(t.clone())
    return out[0], out[1]


def choose_backend(backend: str, device: torch.device) -> str:
    """``"auto"``: numba on the CPU, torch elsewhere; numba refuses a non-CPU device."""
    backend = check_choice("backend", backend, ["auto", "numba", "torch"])
    if backend == "auto":
        return "numba" if device.type == "cpu" else "torch"
    if backend == "numba" and device.type != "cpu":
        raise ValueError(f"backend='numba' runs on the CPU only, the problem is on {device}")
    return backend


def simulate(problem: ValleyProblem, u: Tensor, v: Tensor, *, eta: np.ndarray, steps: int,
             record_every: int, draw: Callable[[int], tuple], advance: Callable[..., Any],
             backend: str, sigma2: np.ndarray, batch_size: int, noise_mode: str,
             progress: bool = False, desc: str = "runs") -> ValleyRuns:
    """Drive ``advance(u, v, eta, *inputs) -> (u, v)`` over ``steps`` steps.

    ``draw(count)`` returns the random inputs of ``count`` steps (leading axis: step), drawn
    about ``CHUNK_ELEMENTS`` at a time (``draw.per_step`` numbers per step); the state is recorded at step 0, every ``record_every`` steps
    and at the end. ``backend="numba"`` hands numpy arrays (updated in place) to ``advance``.
    """
    steps = check_int("steps", steps, minimum=1)
    record_every = check_int("record_every", record_every, minimum=1)
    dev = u.device
    if backend == "numba":
        u, v, eta_b = u.cpu().numpy().copy(), v.cpu().numpy().copy(), np.asarray(eta, float)
        snap = lambda a: torch.from_numpy(a.copy())  # noqa: E731
    else:
        eta_b = torch.as_tensor(eta, device=dev)[:, None]
        snap = lambda a: a  # noqa: E731
    rec_steps, U, Vs = [0], [snap(u)], [snap(v)]
    chunk = max(1, CHUNK_ELEMENTS // max(1, int(getattr(draw, "per_step", 1))))
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=steps, desc=desc, mininterval=1.0)
    for start in range(0, steps, chunk):
        inputs = draw(min(chunk, steps - start))
        if backend == "numba":
            inputs = tuple(t.cpu().numpy() if isinstance(t, Tensor) else t for t in inputs)
        pos, end = start, start + inputs[0].shape[0]
        while pos < end:
            nxt = min(end, (pos // record_every + 1) * record_every)
            u, v = advance(u, v, eta_b, *(t[pos - start:nxt - start] for t in inputs))
            pos = nxt
            if pos % record_every == 0 or pos == steps:
                rec_steps.append(pos), U.append(snap(u)), Vs.append(snap(v))
        if bar is not None:
            bar.update(end - start)
    if bar is not None:
        bar.close()
    U, V = torch.stack(U).to(dev), torch.stack(Vs).to(dev)
    if not (torch.isfinite(U).all() and torch.isfinite(V).all()):
        raise ValueError("the runs diverged (non-finite parameters): lower eta or sigma2")
    return ValleyRuns(steps=np.array(rec_steps), u=U.cpu().numpy(), v=V.cpu().numpy(),
                      G=gradient_norm(U, V, problem.a).cpu().numpy(),
                      loss=loss(U, V, problem.X, problem.y).cpu().numpy(),
                      eta=np.asarray(eta, float), sigma2=np.asarray(sigma2, float),
                      batch_size=batch_size, noise_mode=noise_mode)


class SGDDraws:
    """``draw(count)`` -> minibatch indices and noisy labels, each ``(count, R, b)``, on the
    problem's device: Gaussian label noise (unit noise from the label-noise model, scaled by each
    run's sigma), fresh per step or one table per run drawn at construction."""

    def __init__(self, problem: ValleyProblem, sigma2: np.ndarray, *, batch_size: int,
                 replace: bool, noise_mode: str, seed: Any) -> None:
        self.p, self.b, self.replace, self.mode = problem, batch_size, replace, noise_mode
        self.R, dev = sigma2.shape[0], problem.X.device
        self.per_step = 2 * self.R * batch_size
        self.sigma = torch.as_tensor(np.sqrt(sigma2), device=dev)
        self.rng = as_generator(seed)
        self.gen = as_torch_generator(self.rng, dev)
        self.unit = GaussianNoise(1.0)
        if noise_mode == "fixed":          # one draw per run and sample, before training
            zeros = torch.zeros(self.R, problem.n, dtype=torch.float64, device=dev)
            self.y_runs = problem.y + self.sigma[:, None] * FixedLabelNoise(self.unit, zeros, self.gen).y_noisy

    def __call__(self, count: int) -> tuple[Tensor, Tensor]:
        idx = torch.as_tensor(draw_minibatches(self.p.n, self.b, count * self.R, replace=self.replace,
                                               seed=self.rng), device=self.p.X.device)
        idx = idx.reshape(count, self.R, self.b)
        if self.mode == "fixed":
            return idx, self.y_runs[torch.arange(self.R, device=idx.device)[None, :, None], idx]
        eps = self.unit.residuals(torch.zeros(idx.shape, dtype=torch.float64, device=idx.device),
                                  self.gen)
        return idx, self.p.y[idx] + self.sigma[None, :, None] * eps


@njit(cache=True)
def sgd_kernel(u, v, eta, X, idx, labels):  # pragma: no cover - compiled
    """``idx.shape[0]`` SGD steps of every run, in place (numba backend)."""
    steps, R, b = idx.shape
    d = u.shape[1]
    c = np.empty(d)
    for k in range(steps):
        for r in range(R):
            c[:] = 0.0
            for m in range(b):
                i = idx[k, r, m]
                f = 0.0
                for j in range(d):
                    f += u[r, j] * v[r, j] * X[i, j]
                res = (f - labels[k, r, m]) / b
                for j in range(d):
                    c[j] += res * X[i, j]
            for j in range(d):
                uj = u[r, j]
                u[r, j] = uj - eta[r] * c[j] * v[r, j]
                v[r, j] = v[r, j] - eta[r] * c[j] * uj
    return u, v


def sgd_torch(u: Tensor, v: Tensor, eta: Tensor, X: Tensor, idx: Tensor,
              labels: Tensor) -> tuple[Tensor, Tensor]:
    """The same steps, one batched torch step per iteration (torch backend, any device)."""
    for k in range(idx.shape[0]):
        xb = X[idx[k]]                                                     # (R, b, d)
        resid = (xb * (u * v)[:, None, :]).sum(-1) - labels[k]             # (R, b)
        c = (resid[..., None] * xb).mean(dim=1)                            # (R, d)
        u, v = u - eta * c * v, v - eta * c * u
    return u, v


def run_valley_sgd(problem: ValleyProblem, u0: Any, v0: Any, *, eta: Any, sigma2: Any,
                   batch_size: int, steps: int, n_runs: int, noise_mode: str = "fresh",
                   replace: bool = True, record_every: int = 100, seed: Any = 0,
                   device: Any = None, backend: str = "auto", progress: bool = False) -> ValleyRuns:
    """``n_runs`` runs of label-noisy SGD from ``(u0, v0)``, vectorised; ``eta`` and ``sigma2``
    are scalars or one value per run (``sigma2 = 0``: noiseless SGD).

    ``noise_mode="fresh"``: new Gaussian label noise at every step (Sec. 5); ``"fixed"``: one
    noisy label per sample and run, drawn before training (Sec. 6). ``device`` (default: the
    problem's) is where the draws happen. Raises ValueError when some ``eta`` is beyond the
    stability limit ``2 / sharpness`` at the start point.
    """
    n_runs = check_int("n_runs", n_runs, minimum=1)
    noise_mode = check_choice("noise_mode", noise_mode, ["fresh", "fixed"])
    if not isinstance(replace, (bool, np.bool_)):
        raise ValueError(f"replace must be True or False, got {replace!r}")
    batch_size = check_int("batch_size", batch_size, minimum=1,
                           maximum=None if replace else problem.n)
    eta_r = per_run("eta", eta, n_runs, positive=True)
    s2_r = per_run("sigma2", sigma2, n_runs, positive=False)
    if device is not None:
        problem = problem.to(device)
    backend = choose_backend(backend, problem.X.device)
    u, v = initial_point(problem, u0, v0, n_runs)
    limit = 2.0 / sharpness(u, v, problem.X).cpu().numpy()
    if np.any(eta_r >= limit):
        r = int(np.argmax(eta_r / limit))
        raise ValueError(f"eta must be < 2/sharpness = {limit[r]:.4g} at the start point "
                         f"(got {eta_r[r]:g} in run {r}): SGD would leave the valley")
    draw = SGDDraws(problem, s2_r, batch_size=batch_size, replace=bool(replace),
                    noise_mode=noise_mode, seed=seed)
    X = problem.X.cpu().numpy() if backend == "numba" else problem.X
    kernel = sgd_kernel if backend == "numba" else sgd_torch
    return simulate(problem, u, v, eta=eta_r, steps=steps, record_every=record_every, draw=draw,
                    advance=lambda u_, v_, e, idx, lab: kernel(u_, v_, e, X, idx, lab),
                    backend=backend, sigma2=s2_r, batch_size=batch_size, noise_mode=noise_mode,
                    progress=progress, desc=f"SGD, {noise_mode} noise")
