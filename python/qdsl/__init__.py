"""qdsl from Python: lattice QCD on numpy arrays.

Gauge configurations (``read_gauge``, ``write_gauge``, ``GaugeField``) in MILC, NERSC,
ILDG/SciDAC and openQCD formats; fermion files (``read_fermion``, ``write_fermion``):
colour vectors, Dirac fermions and propagators in SciDAC/QIO and qdsl's format; the
operators (``wilson``, ``clover``, ``twisted_mass``, ``staggered``, ``asqtad``, ``hisq``)
with ``apply``, ``apply_even_odd``, ``prepare_source`` and ``reconstruct``; ``solve``
(CG, CGNR, CGNE, BiCGStab; f64 or f32 mixed precision) with its residual history;
``smear`` (asqtad, HISQ links); ``pion_correlator``.

Arrays are complex128 in lexicographic order, x fastest: a gauge field has shape
(T, Z, Y, X, 4, 3, 3), a Dirac fermion (T, Z, Y, X, 4, 3), a staggered colour vector
(T, Z, Y, X, 3). Conventions: DeGrand–Rossi γ matrices with γ5 = diag(1, 1, −1, −1)
(MILC's sign); the plaquette is P = ⟨Re tr U_□⟩/3 (1 on unit links).

Errors are exceptions: ``FileFormatError`` (an ``OSError`` naming the file, the record,
what was expected and what was found), ``SolverNotConverged`` (``.result`` holds the
solution and the history), ``DeviceUnavailable``, all ``QdslError``; bad arguments are
``ValueError``.
"""

from ._native import (
    DeviceUnavailable,
    FileFormatError,
    GaugeField,
    Operator,
    QdslError,
    SolveResult,
    SolverNotConverged,
    asqtad,
    clover,
    gpu_available,
    hisq,
    pion_correlator,
    read_fermion,
    read_gauge,
    smear,
    solve,
    staggered,
    twisted_mass,
    wilson,
    write_fermion,
    write_gauge,
)

__all__ = [
    "DeviceUnavailable",
    "FileFormatError",
    "GaugeField",
    "Operator",
    "QdslError",
    "SolveResult",
    "SolverNotConverged",
    "asqtad",
    "clover",
    "gpu_available",
    "hisq",
    "pion_correlator",
    "read_fermion",
    "read_gauge",
    "smear",
    "solve",
    "staggered",
    "twisted_mass",
    "wilson",
    "write_fermion",
    "write_gauge",
]
