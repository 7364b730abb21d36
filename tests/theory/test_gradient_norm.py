"""The gradient norm G(theta) of Prop. 3 (dsmlib.theory.gradient_norm): exact, and by random
probes with a standard error and an interval that covers, on every device."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats
from torch import nn

from dsmlib.models import networks
from dsmlib.theory import gradient_norm as gn
from dsmlib.theory import jacobians as jc
from helpers import TORCH_CASES, brute_force, case_data, one_thread

DT = torch.float64


def _vector_mlp(device):
    make, shape, n_out = TORCH_CASES["mlp_vector"]
    return make(device), case_data(shape, n_out, device)[0]


def test_exact_gradient_norm_matches_autograd_loop(device):
    for name, (make, shape, n_out) in TORCH_CASES.items():
        m = make(device)
        X, y = case_data(shape, n_out, device)
        J, _ = brute_force(m, X, y)
        assert gn.gradient_norm(m, X, chunk_size=4) == pytest.approx(
            float(J.pow(2).sum() / X.shape[0]), rel=1e-10), name


@pytest.mark.parametrize("n_out", [1, 3])
def test_probe_vjp_rademacher_is_exact_for_scalar_outputs(device, n_out):
    """For L = 1, ||J_i^T u||^2 = ||J_i||^2 whatever u = +-1: the estimate is exact, with
    standard error 0 and infinite degrees of freedom. Run on the BatchNorm CNN too, so the
    probe path provably passes the running statistics to the network. With L = 3 the same
    call is a genuine estimate with a positive standard error."""
    for m, X in ((TORCH_CASES["mlp_scalar"][0](device) if n_out == 1 else _vector_mlp(device)[0],
                  case_data((8, 4) if n_out == 1 else (9, 3), n_out, device)[0]),
                 (TORCH_CASES["cnn_bn_eval"][0](device, n_out=n_out),
                  case_data((6, 2, 6, 6), n_out, device)[0])):
        est = gn.gradient_norm_probe(m, X, n_probes=3, seed=1)
        assert est.n_probes == 3
        if n_out == 1:
            assert est.estimate == pytest.approx(gn.gradient_norm(m, X), rel=1e-12)
            assert est.standard_error == 0.0 and est.dof == math.inf
            assert est.interval() == (est.estimate, est.estimate)
        else:
            assert est.standard_error > 0 and 2 <= est.dof <= X.shape[0] * 2


@pytest.mark.parametrize("method", ["vjp", "jvp"])
def test_probe_is_deterministic_given_seed(method, device):
    m, X = _vector_mlp(device)
    a = gn.gradient_norm_probe(m, X, n_probes=3, seed=5, method=method, chunk_size=2)
    b = gn.gradient_norm_probe(m, X, n_probes=3, seed=5, method=method, chunk_size=7)
    c = gn.gradient_norm_probe(m, X, n_probes=3, seed=torch.Generator(device=device).manual_seed(5),
                               method=method)
    assert a.estimate == pytest.approx(b.estimate, rel=1e-12) == c.estimate
    assert a.standard_error == pytest.approx(b.standard_error, rel=1e-9)
    assert a.dof == pytest.approx(b.dof, rel=1e-9)
    assert gn.gradient_norm_probe(m, X, n_probes=3, seed=6, method=method).estimate != a.estimate


def test_welch_satterthwaite_dof():
    """Equal variances pool all N (K - 1) degrees of freedom; one dominating term leaves its
    own K - 1; all zero means nothing is random."""
    wsd = gn.welch_satterthwaite_dof
    assert wsd(torch.full((10,), 2.0), 3) == pytest.approx(30.0)
    assert wsd(torch.tensor([1.0, 0.0, 0.0]), 1) == pytest.approx(1.0)
    assert wsd(torch.tensor([1.0, 1e-9]), 1) == pytest.approx(1.0, rel=1e-6)
    assert wsd(torch.tensor([3.0, 1.0]), 1) == pytest.approx(16 / 10)
    assert wsd(torch.zeros(4), 1) == math.inf


# --------------------------------------------------------------------------- calibration

REPLICATES = 400
CONFIGS = [("vjp", "rademacher", 2), ("vjp", "gaussian", 2), ("jvp", "rademacher", 4)]


def _exact_variance(J: torch.Tensor, method: str, probe: str, k: int) -> float:
    """Exact variance of one estimate. vjp: (1/N^2) sum_i Var(q_i) / K with, per sample,
    K_i = J_i J_i^T and Var(q_i) = 2 (||K_i||_F^2 - sum_l (K_i)_ll^2) (Rademacher) or
    2 ||K_i||_F^2 (Gaussian). jvp: Var(e_k) / K with A = (1/N) sum_i J_i^T J_i and
    Var(e_k) = 2 (||A||_F^2 - sum diag(A)^2) (Rademacher)."""
    n = J.shape[0]
    if method == "vjp":
        K = J @ J.transpose(1, 2)
        diag = K.diagonal(dim1=1, dim2=2).pow(2).sum() if probe == "rademacher" else 0.0
        return float(2 * (K.pow(2).sum() - diag)) / n ** 2 / k
    A = torch.einsum("nld,nle->de", J, J) / n
    return float(2 * (A.pow(2).sum() - A.diagonal().pow(2).sum())) / k


@pytest.fixture(scope="module")
def replicates(device):
    """R = 400 independent estimates (seeds 0..399) per configuration on the vector MLP
    (N = 9, L = 3), with the exact value and exact variance."""
    m, X = _vector_mlp(device)
    J = jc.per_sample_jacobians(m, X)
    exact = gn.gradient_norm(m, X)
    out = {}
    for method, probe, k in CONFIGS:
        with one_thread():
            res = [gn.gradient_norm_probe(m, X, n_probes=k, seed=r, method=method, probe=probe)
                   for r in range(REPLICATES)]
        out[method, probe, k] = (np.array([r.estimate for r in res]),
                                 np.array([r.standard_error for r in res]),
                                 exact, _exact_variance(J, method, probe, k))
    return out


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(map(str, c)))
def test_probe_estimator_unbiased_and_se_calibrated(replicates, config):
    """Over R = 400 independent estimates:

    (1) unbiased: |mean(est) - G_exact| <= z sd(est)/sqrt(R);
    (2) SE^2 is an unbiased estimate of Var(est): w_r = (est_r - G_exact)^2 - SE_r^2 has mean
        exactly 0, |mean(w)| <= z sd(w)/sqrt(R);
    (3) the sample variance of the estimates equals the exact variance of the estimator
        (``_exact_variance``), within z standard errors of a sample variance
        (sqrt((m4 - s^4 (R-3)/(R-1))/R), m4 the sample fourth central moment).
    z = 4.5 throughout: two-sided normal false-failure rate 6.8e-6 per check, 2.1e-5 per
    configuration (CLT over R draws).
    """
    est, se, exact, var = replicates[config]
    z, R = 4.5, REPLICATES
    assert abs(est.mean() - exact) <= z * est.std(ddof=1) / math.sqrt(R), (est.mean(), exact)
    w = (est - exact) ** 2 - se ** 2
    assert abs(w.mean()) <= z * w.std(ddof=1) / math.sqrt(R), (w.mean(), w.std())
    s2 = est.var(ddof=1)
    m4 = np.mean((est - est.mean()) ** 4)
    se_s2 = math.sqrt(max(m4 - s2 ** 2 * (R - 3) / (R - 1), 0.0) / R)
    assert abs(s2 - var) <= z * se_s2, (s2, var, se_s2)


def test_vjp_probes_have_lower_variance_than_jvp_probes(replicates):
    """The reason vjp is the default: per probe, the vjp estimator's variance (probes
    independent across samples) is below the jvp one's (one probe shared by all samples),
    measured on the estimator's own replicates (their agreement with the exact variances is
    the previous test) and by the exact formulas."""
    est_v, _, _, var_v = replicates["vjp", "rademacher", 2]
    est_j, _, _, var_j = replicates["jvp", "rademacher", 4]
    assert 2 * var_v < 4 * var_j
    assert 2 * est_v.var(ddof=1) < 4 * est_j.var(ddof=1)


class _BatchNormMLP(nn.Module):
    """Linear -> BatchNorm1d (eval, non-trivial running statistics) -> tanh -> Linear."""

    def __init__(self, device):
        super().__init__()
        base = networks.tanh_mlp(3, 4, 3, seed=21, dtype=DT, device=device)
        self.fc1, self.fc2 = base.fc1, base.fc2
        self.bn = nn.BatchNorm1d(4).to(device=device, dtype=DT).eval()
        with torch.no_grad():
            self.bn.running_mean.copy_(torch.tensor([0.5, -1.0, 0.2, 2.0]))
            self.bn.running_var.copy_(torch.tensor([0.05, 3.0, 0.3, 0.1]))

    def forward(self, x):
        return self.fc2(torch.tanh(self.bn(self.fc1(x))))


@pytest.mark.parametrize("method, n_probes", [("vjp", 300), ("jvp", 300)])
def test_probes_see_the_batchnorm_buffers(device, method, n_probes):
    """With many probes the estimate is within 4.5 standard errors of the exact G (Student-t
    false-failure rate < 2e-5 at dof >= 299), and many standard errors away from the G of
    the same network with the default running statistics (mean 0, var 1): a probe path that
    dropped the buffers would fail."""
    m = _BatchNormMLP(device)
    X, _ = case_data((12, 3), 3, device, seed=4)
    exact = gn.gradient_norm(m, X)
    est = gn.gradient_norm_probe(m, X, n_probes=n_probes, seed=2, method=method)
    assert abs(est.estimate - exact) < 4.5 * est.standard_error
    m.bn.reset_running_stats()
    assert abs(est.estimate - gn.gradient_norm(m, X)) > 20 * est.standard_error


COVERAGE_REPLICATES = 1000


@pytest.fixture(scope="module")
def coverage_setting():
    """A vector-output network (tanh MLP, 4 -> 8 -> 4, N = 24 inputs) on the CPU."""
    m = networks.tanh_mlp(4, 8, 4, seed=0, dtype=DT)
    X = torch.randn(24, 4, generator=torch.Generator().manual_seed(1000), dtype=DT)
    return m, X, gn.gradient_norm(m, X)


@pytest.mark.parametrize("n_probes", [2, 4])
def test_probe_interval_covers_on_vector_outputs(coverage_setting, n_probes):
    """Seeded coverage of ``ProbeEstimate.interval`` (Student-t with the Welch-Satterthwaite
    degrees of freedom) for the default vjp/Rademacher estimator, L = 4 outputs.

    Over 1,000 seeds the number of 99 % intervals that miss the exact G is at most 21, and
    of 90 % intervals at most 130: under correct coverage these are Binomial(1000, 0.01) and
    (1000, 0.1) counts, and the bounds fail with probability 6.5e-4 and 9.7e-4 (1.6e-3 in
    all per probe count). Simulated with 20,000 draws, the true miss rates here are 0.6 % and
    8.5 % at 2 probes, 1.1 % and 9.8 % at 4 probes. Power: the normal-quantile interval
    (estimate +- 2.576 se) misses 2.8 % of the time at 2 probes, so it fails the bound with
    probability 0.9; that was the estimator's interval before the degrees of freedom.
    """
    m, X, exact = coverage_setting
    with one_thread():
        res = [gn.gradient_norm_probe(m, X, n_probes=n_probes, seed=r)
               for r in range(COVERAGE_REPLICATES)]
    for level, bound in ((0.99, 21), (0.90, 130)):
        misses = sum(not (lo <= exact <= hi) for lo, hi in (r.interval(level) for r in res))
        assert misses <= bound, (level, misses, bound)
    assert all(n_probes - 1 <= r.dof <= 24 * (n_probes - 1) for r in res)
    assert stats.binom.sf(21, COVERAGE_REPLICATES, 0.01) < 1e-3   # the stated rates
    assert stats.binom.sf(130, COVERAGE_REPLICATES, 0.10) < 1e-3


def test_probe_bad_inputs_raise_value_error_naming_parameter(device):
    m, X = _vector_mlp(device)
    with pytest.raises(ValueError, match="n_probes"):
        gn.gradient_norm_probe(m, X, n_probes=1)
    with pytest.raises(ValueError, match="method"):
        gn.gradient_norm_probe(m, X, method="hutch")
    with pytest.raises(ValueError, match="probe"):
        gn.gradient_norm_probe(m, X, probe="uniform")
    with pytest.raises(ValueError, match="seed"):
        gn.gradient_norm_probe(m, X, seed="abc")
    with pytest.raises(ValueError, match="chunk_size"):
        gn.gradient_norm(m, X, chunk_size=0)
    if device.type != "cpu":
        with pytest.raises(ValueError, match="create the generator on"):
            gn.gradient_norm_probe(m, X, seed=torch.Generator().manual_seed(0))
