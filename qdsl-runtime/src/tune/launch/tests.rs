use super::*;
use qdsl_core::dsl::{Extents, LaunchSpace};

#[test]
fn default_launch_covers_the_work() {
    assert_eq!(
        LaunchConfig::default_for(32 * 32 * 32 * 16),
        LaunchConfig {
            block: [128, 1, 1],
            grid: [4096, 1, 1],
            shared_bytes: 0
        }
    );
    assert_eq!(LaunchConfig::default_for(1).grid, [1, 1, 1]);
    assert_eq!(LaunchConfig::default_for(0).grid, [1, 1, 1]);
    assert_eq!(LaunchConfig::covering(129, 128, 0).grid, [2, 1, 1]);
    // The stencils' default is their geometry's.
    let g = Geometry::per_site(0);
    assert_eq!(
        LaunchConfig::default_of(&g, [1000, 1, 1]),
        LaunchConfig::default_for(1000)
    );
}

/// The stencils' candidates as they were written by hand before the knob space
/// existed: the default, then each block of 16, 32, 64, 96, 128, 192, 256, 384, 512,
/// 1024 within the limit with no extra shared memory and throttled to 32, 16 and 8
/// blocks per multiprocessor.
fn hand_written(threads: usize, limits: &LaunchLimits) -> Vec<LaunchConfig> {
    let mut out = vec![LaunchConfig::default_for(threads)];
    for block in [16, 32, 64, 96, 128, 192, 256, 384, 512, 1024] {
        if block > limits.max_block {
            continue;
        }
        for per_sm in [0u32, 32, 16, 8] {
            let shared = match per_sm {
                0 => 0,
                b => ((limits.shared_per_sm / b).saturating_sub(1024)) / 256 * 256,
            };
            if per_sm != 0 && (shared == 0 || shared > limits.max_shared_per_block) {
                continue;
            }
            let c = LaunchConfig::covering(threads, block, shared);
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

#[test]
fn the_stencils_knob_space_gives_their_old_candidates() {
    // Same candidates in the same order, so tune caches written before stay valid.
    let small = LaunchLimits {
        max_block: 256,
        max_shared_per_block: 48 * 1024,
        shared_per_sm: 100 * 1024,
    };
    for threads in [1, 1000, 4096, 262_144, 1 << 22] {
        for limits in [LaunchLimits::H100, small] {
            assert_eq!(
                launch_candidates([threads, 1, 1], &Geometry::per_site(0), &limits),
                hand_written(threads, &limits),
                "{threads} threads, {limits:?}"
            );
        }
    }
}

#[test]
fn candidates_include_quda_style_throttled_16_thread_blocks() {
    let c = launch_candidates([262_144, 1, 1], &Geometry::per_site(0), &LaunchLimits::H100);
    assert_eq!(c[0], LaunchConfig::default_for(262_144));
    // 228 KiB / 16 blocks = 14592 B, minus 1 KiB reserve = 13568 (a multiple of 256).
    assert!(c.contains(&LaunchConfig::covering(262_144, 16, 13_568)));
    // Every candidate covers the work, respects the limits and is unique.
    for l in &c {
        assert!(l.block[0] as usize * l.grid[0] as usize >= 262_144);
        assert!(l.shared_bytes <= LaunchLimits::H100.max_shared_per_block);
    }
    let mut sorted = c.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), c.len());
}

/// Checks the limits every candidate must keep: threads ≤ max_block, a multiple of
/// `multiple`, geometry shared + extra ≤ the per-block limit, the grid covering the
/// work in each dimension (unless the grid is tuned), no duplicates.
fn assert_within_limits(
    c: &[LaunchConfig],
    g: &Geometry,
    work: [usize; 3],
    limits: &LaunchLimits,
    multiple: u32,
) {
    for l in &c[1..] {
        assert!(l.threads() <= limits.max_block, "{l}");
        assert_eq!(l.threads() % multiple, 0, "{l}");
        assert!(
            g.shared(l.block) + l.shared_bytes <= limits.max_shared_per_block,
            "{l}"
        );
    }
    for l in c {
        if g.knobs.launch.grid_x.is_none() {
            for k in 0..3 {
                assert!(
                    l.grid[k] as usize * l.block[k] as usize >= work[k].max(1),
                    "{l} covers {work:?}"
                );
            }
        }
    }
    let mut sorted = c.to_vec();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), c.len());
}

