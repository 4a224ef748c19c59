"""Operators and solvers through Python, checked in numpy: adjointness, γ5-hermiticity,
the even-odd operator against one built from the full operator, analytic free-field
values, solve residuals recomputed in numpy, and MILC's asqtad answer reproduced."""

import numpy as np
import pytest

import qdsl
from conftest import data, parities, random_field

GAMMA5 = np.array([1, 1, -1, -1])  # DeGrand–Rossi γ5 = diag(1, 1, −1, −1)


@pytest.fixture(scope="module")
def tmlqcd():
    return qdsl.read_gauge(data("tmlqcd/conf.48"))


@pytest.fixture(scope="module")
def milc8():
    return qdsl.read_gauge(data("milc/lat.sample.l8"))


def dot(a, b):
    return np.vdot(a, b)


def test_wilson_is_gamma5_hermitian(tmlqcd):
    op = qdsl.wilson(tmlqcd, 0.12)
    x, y = random_field(op.field_shape, 1), random_field(op.field_shape, 2)
    mx, mdy = op.apply(x), op.apply(y, dagger=True)
    # ⟨y, M x⟩ = ⟨M† y, x⟩.
    assert abs(dot(y, mx) - dot(mdy, x)) < 1e-12 * abs(dot(y, mx))
    # M† = γ5 M γ5.
    g5 = GAMMA5[:, None]
    assert np.abs(mdy - g5 * op.apply(g5 * y)).max() < 1e-12


def test_wilson_on_unit_links_is_one_minus_eight_kappa_on_constants():
    # Unit links, periodic time: H ψ = 8 ψ for a constant ψ, so M ψ = (1 − 8κ) ψ.
    u = qdsl.GaugeField.unit([4, 4, 4, 4])
    op = qdsl.wilson(u, 0.1, boundary="periodic")
    psi = np.ones(op.field_shape, complex) * (0.3 - 0.7j)
    assert np.abs(op.apply(psi) - (1 - 0.8) * psi).max() < 1e-14
    # Antiperiodic time: the t hops that wrap pick up −1. For ψ equal in all four spins,
    # γ_t ψ = ψ (DeGrand–Rossi γ_t swaps spins 0,1 with 2,3), so the hop (1 − γ_t) ψ(x+t̂)
    # vanishes and (1 + γ_t) ψ(x−t̂) = ±2ψ: H ψ = 4ψ on t = 0 (its backward neighbour
    # wraps), 8ψ elsewhere.
    op = qdsl.wilson(u, 0.1)
    out = op.apply(psi)
    assert np.abs(out[1:] - (1 - 0.8) * psi[1:]).max() < 1e-14
    assert np.abs(out[0] - (1 - 0.4) * psi[0]).max() < 1e-14


def test_wilson_even_odd_operator_from_the_full_one(tmlqcd):
    kappa = 0.12
    op = qdsl.wilson(tmlqcd, kappa)
    even, odd = parities(op.field_shape[:4])
    x = random_field(op.field_shape, 3)
    x[odd] = 0
    # H = (1 − M)/κ; M̂ x = x − κ² (H (H x)_odd)_even.
    hop = lambda v: (v - op.apply(v)) / kappa
    hx = hop(x)
    hx[even] = 0
    expected = x - kappa**2 * hop(hx)
    expected[odd] = 0
    assert np.abs(op.apply_even_odd(x) - expected).max() < 1e-12
    with pytest.raises(ValueError, match="odd sites"):
        op.apply_even_odd(random_field(op.field_shape, 4))


