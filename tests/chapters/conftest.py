"""Fixtures shared by the chapter tests: the small least-squares and MLP settings of Props 1
and 3, on every device."""
import pytest

from dsmlib.models import settings
from helpers import on_device


@pytest.fixture(scope="module")
def ls(device):
    return on_device(settings.least_squares_setting(n=32, seed=3), device)


@pytest.fixture(scope="module")
def mlp(device):
    return on_device(settings.mlp_setting(n=24, in_dim=3, hidden=4, seed=5), device)
