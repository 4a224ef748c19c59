"""Gauge and fermion files through Python: the plaquettes other codes recorded, the
layout of the arrays checked in numpy, round trips, and bad input as exceptions."""

import shutil

import numpy as np
import pytest

import qdsl
from conftest import data


def numpy_plaquette(u):
    """P = ⟨Re tr U_μν⟩/3 over sites and the 6 planes, from a (T, Z, Y, X, 4, 3, 3) array:
    an implementation independent of qdsl's (numpy rolls; axis of direction μ = x, y, z, t
    is 3, 2, 1, 0)."""
    axis = {0: 3, 1: 2, 2: 1, 3: 0}
    total = 0.0
    for mu in range(4):
        for nu in range(mu + 1, 4):
            u_mu, u_nu = u[..., mu, :, :], u[..., nu, :, :]
            u_nu_xmu = np.roll(u_nu, -1, axis=axis[mu])
            u_mu_xnu = np.roll(u_mu, -1, axis=axis[nu])
            loop = u_mu @ u_nu_xmu @ np.conj(np.swapaxes(u_mu_xnu, -1, -2)) @ np.conj(
                np.swapaxes(u_nu, -1, -2)
            )
            total += np.trace(loop, axis1=-2, axis2=-1).real.mean()
    return total / 6 / 3


def test_milc_plaquettes_match_milcs_printout():
    # MILC printed ss = 1.794675, st = 1.774426 for the 4⁴ sample (both of its files).
    for rel in ["milc/lat.sample.l4444", "milc/lat.sample.l4444.ildg"]:
        ss, st = qdsl.read_gauge(data(rel)).plaquette_milc()
        assert abs(ss - 1.794675) < 1e-6 and abs(st - 1.774426) < 1e-6, (rel, ss, st)
    ss, st = qdsl.read_gauge(data("milc/lat.sample.l8")).plaquette_milc()
    assert abs(ss - 2.6203978710714737) < 1e-6
    assert abs(st - 2.621447375408018) < 1e-6


def test_tmlqcd_plaquette_and_checksum():
    u = qdsl.read_gauge(data("tmlqcd/conf.48"))
    assert abs(u.plaquette() - 0.63500557222887) < 1e-12
    assert u.format == "ILDG (LIME)" or "LIME" in u.format
    assert u.precision == "f64"
    assert any("SciDAC checksum suma = 0x1c231a18" in c for c in u.checks), u.checks
    assert "plaquette = 6.350056e-01" in dict(u.metadata)["xlf-info"]


def test_chroma_nersc_header_values_are_verified():
    u = qdsl.read_gauge(data("chroma/t_nersc.cfg"))
    assert abs(u.plaquette() - 0.0382422893) < 1e-8
    assert abs(u.link_trace() - 0.4630322094) < 1e-8
    assert dict(u.metadata)["CHECKSUM"] == "717938df"


def test_array_layout_gives_the_same_plaquette_in_numpy():
    # tmLQCD's 4³×8 configuration: the time axis comes first in the array.
    u = qdsl.read_gauge(data("tmlqcd/conf.48"))
    a = u.to_numpy()
    assert a.shape == (8, 4, 4, 4, 4, 3, 3) and a.dtype == np.complex128
    assert u.dims == [4, 4, 4, 8]
    assert abs(numpy_plaquette(a) - 0.63500557222887) < 1e-12
    # SU(3) in numpy: U†U = 1, det U = 1.
    eye = np.conj(np.swapaxes(a, -1, -2)) @ a - np.eye(3)
    assert np.abs(eye).max() < 1e-12
    assert np.abs(np.linalg.det(a) - 1).max() < 1e-12


def test_gauge_round_trips(tmp_path):
    u = qdsl.read_gauge(data("pyquda/weak_field.lime"))
    assert abs(u.plaquette() - 0.9948) < 1e-3
    a = u.to_numpy()
    assert np.array_equal(qdsl.GaugeField.from_numpy(a).to_numpy(), a)
    for fmt in ["scidac", "ildg", "nersc", "openqcd"]:
        path = tmp_path / f"u.{fmt}"
        qdsl.write_gauge(path, u, fmt)
        back = qdsl.read_gauge(path)
        assert np.array_equal(back.to_numpy(), a), fmt
    # MILC stores f32: equal to f32 rounding.
    qdsl.write_gauge(tmp_path / "u.milc", u, "milc")
    back = qdsl.read_gauge(tmp_path / "u.milc")
    assert back.format == "MILC v5" and back.precision == "f32"
    assert np.abs(back.to_numpy() - a).max() < 1e-6