def test_clover_at_csw_zero_is_scaled_wilson(tmlqcd):
    kappa = 0.12
    m = 1 / (2 * kappa) - 4
    x = random_field(qdsl.wilson(tmlqcd, kappa).field_shape, 5)
    wilson = qdsl.wilson(tmlqcd, kappa).apply(x)
    clover = qdsl.clover(tmlqcd, kappa, 0.0).apply(x)
    assert np.abs(clover - (m + 4) * wilson).max() < 1e-12
    # c_sw ≠ 0 and twisted mass: γ5-hermiticity becomes M(μ)† = γ5 M(−μ) γ5.
    g5 = GAMMA5[:, None]
    plus = qdsl.twisted_mass(tmlqcd, kappa, 0.05, csw=1.2)
    minus = qdsl.twisted_mass(tmlqcd, kappa, -0.05, csw=1.2)
    assert np.abs(plus.apply(x, dagger=True) - g5 * minus.apply(g5 * x)).max() < 1e-12


@pytest.mark.parametrize("make", ["staggered", "asqtad", "hisq"])
def test_staggered_family_is_mass_plus_antihermitian(milc8, make):
    m = 0.1
    op = getattr(qdsl, make)(milc8, m)
    x, y = random_field(op.field_shape, 6), random_field(op.field_shape, 7)
    mx = op.apply(x)
    # M = 2m + D with D† = −D: M + M† = 4m and ⟨y, M x⟩ = ⟨M† y, x⟩.
    assert np.abs(mx + op.apply(x, dagger=True) - 4 * m * x).max() < 1e-12
    assert abs(dot(y, mx) - dot(op.apply(y, dagger=True), x)) < 1e-12 * abs(dot(y, mx))
    # M̂ = 4m² − D_eo D_oe = (M† M)_ee.
    even, odd = parities(op.field_shape[:4])
    x[odd] = 0
    mdm = op.apply(op.apply(x), dagger=True)
    mdm[odd] = 0
    assert np.abs(op.apply_even_odd(x) - mdm).max() < 1e-11


def test_wilson_solve_residual_checked_in_numpy(tmlqcd):
    op = qdsl.wilson(tmlqcd, 0.12)
    b = random_field(op.field_shape, 8)
    result = qdsl.solve(op, b, solver="bicgstab", tol=1e-10)
    assert result.converged and result.convergence == "converged"
    x = result.solution
    assert np.linalg.norm(b - op.apply(x)) / np.linalg.norm(b) < 1e-9
    # The history: iterated residuals falling to the tolerance, true residuals recorded.
    assert result.iterations > 0 and len(result.history) >= 2
    assert result.history_residuals[-1] <= 1e-10
    assert {kind for _, _, kind in result.history} >= {"iterated", "true"}
    assert result.true_residual <= 1e-10


def test_even_odd_solve_and_mixed_precision(tmlqcd):
    op = qdsl.wilson(tmlqcd, 0.12)
    even, odd = parities(op.field_shape[:4])
    b = random_field(op.field_shape, 9)
    b[odd] = 0
    for precision in ["f64", "f32"]:
        result = qdsl.solve(op, b, tol=1e-10, even_odd=True, precision=precision)
        r = b - op.apply_even_odd(result.solution)
        assert np.linalg.norm(r) / np.linalg.norm(b) < 1e-9, precision
    assert result.reliable_updates > 0


def test_failed_solve_raises_with_its_history(tmlqcd):
    op = qdsl.wilson(tmlqcd, 0.12)
    b = random_field(op.field_shape, 10)
    with pytest.raises(qdsl.SolverNotConverged, match="did not converge") as info:
        qdsl.solve(op, b, solver="cgnr", tol=1e-12, maxiter=3)
    result = info.value.result
    assert not result.converged and result.iterations == 3
    assert len(result.history) > 0 and result.solution.shape == tuple(op.field_shape)


def test_asqtad_solve_reproduces_milcs_answer(milc8):
    # MILC's check_ks_invert: M⁻¹ η for the asqtad M = 2m + D, m = 0.1, u0 = 0.502.
    eta = qdsl.read_fermion(data("milc/ksvector.src.sample.l8"))["data"][0]
    answer = qdsl.read_fermion(data("milc/ksvector.ans.Minv.sample.l8"))["data"][0]
    op = qdsl.asqtad(milc8, 0.1, u0=0.502)
    result = qdsl.solve(op, eta, solver="cg", tol=1e-12)
    deviation = np.abs(result.solution - answer).max() / np.abs(answer).max()
    # MILC stored its answer in f32.
    assert deviation < 1e-6, deviation
    # The tolerance is on the even-odd system; the full residual follows it.
    assert np.linalg.norm(eta - op.apply(result.solution)) / np.linalg.norm(eta) < 1e-9


