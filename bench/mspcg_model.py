#!/usr/bin/env python3
"""A paper model of MSPCG's time to solution against plain CG on many GPUs.

The speed-up of MSPCG over CG on P GPUs is

    S = (N_CG / N_MS) * t_CG / t_MS,
    t_CG = t_op + t_halo + 2 t_red,
    t_MS = t_op + t_halo + 3 t_red + t_prec,

per outer iteration: t_op the local M̂†M̂ and vector work, t_halo the faces of its four
hops, t_red a global sum, t_prec the preconditioner (k inner CG iterations on the GPU's
block padded by 2 in every cut direction, no communication). Inputs:

* N_CG / N_MS: measured on one H200 (docs/mspcg.md, BENCHMARKS.md 2026-11-29 (b)):
  24^4 beta 6.0, Ls 12, m_f 0.001, 6 inner iterations, blocks 1,1,2,2 (24x24x12x12):
  6362 / 2083 = 3.05.
* Per-site costs measured on one H200 in the same runs: the outer iteration (M̂†M̂ and
  vector work, f32 outer with f64 reliable updates) 0.655 ms per 16^4 x 12 iteration
  (CGNR f32, 1925 iterations in 1.261 s); the inner iteration 3.9 ms per 24x24x16x16x4
  stacked sites (MSPCG 1,1,2,2: 60.87 s / 2083 outer = 29.2 ms, minus the f64 outer's
  5.8 ms, over 6 inner iterations) -- i.e. per site, with a launch floor per kernel.
* GPUs of another generation: the per-site costs scaled by the ratio of memory bandwidths
  (the operators are bandwidth bound): V100 (0.9 TB/s) against H200 (4.8 TB/s).
* The network (assumed, "Summit class"): 23 GB/s injection per node (dual-rail EDR), 6
  GPUs per node sharing it (worst case: every face leaves the node), 2 us per message,
  global sums 5 us x log2(P).
* Faces: each hop sends 2 faces per cut direction of the single-parity spin-projected
  half spinors: 12 reals x Ls x (V_loc / L_mu) / 2 sites, in 2-byte (fixed16) reals as the
  paper's outer sloppy iteration; four hops per outer iteration.

Prints the model's table for a 64^3 x 128 x 12 lattice on 256 to 2048 GPUs (43 to 341
Summit nodes of 6 GPUs; the paper's 64-256 nodes are 384-1536 GPUs), the lattice split
over a power-of-two grid of ranks.
"""

import math

LS = 12
GLOBAL = (64, 64, 64, 128)
ITERATION_RATIO = 6362 / 2083  # N_CG / N_MS measured (24^4, 6 inner, 1,1,2,2)
INNER = 6

# Measured on one H200 (seconds per 4D site of the 5D field, Ls 12).
OUTER_PER_SITE = 0.655e-3 / 16**4  # f32 outer iteration incl. vectors
INNER_PER_SITE = 3.9e-3 / (24 * 24 * 16 * 16 * 4)  # one inner iteration, stacked sites
LAUNCH_FLOOR = 4e-6  # per kernel launch
OUTER_KERNELS = 12  # M̂ (3), M̂† (2), BLAS and reductions
INNER_KERNELS = 12  # A_s (5 + mask), grouped BLAS (3), reductions (2), per inner iteration

NETWORK = {
    "node_bandwidth": 23e9,
    "gpus_per_node": 6,
    "latency": 2e-6,
    "reduction": 5e-6,
}
GPUS = {"H200": 1.0, "V100": 4.8 / 0.9}


def grid_for(gpus):
    """Split the lattice over `gpus` ranks, halving the longest local extent first."""
    local = list(GLOBAL)
    procs = [1, 1, 1, 1]
    while math.prod(procs) < gpus:
        mu = max(range(4), key=lambda m: (local[m], m))
        if local[mu] % 2:
            raise ValueError(f"cannot split {GLOBAL} over {gpus} ranks")
        local[mu] //= 2
        procs[mu] *= 2
    return procs, local


def model(gpus, gpu_scale):
    procs, local = grid_for(gpus)
    v_loc = math.prod(local)
    cut = [mu for mu in range(4) if procs[mu] > 1]
    padded = math.prod(local[mu] + (4 if mu in cut else 0) for mu in range(4))
    t_op = max(v_loc * OUTER_PER_SITE * gpu_scale, OUTER_KERNELS * LAUNCH_FLOOR)
    t_inner = max(padded * INNER_PER_SITE * gpu_scale, INNER_KERNELS * LAUNCH_FLOOR)
    t_prec = INNER * t_inner
    face_bytes = sum(2 * 12 * LS * (v_loc // local[mu]) // 2 * 2 for mu in cut)
    per_gpu_bw = NETWORK["node_bandwidth"] / NETWORK["gpus_per_node"]
    t_halo = 4 * (face_bytes / per_gpu_bw + 2 * len(cut) * NETWORK["latency"])
    t_red = NETWORK["reduction"] * math.log2(gpus)
    t_cg = t_op + t_halo + 2 * t_red
    t_ms = t_op + t_halo + 3 * t_red + t_prec
    return {
        "nodes": gpus / NETWORK["gpus_per_node"],
        "gpus": gpus,
        "grid": procs,
        "local": local,
        "bytes_per_outer": 4 * face_bytes,
        "t_cg": t_cg,
        "t_ms": t_ms,
        "comm_share_cg": (t_halo + 2 * t_red) / t_cg,
        "speedup": ITERATION_RATIO * t_cg / t_ms,
    }


def main():
    print(
        f"MSPCG time-to-solution model: {GLOBAL} x Ls {LS}, {INNER} inner iterations, "
        f"N_CG/N_MS = {ITERATION_RATIO:.2f} (measured), Summit-class network"
    )
    print(
        "| GPU | nodes | GPUs | grid | local | bytes per outer iteration | CG ms/iter "
        "| MSPCG ms/iter | CG comm share | speed-up |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, scale in GPUS.items():
        for gpus in (256, 512, 1024, 2048):
            m = model(gpus, scale)
            print(
                f"| {name} | {m['nodes']:.0f} | {m['gpus']} | {'x'.join(map(str, m['grid']))} "
                f"| {'x'.join(map(str, m['local']))} | {m['bytes_per_outer'] / 1e6:.1f} MB "
                f"| {m['t_cg'] * 1e3:.2f} | {m['t_ms'] * 1e3:.2f} "
                f"| {m['comm_share_cg'] * 100:.0f} % | {m['speedup']:.2f}x |"
            )
    print("Tu, Clark, Jung, Mawhinney (Summit, 64-256 nodes): 1.26-1.51x")


if __name__ == "__main__":
    main()
