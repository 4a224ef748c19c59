"""Shared helpers of the qdsl Python tests: the repository's real data files (the same
files, with the same recorded values, as the Rust tests in tests/)."""

import pathlib

import numpy as np
import pytest

DATA = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data"


def data(rel):
    """The path of a file under tests/data (provenance in tests/data/README.md)."""
    path = DATA / rel
    if not path.exists():
        pytest.fail(f"missing test data file {path}")
    return path


def random_field(shape, seed):
    """A complex Gaussian array of `shape`."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=shape) + 1j * rng.normal(size=shape)


def parities(dims_tzyx):
    """Boolean masks (even, odd) of the sites of a (T, Z, Y, X) lattice."""
    t, z, y, x = np.indices(dims_tzyx)
    even = (t + z + y + x) % 2 == 0
    return even, ~even