#[test]
fn two_dimensional_blocks_keep_every_limit() {
    // Sites along x (warp multiples), 5D slices along y (powers of two up to 16) on a
    // work of 4096 sites × Ls = 12.
    let space = LaunchSpace::planar(
        Extents::Multiples {
            step: 32,
            min: 32,
            max: 1024,
        },
        Extents::PowersOfTwo { min: 1, max: 16 },
        [64, 4],
    );
    let g = Geometry::per_site(0).with_tunable_block(2, space);
    let work = [4096, 12, 1];
    let c = launch_candidates(work, &g, &LaunchLimits::H100);
    assert_eq!(c[0].block, [64, 4, 1]);
    assert_eq!(c[0].grid, [64, 3, 1]);
    assert_within_limits(&c, &g, work, &LaunchLimits::H100, 32);
    // y never beyond the 12 slices (16 is dropped); x·y ≤ 1024: for y = 1, 2, 4, 8
    // there are 32, 16, 8, 4 extents of x.
    assert!(c.iter().all(|l| l.block[1] <= 8 && l.block[2] == 1));
    assert_eq!(c.len(), 32 + 16 + 8 + 4);
    assert!(c.contains(&LaunchConfig {
        block: [128, 8, 1],
        grid: [32, 2, 1],
        shared_bytes: 0
    }));
}

#[test]
fn shared_memory_as_a_function_of_the_block_limits_the_blocks() {
    // 256 bytes per thread plus 4 KiB per block: at most (227 KiB − 4 KiB) / 256 = 892
    // threads fit on the H100.
    let g = Geometry {
        shared_per_thread: 256,
        shared_fixed: 4096,
        ..Geometry::per_site(0)
    };
    let c = launch_candidates([1 << 20, 1, 1], &g, &LaunchLimits::H100);
    assert_within_limits(&c, &g, [1 << 20, 1, 1], &LaunchLimits::H100, 16);
    let blocks: Vec<u32> = c[1..].iter().map(|l| l.block[0]).collect();
    assert!(blocks.contains(&512) && !blocks.contains(&1024));
    // Throttling counts the block's own need: a 16-thread block needs 8 KiB, so the
    // 8-per-SM target of 28 KiB adds the difference.
    let total = (228 * 1024 / 8 - 1024) / 256 * 256;
    assert!(c.contains(&LaunchConfig::covering(
        1 << 20,
        16,
        total - (16 * 256 + 4096)
    )));
    // A block whose need already exceeds a target is not throttled to it.
    assert!(c
        .iter()
        .filter(|l| l.block[0] == 512)
        .all(|l| l.shared_bytes == 0));
}

#[test]
fn three_dimensional_blocks_and_the_warp_multiple() {
    let space = LaunchSpace::cubic(
        Extents::PowersOfTwo { min: 4, max: 64 },
        Extents::PowersOfTwo { min: 1, max: 8 },
        Extents::List(&[1, 2, 3]),
        [32, 2, 1],
    );
    let g = Geometry::linear().with_tunable_block(3, space);
    let work = [1000, 8, 3];
    let c = launch_candidates(work, &g, &LaunchLimits::H100);
    assert_within_limits(&c, &g, work, &LaunchLimits::H100, 32);
    // 3-D blocks are there, including odd z (8·4·3 = 96 threads: three warps).
    assert!(c.iter().any(|l| l.block == [8, 4, 3]));
    // 4·2·3 = 24 threads is not whole warps.
    assert!(!c.iter().any(|l| l.block == [4, 2, 3]));
    // A device with 256-thread blocks gets no larger block.
    let small = LaunchLimits {
        max_block: 256,
        ..LaunchLimits::H100
    };
    assert!(launch_candidates(work, &g, &small)
        .iter()
        .all(|l| l.threads() <= 256));
}

