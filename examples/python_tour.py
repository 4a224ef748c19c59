# %% [markdown]
# # A tour of qdsl from Python
#
# Install the package once (`pip install ./python` from the repository root), then run
# this file as a script (`python examples/python_tour.py`) or cell by cell (`# %%`) in
# an editor that understands cells. Everything runs on the CPU here; pass
# `device="gpu"` to an operator to run its even-odd operator and solves on a GPU.

# %%
import pathlib

import numpy as np

import qdsl

DATA = pathlib.Path(__file__).resolve().parents[1] / "tests" / "data"

# %% [markdown]
# ## A real configuration
# MILC's 8⁴ sample (SciDAC LIME, f32). The format is recognised from the content; the
# checksum and the links' unitarity are verified on reading.

# %%
gauge = qdsl.read_gauge(DATA / "milc" / "lat.sample.l8")
print(gauge, "stored as", gauge.precision)
print("checks:", *gauge.checks, sep="\n  ")
ss, st = gauge.plaquette_milc()
print(f"plaquette P = {gauge.plaquette():.12f}  (MILC's ss = {ss:.10f}, st = {st:.10f})")

# %% [markdown]
# The links as a numpy array, shape (T, Z, Y, X, μ, 3, 3): the plaquette again, in numpy.

# %%
u = gauge.to_numpy()
u_x, u_y = u[..., 0, :, :], u[..., 1, :, :]
dag = lambda m: np.conj(np.swapaxes(m, -1, -2))
loop = u_x @ np.roll(u_y, -1, axis=3) @ dag(np.roll(u_x, -1, axis=2)) @ dag(u_y)
print(f"xy-plane plaquette from numpy: {np.trace(loop, axis1=-2, axis2=-1).real.mean() / 3:.12f}")

# %% [markdown]
# ## Smearing
# Asqtad fat and long links with MILC's tadpole factor u0 = P^{1/4}.

# %%
links = qdsl.smear(gauge, "asqtad")
print(f"u0 = {links['u0']:.6f}; fat-link trace {links['fat'].link_trace():.6f}")

# %% [markdown]
# ## A solve
# The asqtad operator M = 2m + D, m = 0.1, and MILC's own source: CG on the even-odd
# system, the residual recomputed here with the full operator.

# %%
op = qdsl.asqtad(gauge, 0.1, u0=0.502)
eta = qdsl.read_fermion(DATA / "milc" / "ksvector.src.sample.l8")["data"][0]
result = qdsl.solve(op, eta, solver="cg", tol=1e-12)
print(result)
residual = np.linalg.norm(eta - op.apply(result.solution)) / np.linalg.norm(eta)
print(f"‖η − M ψ‖/‖η‖ = {residual:.2e}")
answer = qdsl.read_fermion(DATA / "milc" / "ksvector.ans.Minv.sample.l8")["data"][0]
print(f"max |ψ − ψ_MILC| / max |ψ_MILC| = "
      f"{np.abs(result.solution - answer).max() / np.abs(answer).max():.2e}")
print("residual history (iteration, ‖r‖/‖b‖):")
for it, r, kind in result.history[:: max(1, len(result.history) // 8)]:
    print(f"  {it:4d}  {r:.3e}  {kind}")

# %% [markdown]
# A mixed-precision Wilson solve (f32 iterations, f64 reliable updates).

# %%
wilson = qdsl.wilson(gauge, 0.12)
b = np.random.default_rng(1).normal(size=wilson.field_shape) + 0j
mixed = qdsl.solve(wilson, b, precision="f32", tol=1e-10)
print(mixed, f"with {mixed.reliable_updates} reliable updates")

# %% [markdown]
# ## A pion correlator
# The point-source propagator at the origin and C(t) = Σ_x Σ |S(x, 0)|², with the
# effective mass ln C(t)/C(t+1).

# %%
pion = qdsl.pion_correlator(gauge, "wilson", kappa=0.12, tol=1e-10)
print(pion["parameters"], f"({pion['solves']} solves, {pion['iterations']} iterations)")
print(" t   C(t)            m_eff(t)")
for t, (c, m) in enumerate(zip(pion["correlator"], np.append(pion["effective_mass"], np.nan))):
    print(f"{t:2d}   {c:.8e}  {m:.5f}")

# %% [markdown]
# ## Files out
# The solution as a SciDAC file, read back.

# %%
import tempfile

with tempfile.TemporaryDirectory() as tmp:
    path = pathlib.Path(tmp) / "psi.lime"
    qdsl.write_fermion(path, result.solution, "scidac", precision="f64")
    back = qdsl.read_fermion(path)
    print(back["kind"], back["format"], "identical:", np.array_equal(back["data"][0], result.solution))