def test_bad_parameters_and_fields_are_value_errors(tmlqcd):
    with pytest.raises(ValueError, match="kappa"):
        qdsl.wilson(tmlqcd, -1.0)
    with pytest.raises(ValueError, match="boundary"):
        qdsl.wilson(tmlqcd, 0.1, boundary="open")
    with pytest.raises(ValueError, match="device"):
        qdsl.wilson(tmlqcd, 0.1, device="tpu")
    op = qdsl.wilson(tmlqcd, 0.1)
    with pytest.raises(ValueError, match="spin"):
        op.apply(np.zeros((8, 4, 4, 4, 3), complex))
    with pytest.raises(ValueError, match="lattice"):
        op.apply(np.zeros((4, 4, 4, 4, 4, 3), complex))
    with pytest.raises(ValueError, match="solver"):
        qdsl.solve(op, np.zeros(op.field_shape, complex), solver="gmres")


@pytest.mark.skipif(qdsl.gpu_available(), reason="a GPU is present")
def test_gpu_without_a_gpu_is_a_clear_error(tmlqcd):
    with pytest.raises(qdsl.DeviceUnavailable, match="GPU"):
        qdsl.wilson(tmlqcd, 0.12, device="gpu")


@pytest.mark.skipif(not qdsl.gpu_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("make,args", [("wilson", (0.12,)), ("clover", (0.12, 1.0)),
                                       ("asqtad", (0.1,)), ("hisq", (0.1,))])
def test_gpu_operator_and_solve_agree_with_the_cpu(tmlqcd, make, args):
    cpu = getattr(qdsl, make)(tmlqcd, *args)
    gpu = getattr(qdsl, make)(tmlqcd, *args, device="gpu")
    even, odd = parities(cpu.field_shape[:4])
    x = random_field(cpu.field_shape, 11)
    x[odd] = 0
    ref = cpu.apply_even_odd(x)
    assert np.abs(gpu.apply_even_odd(x) - ref).max() < 1e-12 * np.abs(ref).max()
    # The full M (and M†) runs on the GPU too.
    y = random_field(cpu.field_shape, 13)
    for dagger in [False, True]:
        full = cpu.apply(y, dagger=dagger)
        assert np.abs(gpu.apply(y, dagger=dagger) - full).max() < 1e-12 * np.abs(full).max()
    b = random_field(cpu.field_shape, 12)
    for precision in ["f64", "f32"]:
        result = qdsl.solve(gpu, b, tol=1e-10, precision=precision)
        assert result.device == "gpu"
        r = b - cpu.apply(result.solution)
        assert np.linalg.norm(r) / np.linalg.norm(b) < 1e-9


def test_checkerboard_view_is_a_read_only_view_without_a_copy(tmlqcd):
    view = tmlqcd.checkerboard_view()
    coords = tmlqcd.checkerboard_coordinates()
    lx, ly, lz, lt = tmlqcd.dims
    assert view.shape == (lx * ly * lz * lt, 4, 3, 3) and coords.shape == (view.shape[0], 4)
    # Even sites first; row r holds the links of the site coords[r].
    parity = coords.sum(axis=1) % 2
    assert np.all(parity[: len(parity) // 2] == 0) and np.all(parity[len(parity) // 2:] == 1)
    lex = tmlqcd.to_numpy()
    x, y, z, t = coords.T
    assert np.array_equal(view, lex[t, z, y, x])
    # The same memory every time (no copy), and numpy refuses to write it.
    assert np.shares_memory(view, tmlqcd.checkerboard_view())
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0, 0, 0, 0] = 0
