"""Fixtures shared by the theory tests."""
import pytest

from helpers import TORCH_CASES, brute_force, case_data


@pytest.fixture(scope="module", params=list(TORCH_CASES))
def case(request, device):
    """A small torch model with data and its brute-force per-sample Jacobians J and gradients G."""
    make, shape, n_out = TORCH_CASES[request.param]
    model = make(device)
    X, y = case_data(shape, n_out, device)
    J, G = brute_force(model, X, y)
    return model, X, y, J, G
