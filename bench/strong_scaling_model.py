#!/usr/bin/env python3
"""Strong-scaling model of the distributed Wilson hop (one parity) — docs/multigpu.md.

A model, not a measurement: per-site time from the measured single-GPU hop
(BENCHMARKS.md, H100, 32^4), face bytes from the decomposition, and assumed link
bandwidths and latencies (edit the constants; the lead replaces them with the measured
face-exchange times of the 2- and 4-GPU runs).

    T_hop(P) = T_pack + max(T_interior, T_comm) + T_exterior   (overlap on)
    T_hop(P) = T_pack + T_comm + T_interior + T_exterior       (overlap off)

Usage: python3 bench/strong_scaling_model.py [Lx Ly Lz Lt]
"""
import itertools
import sys

# Measured (BENCHMARKS.md, H100 80GB HBM3, one parity at 32^4 = 524288 output sites).
HOP_US_32 = {"f32 r12": 104.5, "fixed16 r12": 61.6}
OUT_SITES_32 = 32**4 // 2
# Face bytes per site (one parity): full spinor 24 reals; projected half spinor 12 reals;
# fixed16 half spinor: 12 int16 + one f32 norm.
FACE_BYTES = {"f32 r12": 48, "fixed16 r12": 28}
# Assumptions (nominal): NVLink 4 per GPU per direction, node-to-node 4 x 25 GB/s per
# node of 4 GPUs (25 GB/s per GPU), latency per grouped exchange, HBM for packing.
NVLINK_GBS = 450.0
NET_GBS_PER_GPU = 25.0
LAT_ON_US, LAT_OFF_US = 8.0, 15.0
HBM_GBS = 3000.0
GPUS_PER_NODE = 4
DEPTH = 1


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
    t_ext = t_site * (vloc - interior) / 2 * 1.5  # exterior kernels run less efficiently
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
    t_pack = 2 * total_face / HBM_GBS / 1e3
    t_on = t_pack + max(t_int, worst) + t_ext
    t_off = t_pack + worst + t_int + t_ext
    return g, loc, total_face, worst, t_int, t_on, t_off


def main():
    dims = [int(x) for x in sys.argv[1:5]] if len(sys.argv) >= 5 else [64, 64, 64, 128]
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