def test_smeared_links_read_with_smeared_true():
    fat = qdsl.read_gauge(data("milc/fat.l8"), smeared=True)
    assert fat.dims == [8, 8, 8, 8]
    with pytest.raises(qdsl.FileFormatError, match="unitar"):
        qdsl.read_gauge(data("milc/fat.l8"))


def test_fermion_files_read_and_round_trip(tmp_path):
    f = qdsl.read_fermion(data("milc/ksvector.src.sample.l8"))
    assert f["kind"] == "colour-vector" and f["precision"] == "f32"
    eta = f["data"]
    assert eta.shape == (1, 8, 8, 8, 8, 3) and eta.dtype == np.complex128
    assert np.abs(eta).max() > 0
    for fmt in ["scidac", "qdsl"]:
        path = tmp_path / f"eta.{fmt}"
        qdsl.write_fermion(path, eta[0], fmt, precision="f64")
        back = qdsl.read_fermion(path)
        assert back["precision"] == "f64"
        assert np.array_equal(back["data"], eta), fmt
    # A propagator of 12 Dirac columns.
    prop = np.random.default_rng(1).normal(size=(12, 4, 2, 2, 2, 4, 3)) + 0j
    qdsl.write_fermion(tmp_path / "prop", prop, "scidac", precision="f64")
    back = qdsl.read_fermion(tmp_path / "prop")
    assert back["kind"] == "dirac-fermion"
    assert np.array_equal(back["data"], prop)


def test_truncated_gauge_file_names_the_file(tmp_path):
    original = data("milc/lat.sample.l8").read_bytes()
    path = tmp_path / "truncated.l8"
    path.write_bytes(original[: len(original) // 2])
    with pytest.raises(qdsl.FileFormatError) as info:
        qdsl.read_gauge(path)
    message = str(info.value)
    assert str(path) in message and "truncated" in message and "expected" in message
    assert info.value.path == str(path)
    assert isinstance(info.value, OSError) and isinstance(info.value, qdsl.QdslError)


def test_truncated_fermion_file_names_the_file(tmp_path):
    original = data("milc/ksvector.src.sample.l8").read_bytes()
    path = tmp_path / "truncated.src"
    path.write_bytes(original[:1000])
    with pytest.raises(qdsl.FileFormatError, match="truncated") as info:
        qdsl.read_fermion(path)
    assert str(path) in str(info.value)


def test_corrupted_and_missing_files_raise(tmp_path):
    path = tmp_path / "corrupt.cfg"
    shutil.copy(data("chroma/t_nersc.cfg"), path)
    raw = bytearray(path.read_bytes())
    raw[-100] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(qdsl.FileFormatError, match="expected") as info:
        qdsl.read_gauge(path)
    assert str(path) in str(info.value)
    (tmp_path / "junk").write_bytes(b"not a configuration at all")
    with pytest.raises(qdsl.FileFormatError, match="unrecognised"):
        qdsl.read_gauge(tmp_path / "junk")
    with pytest.raises(qdsl.FileFormatError, match="cannot"):
        qdsl.read_gauge(tmp_path / "does-not-exist")


def test_bad_arrays_are_value_errors(tmp_path):
    with pytest.raises(ValueError, match="shape"):
        qdsl.GaugeField.from_numpy(np.zeros((4, 4, 4, 4, 4, 3), complex))
    with pytest.raises(ValueError, match="lattice"):
        qdsl.GaugeField.from_numpy(np.zeros((3, 4, 4, 4, 4, 3, 3), complex))
    with pytest.raises(ValueError, match="shape"):
        qdsl.write_fermion(tmp_path / "x", np.zeros((4, 4, 4, 4, 4, 2), complex))
    with pytest.raises(ValueError, match="kind"):
        qdsl.write_fermion(tmp_path / "x", np.zeros((4, 4, 4, 4, 3), complex), kind="quark")
    with pytest.raises(ValueError, match="format"):
        qdsl.write_gauge(tmp_path / "x", qdsl.GaugeField.unit([2, 2, 2, 2]), "jpeg")
