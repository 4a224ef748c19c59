#!/usr/bin/env python3
"""Strong-scaling model of the distributed Wilson hop (one parity) — docs/multigpu.md.

A model, not a measurement: per-site time from the measured single-GPU hop
(BENCHMARKS.md, H100, 32^4), face bytes from the decomposition, and assumed link
bandwidths and latencies (edit the constants; the lead replaces them with the measured
face-exchange times of the 2- and 4-GPU runs).

    T_hop(P) = T_pack + max(T_interior, T_comm) + T_exterior   (overlap on)
    T_hop(P) = T_pack + T_comm + T_interior + T_exterior       (overlap off)

Usage: python3 bench/strong_scaling_model.py [--scenario NAME] [Lx Ly Lz Lt]

Scenarios (the constants each changes):
  measured   what the 2 x H100 run of BENCHMARKS.md 2026-11-27 (e) measured: the on-node
             exchange at 16.1 GB/s (3 MiB in 195.3 us, NCCL), the pack time per face
             site and the exterior's cost per site as measured (37.4 us for 32768 face
             sites; 47.3 us for 32768 exterior sites, 7.2x the interior's per site);
             faces are full spinors (what the code sends: 96 B/site f32, 52 B fixed16)
  nominal    NVLink 450 GB/s per GPU and direction on node, packing at HBM speed, the
             exterior at 1.5x the interior's per-site cost, full-spinor faces
  projected  nominal with spin-projected half-spinor faces (48 B/site f32, 28 B fixed16:
             what QUDA sends; what qdsl sends for Wilson-type hops)
  h200x4     what the 4 x H200 run of BENCHMARKS.md 2026-11-28 (d) measured (the GPU
             timeline of 32^4 per GPU over 1,1,1,4, NCCL, half-spinor faces): the hop
             93 us at 32^4, ~29 us of host launches before the interior, an exchange of
             ~100 us whatever its size up to a few MiB (a bare peer copy: 29 us; 64 MiB
             at 357 GB/s), ~25 us of unpacks and exterior launches after the delivery;
             off the node the same 100 us plus the bytes at 25 GB/s per GPU
  h200x4_boundary  the replayed application with the packs and the exterior slabs on the
             boundary stream beside the interior (BENCHMARKS.md 2026-11-29 (f), 4 x H200),
             fitted to 32^3x128 over 1,1,1,4 (101 us; 94-97 us on one GPU): the interior
             1.09x slower beside NCCL's kernels and the boundary's, the exterior's work
             added to it, ~3 us of packs before the exchange and ~3 us of exterior after
             the delivery, the exchange as in h200x2_graph
  h200x2_graph  the application replayed from a CUDA graph (BENCHMARKS.md 2026-11-29
             (e), 2 x H200, NCCL, half-spinor faces), fitted to two rows: 32^3x64 over
             1,1,1,2 (117 us; 93-97 us on one GPU) and 48^3x96 over 1,1,1,2 (450 us; 799
             us on one GPU): no host launches left, the interior 1.15x slower beside
             NCCL's kernels, ~3 us of packs and ~10 us of exterior slabs, an exchange of
             30 us (a bare peer copy's latency) plus the bytes at 357 GB/s on the node
             and at 25 GB/s per GPU off it
"""
import itertools
import sys

