"""Smearing and correlators through Python: MILC's asqtad links reproduced, the
propagator checked against the operator in numpy, the correlator contracted in numpy."""

import numpy as np
import pytest

import qdsl
from conftest import data


def test_asqtad_smearing_reproduces_milcs_links():
    thin = qdsl.read_gauge(data("milc/lat.sample.l8"))
    links = qdsl.smear(thin, "asqtad", u0=0.502)
    assert links["u0"] == 0.502
    for name in ["fat", "long"]:
        milc = qdsl.read_gauge(data(f"milc/{name}.l8"), smeared=True).to_numpy()
        ours = links[name].to_numpy()
        # MILC computed and stored f32: a few ulp of the largest element.
        assert np.abs(ours - milc).max() <= 4e-6 * np.abs(milc).max(), name


def test_hisq_links_on_unit_links_are_tree_level():
    # Unit links: X = 9/8 + ε/8 and L = −(1 + ε)/24 times the phases (±1).
    eps = -0.1
    links = qdsl.smear(qdsl.GaugeField.unit([4, 4, 4, 4]), "hisq", epsilon_naik=eps)
    fat, long = links["fat"].to_numpy(), links["long"].to_numpy()
    assert np.allclose(np.abs(fat[..., 0, 0]), 9 / 8 + eps / 8, atol=1e-13)
    assert np.allclose(np.abs(long[..., 0, 0]), (1 + eps) / 24, atol=1e-13)
    assert np.abs(fat[..., 0, 1]).max() < 1e-13


def test_bad_smearing_arguments():
    u = qdsl.GaugeField.unit([2, 2, 2, 2])
    with pytest.raises(ValueError, match="stout"):
        qdsl.smear(u, "stout")
    with pytest.raises(ValueError, match="u0"):
        qdsl.smear(u, "hisq", u0=0.9)


@pytest.mark.parametrize("action,params,spins", [
    ("wilson", {"kappa": 0.12}, 4),
    ("asqtad", {"mass": 0.1, "u0": 0.8677}, 1),
])
def test_pion_correlator_from_a_checked_propagator(action, params, spins):
    gauge = qdsl.read_gauge(data("tmlqcd/conf.48"))
    origin = (1, 2, 3, 4)
    c = qdsl.pion_correlator(gauge, action, origin=origin, tol=1e-12, **params)
    prop = c["propagator"]
    op = getattr(qdsl, action)(gauge, **params)
    assert prop.shape == (3 * spins,) + tuple(op.field_shape)
    # Each column solves M ψ = δ_{x x0} δ_σ δ_b (checked with the operator in numpy).
    x, y, z, t = origin
    for col, psi in enumerate(prop):
        delta = np.zeros(op.field_shape, complex)
        if spins == 1:
            delta[t, z, y, x, col] = 1
        else:
            delta[t, z, y, x, col // 3, col % 3] = 1
        assert np.linalg.norm(op.apply(psi) - delta) < 1e-10
    # C(t) = Σ_{x on time slice t0 + t} Σ |S|², contracted in numpy.
    density = (np.abs(prop) ** 2).sum(axis=tuple(i for i in range(prop.ndim) if i != 1))
    expected = np.roll(density, -t)
    assert np.allclose(c["correlator"], expected, rtol=1e-12)
    assert np.all(c["correlator"] > 0)
    meff = c["effective_mass"]
    assert np.allclose(meff, np.log(expected[:-1] / expected[1:]), rtol=1e-12)
    # MILC's point-source print-out (meson factor 1/(vol3)^2, one occurrence) divides
    # the bare sum by (Lx Ly Lz)².
    milc = qdsl.pion_correlator(gauge, action, origin=origin, tol=1e-12,
                                normalisation="milc", **params)
    assert np.allclose(milc["correlator"] * 64**2, c["correlator"], rtol=1e-12)


@pytest.mark.skipif(not qdsl.gpu_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("kind", ["asqtad", "hisq"])
def test_gpu_smearing_agrees_with_the_cpu(kind):
    thin = qdsl.read_gauge(data("milc/lat.sample.l8"))
    cpu = qdsl.smear(thin, kind)
    gpu = qdsl.smear(thin, kind, device="gpu")
    for name in ["fat", "long"]:
        a, b = cpu[name].to_numpy(), gpu[name].to_numpy()
        assert np.abs(a - b).max() <= 1e-12 * np.abs(a).max(), name


@pytest.mark.skipif(qdsl.gpu_available(), reason="a GPU is present")
def test_gpu_smearing_without_a_gpu_is_a_clear_error():
    with pytest.raises(qdsl.DeviceUnavailable, match="GPU"):
        qdsl.smear(qdsl.GaugeField.unit([4, 4, 4, 4]), "asqtad", device="gpu")


def test_open_boundary_clover_correlator():
    """Open boundaries (openQCD's, c_F = 1.3) on openQCD's own open-boundary file: the
    clover propagator vanishes on x0 = 0 and x0 = L_t − 1, C(t) is zero there and positive
    elsewhere; a source on a boundary slice is refused naming it."""
    gauge = qdsl.read_gauge(data("openqcd/gauge.bc_0.bin"))
    origin = (0, 0, 0, 1)
    c = qdsl.pion_correlator(gauge, "clover", kappa=0.12, csw=1.978, boundary="open",
                             cf=1.3, origin=origin, tol=1e-11)
    prop = c["propagator"]
    lt = prop.shape[1]
    assert np.abs(prop[:, 0]).max() == 0 and np.abs(prop[:, lt - 1]).max() == 0
    corr = c["correlator"]
    boundary = [(0 - origin[3]) % lt, (lt - 1 - origin[3]) % lt]
    assert all(corr[t] == 0 for t in boundary)
    assert all(corr[t] > 0 for t in range(lt) if t not in boundary)
    assert "open time boundaries, c_F = 1.3" in c["parameters"]
    with pytest.raises(qdsl.QdslError, match="quark fields vanish"):
        qdsl.pion_correlator(gauge, "wilson", kappa=0.12, boundary="open", origin=(0, 0, 0, 0))
