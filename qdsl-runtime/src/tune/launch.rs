//! Launch knobs and the candidates the tuner tries.
//!
//! Launch knobs need no recompilation: the block size, the grid size and extra dynamic
//! shared memory. The shared memory is not used by the kernel; it only limits how many
//! blocks fit on one multiprocessor (QUDA's fastest Wilson launch on the H100 used blocks
//! of 16 threads with occupancy throttled this way). Compile knobs (kernel variants) need
//! a new program and are carried by [`Candidate::compile`].

use std::fmt;

/// A kernel launch: `grid` blocks of `block` threads with `shared_bytes` of dynamic
/// shared memory per block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LaunchConfig {
    /// Threads per block.
    pub block: u32,
    /// Blocks in the grid.
    pub grid: u32,
    /// Dynamic shared memory per block in bytes.
    pub shared_bytes: u32,
}

/// The block size of the default launch (used when tuning is off).
pub const DEFAULT_BLOCK: u32 = 128;

impl LaunchConfig {
    /// The documented default launch for `threads` threads of work: blocks of
    /// [`DEFAULT_BLOCK`] threads, grid = ⌈threads / 128⌉, no extra shared memory.
    pub fn default_for(threads: usize) -> Self {
        Self::covering(threads, DEFAULT_BLOCK, 0)
    }

    /// Blocks of `block` threads, just enough to cover `threads` (grid = ⌈threads/block⌉,
    /// at least 1), with `shared_bytes` of shared memory.
    pub fn covering(threads: usize, block: u32, shared_bytes: u32) -> Self {
        let grid = threads.div_ceil(block.max(1) as usize).max(1);
        Self {
            block,
            grid: u32::try_from(grid).unwrap_or(u32::MAX),
            shared_bytes,
        }
    }
}

impl fmt::Display for LaunchConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "block={} grid={} shared={}",
            self.block, self.grid, self.shared_bytes
        )
    }
}

/// What limits a launch on the device (cuDeviceGetAttribute values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchLimits {
    /// Max threads per block.
    pub max_block: u32,
    /// Max dynamic shared memory per block (opt-in limit) in bytes.
    pub max_shared_per_block: u32,
    /// Shared memory per multiprocessor in bytes.
    pub shared_per_sm: u32,
}

impl LaunchLimits {
    /// The H100's limits: 1024 threads, 227 KiB per block, 228 KiB per SM.
    pub const H100: LaunchLimits = LaunchLimits {
        max_block: 1024,
        max_shared_per_block: 227 * 1024,
        shared_per_sm: 228 * 1024,
    };
}

/// Block sizes tried: 16 (QUDA's winner for Wilson), then multiples of a warp.
pub const BLOCK_SIZES: [u32; 10] = [16, 32, 64, 96, 128, 192, 256, 384, 512, 1024];

/// Blocks per multiprocessor that shared-memory throttling aims at (0: no throttling).
pub const THROTTLE_BLOCKS_PER_SM: [u32; 4] = [0, 32, 16, 8];

/// Launch candidates for `threads` threads of work (one thread per site): every block
/// size of [`BLOCK_SIZES`] within the limit, each with no extra shared memory and with
/// enough to allow at most b blocks per multiprocessor for b in
/// [`THROTTLE_BLOCKS_PER_SM`], shared = ⌊shared_per_sm / b⌋ − 1024 rounded down to 256
/// bytes (the driver reserves 1 KiB per block), kept if within the per-block limit.
/// The default launch ([`LaunchConfig::default_for`]) comes first.
pub fn launch_candidates(threads: usize, limits: &LaunchLimits) -> Vec<LaunchConfig> {
    let mut out = vec![LaunchConfig::default_for(threads)];
    for block in BLOCK_SIZES.into_iter().filter(|&b| b <= limits.max_block) {
        for per_sm in THROTTLE_BLOCKS_PER_SM {
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

/// One thing the tuner can time: a compile variant (`""` when the kernel has only launch
/// knobs; otherwise a label such as a variant's canonical string) and a launch.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Candidate {
    /// The compile knobs, as a label (no tabs or newlines).
    pub compile: String,
    /// The launch knobs.
    pub launch: LaunchConfig,
}

impl Candidate {
    /// A candidate with launch knobs only.
    pub fn launch(launch: LaunchConfig) -> Self {
        Self {
            compile: String::new(),
            launch,
        }
    }
}

impl fmt::Display for Candidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.compile.is_empty() {
            write!(f, "{}", self.launch)
        } else {
            write!(f, "[{}] {}", self.compile, self.launch)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_launch_covers_the_work() {
        assert_eq!(
            LaunchConfig::default_for(32 * 32 * 32 * 16),
            LaunchConfig {
                block: 128,
                grid: 4096,
                shared_bytes: 0
            }
        );
        assert_eq!(LaunchConfig::default_for(1).grid, 1);
        assert_eq!(LaunchConfig::default_for(0).grid, 1);
        assert_eq!(LaunchConfig::covering(129, 128, 0).grid, 2);
    }

    #[test]
    fn candidates_include_quda_style_throttled_16_thread_blocks() {
        let c = launch_candidates(262_144, &LaunchLimits::H100);
        assert_eq!(c[0], LaunchConfig::default_for(262_144));
        // 228 KiB / 16 blocks = 14592 B, minus 1 KiB reserve = 13568 (a multiple of 256).
        assert!(c.contains(&LaunchConfig {
            block: 16,
            grid: 16_384,
            shared_bytes: 13_568
        }));
        // Every candidate covers the work, respects the limits and is unique.
        for l in &c {
            assert!(l.block as usize * l.grid as usize >= 262_144);
            assert!(l.shared_bytes <= LaunchLimits::H100.max_shared_per_block);
        }
        let mut sorted = c.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), c.len());
        // A device with 256-thread blocks gets no larger block.
        let small = LaunchLimits {
            max_block: 256,
            ..LaunchLimits::H100
        };
        assert!(launch_candidates(1000, &small)
            .iter()
            .all(|l| l.block <= 256));
    }
}