# Measured (BENCHMARKS.md, H100 80GB HBM3, one parity at 32^4 = 524288 output sites).
HOP_US_32 = {"f32 r12": 104.5, "fixed16 r12": 61.6}
OUT_SITES_32 = 32**4 // 2
# Face bytes per site (one parity): full spinor 24 reals (what qdsl sends); fixed16: 24
# int16 + one f32 norm. Projected half spinors (the "projected" scenario) halve them.
FACE_BYTES = {"f32 r12": 96, "fixed16 r12": 52}
PROJECTED_BYTES = {"f32 r12": 48, "fixed16 r12": 28}
# Assumptions (nominal): NVLink 4 per GPU per direction, node-to-node 4 x 25 GB/s per
# node of 4 GPUs (25 GB/s per GPU), latency per grouped exchange, HBM for packing.
NVLINK_GBS = 450.0
NET_GBS_PER_GPU = 25.0
LAT_ON_US, LAT_OFF_US = 8.0, 15.0
HBM_GBS = 3000.0
GPUS_PER_NODE = 4
DEPTH = 1
# The exterior kernels' cost per site relative to the interior's.
EXTERIOR_FACTOR = 1.5
# Measured pack time per face site (us); None: packing at HBM speed.
PACK_US_PER_SITE = None
# Fixed host costs per application (us) before the interior and after the delivery;
# None: the per-site models above.
FIXED_PACK_US = None
FIXED_EXTERIOR_US = None
# The interior's slowdown while the exchange's kernels share the GPU.
INTERIOR_SLOWDOWN = 1.0
# The packs and the exterior slabs on a stream of their own beside the interior (the
# boundary stream): the application takes the longer of the interior plus the exterior's
# work (they share the bandwidth) and the packs, the exchange and the last exterior
# slabs (FIXED_PACK_US, FIXED_EXTERIOR_US: what is left after the delivery).
EXTERIOR_BESIDE = False