#[test]
fn a_grid_stride_kernel_with_a_fixed_block_tunes_its_grid() {
    // A reduction's partial pass: blocks of 256 fixed by the source, at most 1024
    // blocks, grid sizes 64 … 4096 tried (those above the largest grid dropped).
    let g = Geometry::linear()
        .with_max_grid_x(1024)
        .with_launch_space(
            LaunchSpace::linear(256)
                .without_throttle()
                .with_grid_x(Extents::PowersOfTwo { min: 64, max: 4096 }),
        )
        .with_fixed_block(256);
    let c = launch_candidates([1 << 20, 1, 1], &g, &LaunchLimits::H100);
    let grids: Vec<u32> = c.iter().map(|l| l.grid[0]).collect();
    assert_eq!(grids, vec![1024, 64, 128, 256, 512]);
    assert!(c
        .iter()
        .all(|l| l.block == [256, 1, 1] && l.shared_bytes == 0));
    // On little work the grid is what the work needs; duplicates fold.
    let c = launch_candidates([10_000, 1, 1], &g, &LaunchLimits::H100);
    let grids: Vec<u32> = c.iter().map(|l| l.grid[0]).collect();
    assert_eq!(grids, vec![40]);
}

#[test]
fn a_launch_moves_to_another_volume_with_its_block() {
    let g = Geometry::per_site(0);
    let l = LaunchConfig::covering(4096, 64, 8192);
    assert_eq!(
        l.rescaled(&g, [6144, 1, 1]),
        LaunchConfig::covering(6144, 64, 8192)
    );
}

#[test]
fn block_and_grid_notation_round_trips() {
    for d in [[128, 1, 1], [32, 4, 1], [8, 4, 2], [1, 1, 7]] {
        assert_eq!(parse_dims(&dims(&d)), Some(d));
    }
    assert_eq!(dims(&[128, 1, 1]), "128");
    assert_eq!(dims(&[32, 4, 1]), "32x4");
    assert_eq!(parse_dims("16"), Some([16, 1, 1]));
    for bad in ["", "x", "4x", "-4", "1x2x3x4", "4 x 2", "0x1"] {
        if bad == "0x1" {
            // Zero parses (the cache reader rejects it as a launch).
            assert_eq!(parse_dims(bad), Some([0, 1, 1]));
            continue;
        }
        assert_eq!(parse_dims(bad), None, "{bad}");
    }
    assert_eq!(
        LaunchConfig::covering(1000, 16, 256).to_string(),
        "block=16 grid=63 shared=256"
    );
}

#[test]
fn fifth_dimension_columns_stay_whole_in_a_block() {
    // A fused 5D kernel on Ls = 12: all 12 slices of a site in one block, 96 bytes of
    // shared memory per thread (24 f32 reals), sites along x in multiples of 8.
    let space = LaunchSpace::sites_by_slices(
        Extents::Multiples {
            step: 8,
            min: 8,
            max: 1024,
        },
        16,
    );
    let g = Geometry {
        shared_per_thread: 96,
        ..Geometry::per_site(0).with_tunable_block(2, space)
    };
    let work = [4096, 12, 1];
    let c = launch_candidates(work, &g, &LaunchLimits::H100);
    assert_eq!(c[0].block, [16, 12, 1]);
    assert_eq!(c[0].grid, [256, 1, 1]);
    assert_within_limits(&c, &g, work, &LaunchLimits::H100, 32);
    assert!(c.iter().all(|l| l.block[1] == 12 && l.grid[1] == 1));
    // x·12 ≤ 1024 and a whole number of warps: x = 8, 16, …, 80.
    let xs: Vec<u32> = c.iter().skip(1).map(|l| l.block[0]).collect();
    assert_eq!(
        xs,
        (1..=10)
            .filter(|&k| k != 2)
            .map(|k| 8 * k)
            .collect::<Vec<_>>()
    );
}