# 2026-11-27 (e), 2 x H100, 32^4 over 1,1,1,2, Wilson hop f32: exchange 195.3 us for
# 3 MiB, pack 37.4 us and exterior 47.3 us for 2 x 16384 face sites.
MEASURED_ON_NODE_GBS = 3 * 2**20 / 195.3e-6 / 1e9
MEASURED_PACK_US_PER_SITE = 37.4 / 32768
MEASURED_EXTERIOR_FACTOR = 47.3 / 32768 / (104.5 / (32**4 // 2))


def use_scenario(name):
    """Sets the module's constants for the scenario `name` (see the docstring)."""
    global NVLINK_GBS, EXTERIOR_FACTOR, PACK_US_PER_SITE, FACE_BYTES, HOP_US_32
    global LAT_ON_US, LAT_OFF_US, FIXED_PACK_US, FIXED_EXTERIOR_US, INTERIOR_SLOWDOWN
    global EXTERIOR_BESIDE
    if name == "h200x4_boundary":
        HOP_US_32 = {"f32 r12": 93.0}
        FACE_BYTES = PROJECTED_BYTES
        NVLINK_GBS, LAT_ON_US, LAT_OFF_US = 357.0, 30.0, 30.0
        FIXED_PACK_US, FIXED_EXTERIOR_US = 3.0, 3.0
        INTERIOR_SLOWDOWN, EXTERIOR_FACTOR, EXTERIOR_BESIDE = 1.09, 1.0, True
    elif name == "h200x2_graph":
        HOP_US_32 = {"f32 r12": 93.0}
        FACE_BYTES = PROJECTED_BYTES
        NVLINK_GBS, LAT_ON_US, LAT_OFF_US = 357.0, 30.0, 30.0
        FIXED_PACK_US, FIXED_EXTERIOR_US = 3.0, 10.0
        INTERIOR_SLOWDOWN = 1.15
    elif name == "h200x4":
        HOP_US_32 = {"f32 r12": 93.0}
        FACE_BYTES = PROJECTED_BYTES
        # The measured ~100 us is mostly the software path, which a network exchange
        # pays too.
        NVLINK_GBS, LAT_ON_US, LAT_OFF_US = 357.0, 100.0, 100.0
        FIXED_PACK_US, FIXED_EXTERIOR_US = 29.0, 25.0
    elif name == "measured":
        NVLINK_GBS = MEASURED_ON_NODE_GBS
        EXTERIOR_FACTOR = MEASURED_EXTERIOR_FACTOR
        PACK_US_PER_SITE = MEASURED_PACK_US_PER_SITE
    elif name == "projected":
        FACE_BYTES = PROJECTED_BYTES
    elif name != "nominal":
        sys.exit(
            f"unknown scenario {name!r}: measured, nominal, projected, h200x4, h200x2_graph "
            "or h200x4_boundary"
        )


def grid_for(dims, p):
    """Cut by factors of 2, always halving the largest local extent (t first on ties)."""
    grid = [1, 1, 1, 1]
    while p > 1:
        local = [dims[m] // grid[m] for m in range(4)]
        order = sorted(range(4), key=lambda m: (-local[m], -m))
        for m in order:
            if local[m] % 4 == 0:  # keeps local extents even
                grid[m] *= 2
                break
        else:
            return None
        p //= 2
    return grid


def rank_of(c, g):
    return c[0] + g[0] * (c[1] + g[1] * (c[2] + g[2] * c[3]))


def model(dims, p, prec):
    g = grid_for(dims, p)
    if g is None:
        return None
    loc = [dims[m] // g[m] for m in range(4)]
    vloc = loc[0] * loc[1] * loc[2] * loc[3]
    t_site = HOP_US_32[prec] / OUT_SITES_32
    interior = 1
    for m in range(4):
        interior *= loc[m] - 2 * DEPTH if g[m] > 1 else loc[m]
    t_int = t_site * interior / 2
    t_ext = t_site * (vloc - interior) / 2 * EXTERIOR_FACTOR
    worst = 0.0
    total_face = 0
    for c in itertools.product(*(range(n) for n in g)):
        r = rank_of(c, g)
        on = off = 0
        for m in range(4):
            if g[m] == 1:
                continue
            face = vloc // loc[m] // 2 * DEPTH * FACE_BYTES[prec]
            for s in (-1, 1):
                n = list(c)
                n[m] = (n[m] + s) % g[m]
                if rank_of(n, g) // GPUS_PER_NODE == r // GPUS_PER_NODE:
                    on += face
                else:
                    off += face
        total_face = on + off
        t = max(on / NVLINK_GBS / 1e3 + (LAT_ON_US if on else 0),
                off / NET_GBS_PER_GPU / 1e3 + (LAT_OFF_US if off else 0))
        worst = max(worst, t)
    if total_face:
        t_int *= INTERIOR_SLOWDOWN
    if FIXED_PACK_US is not None:
        t_pack = FIXED_PACK_US if total_face else 0.0
    elif PACK_US_PER_SITE is None:
        t_pack = 2 * total_face / HBM_GBS / 1e3
    else:
        t_pack = total_face / FACE_BYTES[prec] * PACK_US_PER_SITE
    if EXTERIOR_BESIDE and total_face:
        t_on = max(t_int + t_ext, t_pack + worst + FIXED_EXTERIOR_US)
        t_off = t_pack + worst + t_int + t_ext
        return g, loc, total_face, worst, t_int, t_on, t_off
    if FIXED_EXTERIOR_US is not None and total_face:
        t_ext = FIXED_EXTERIOR_US
    t_on = t_pack + max(t_int, worst) + t_ext
    t_off = t_pack + worst + t_int + t_ext
    return g, loc, total_face, worst, t_int, t_on, t_off


def main():
    args = sys.argv[1:]
    scenario = "nominal"
    if args[:1] == ["--scenario"]:
        scenario, args = args[1], args[2:]
    use_scenario(scenario)
    dims = [int(x) for x in args[:4]] if len(args) >= 4 else [64, 64, 64, 128]
    print(f"scenario {scenario}")
    for prec in HOP_US_32:
        t1 = HOP_US_32[prec] / OUT_SITES_32 * (dims[0] * dims[1] * dims[2] * dims[3]) / 2
        print(f"\n{prec}, {dims}: one GPU {t1:.0f} us")
        print("| GPUs | grid | local | face KB/GPU | exchange us | interior us | hop us (overlap) | eff. | hop us (no overlap) | eff. |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for p in [1, 2, 4, 8, 16, 32, 64, 128, 256]:
            r = model(dims, p, prec)
            if r is None:
                continue
            g, loc, face, comm, t_int, t_on, t_off = r
            print(f"| {p} | {','.join(map(str, g))} | {'x'.join(map(str, loc))} | {face / 1e3:.0f} | "
                  f"{comm:.1f} | {t_int:.1f} | {t_on:.1f} | {t1 / p / t_on:.0%} | {t_off:.1f} | {t1 / p / t_off:.0%} |")


if __name__ == "__main__":
    main()
