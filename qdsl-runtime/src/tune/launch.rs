//! Launch knobs and the candidates the tuner tries.
//!
//! Launch knobs need no recompilation: the block size, the grid size and extra dynamic
//! shared memory. The shared memory is not used by the kernel; it only limits how many
//! blocks fit on one multiprocessor (QUDA's fastest Wilson launch on the H100 used blocks
//! of 16 threads with occupancy throttled this way). Compile knobs (kernel variants) need
//! a new program and are carried by [`Candidate::compile`].

use qdsl_core::dsl::{BlockShape, Geometry};
use std::fmt;

/// A kernel launch: a grid of `grid` blocks of `block` threads (x, y, z) with
/// `shared_bytes` of dynamic shared memory per block beyond what the kernel's geometry
/// needs (occupancy throttling).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LaunchConfig {
    /// Threads per block along x, y, z.
    pub block: [u32; 3],
    /// Blocks along x, y, z.
    pub grid: [u32; 3],
    /// Extra dynamic shared memory per block in bytes.
    pub shared_bytes: u32,
}

/// The block size of the stencils' default launch (used when tuning is off): the
/// default of [`Geometry::per_site`]'s launch space.
pub const DEFAULT_BLOCK: u32 = Geometry::per_site(0).knobs.launch.default_block[0];

impl LaunchConfig {
    /// The documented default launch of a 1-D kernel over `threads` threads of work:
    /// blocks of [`DEFAULT_BLOCK`] threads, grid = ⌈threads / 128⌉, no extra shared
    /// memory.
    pub fn default_for(threads: usize) -> Self {
        Self::covering(threads, DEFAULT_BLOCK, 0)
    }

    /// 1-D blocks of `block` threads, just enough to cover `threads` (grid =
    /// ⌈threads/block⌉, at least 1), with `shared_bytes` of shared memory.
    pub fn covering(threads: usize, block: u32, shared_bytes: u32) -> Self {
        let grid = threads.div_ceil(block.max(1) as usize).max(1);
        Self {
            block: [block, 1, 1],
            grid: [u32::try_from(grid).unwrap_or(u32::MAX), 1, 1],
            shared_bytes,
        }
    }

    /// The launch of a kernel of `geometry` over `work` items with the block `block`
    /// (a fixed block of the geometry wins), at most `grid_x` blocks along x where the
    /// geometry's launch space tunes the grid ([`Geometry::grid_tuned`]; `None`: the
    /// grid covering the work) and `shared_bytes` of extra shared memory.
    pub fn of(
        geometry: &Geometry,
        work: [usize; 3],
        block: [u32; 3],
        grid_x: Option<u32>,
        shared_bytes: u32,
    ) -> Self {
        let block = geometry.block(block);
        Self {
            block,
            grid: geometry.grid_tuned(work, block, grid_x.unwrap_or(u32::MAX)),
            shared_bytes,
        }
    }

    /// The untuned launch of a kernel of `geometry` over `work` items: its launch
    /// space's default block (a 0 there taking the work extent), the grid covering the
    /// work.
    pub fn default_of(geometry: &Geometry, work: [usize; 3]) -> Self {
        let mut block = geometry.knobs.launch.default_block;
        for (b, w) in block.iter_mut().zip(work) {
            if *b == 0 {
                *b = u32::try_from(w.max(1)).unwrap_or(u32::MAX);
            }
        }
        Self::of(geometry, work, block, None, 0)
    }

    /// This launch (chosen at another volume) for `work` items: the same block, extra
    /// shared memory and tuned grid limit, the grid recomputed.
    pub fn rescaled(&self, geometry: &Geometry, work: [usize; 3]) -> Self {
        Self::of(
            geometry,
            work,
            self.block,
            Some(self.grid[0]),
            self.shared_bytes,
        )
    }

    /// Threads per block.
    pub fn threads(&self) -> u32 {
        self.block.iter().fold(1u32, |a, &b| a.saturating_mul(b))
    }
}

/// `x`, `xXy` or `xXyXz` with trailing ones left out: the block and grid notation of
/// [`LaunchConfig`]'s display and of the tune cache.
pub fn dims(d: &[u32; 3]) -> String {
    match d {
        [x, 1, 1] => format!("{x}"),
        [x, y, 1] => format!("{x}x{y}"),
        [x, y, z] => format!("{x}x{y}x{z}"),
    }
}

/// The inverse of [`dims`]: one to three positive integers joined by `x` (missing ones
/// are 1); `None` for anything else.
pub fn parse_dims(s: &str) -> Option<[u32; 3]> {
    let mut out = [1u32; 3];
    let parts: Vec<&str> = s.split('x').collect();
    if parts.len() > 3 {
        return None;
    }
    for (k, p) in parts.iter().enumerate() {
        out[k] = p.parse().ok()?;
    }
    Some(out)
}

impl fmt::Display for LaunchConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "block={} grid={} shared={}",
            dims(&self.block),
            dims(&self.grid),
            self.shared_bytes
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

/// Blocks per multiprocessor that shared-memory throttling aims at (0: no throttling).
pub const THROTTLE_BLOCKS_PER_SM: [u32; 4] = [0, 32, 16, 8];

/// The launch candidates of a kernel of `geometry` over `work` items, enumerated from
/// its knob space ([`qdsl_core::dsl::LaunchSpace`]), the default launch
/// ([`LaunchConfig::default_of`]) first:
///
/// * blocks: the fixed block, or every combination of the tunable dimensions' extents
///   (x outermost; along y and z none beyond the work there, the smallest kept) whose
///   thread count is at most the device's `max_block` and a multiple of the space's
///   `thread_multiple`, and whose shared memory (the geometry's function of the block)
///   is within the per-block limit;
/// * grids: the one covering the work, or for a grid-stride kernel each of the space's
///   grid sizes within the geometry's largest grid;
/// * throttling (where the space asks for it): each with no extra shared memory and
///   with enough to allow at most b blocks per multiprocessor for b in
///   [`THROTTLE_BLOCKS_PER_SM`]: a block's total ⌊shared_per_sm / b⌋ − 1024 rounded
///   down to 256 bytes (the driver reserves 1 KiB per block), kept if within the
///   per-block limit and above the block's own need.
///
/// Duplicates are dropped.
pub fn launch_candidates(
    work: [usize; 3],
    geometry: &Geometry,
    limits: &LaunchLimits,
) -> Vec<LaunchConfig> {
    let space = &geometry.knobs.launch;
    let mut out = vec![LaunchConfig::default_of(geometry, work)];
    let grids: Vec<Option<u32>> = match space.grid_x {
        None => vec![None],
        Some(e) => e
            .values(work[0])
            .into_iter()
            .filter(|&g| g >= 1 && g <= geometry.max_grid[0])
            .map(Some)
            .collect(),
    };
    let per_sm: &[u32] = if space.throttle {
        &THROTTLE_BLOCKS_PER_SM
    } else {
        &THROTTLE_BLOCKS_PER_SM[..1]
    };
    for block in candidate_blocks(work, geometry, limits) {
        let need = geometry.shared(block);
        for &grid_x in &grids {
            for &b in per_sm {
                let extra = match b {
                    0 => 0,
                    b => {
                        let total = ((limits.shared_per_sm / b).saturating_sub(1024)) / 256 * 256;
                        if total > limits.max_shared_per_block || total <= need {
                            continue;
                        }
                        total - need
                    }
                };
                let c = LaunchConfig::of(geometry, work, block, grid_x, extra);
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
    }
    out
}

/// The blocks of [`launch_candidates`] (see there), before grids and throttling.
fn candidate_blocks(work: [usize; 3], geometry: &Geometry, limits: &LaunchLimits) -> Vec<[u32; 3]> {
    let space = &geometry.knobs.launch;
    let dims = match geometry.block {
        BlockShape::Fixed(b) => return vec![b],
        BlockShape::Tunable(d) => usize::from(d.clamp(1, 3)),
    };
    let extents: Vec<Vec<u32>> = (0..3)
        .map(|k| {
            if k >= dims {
                return vec![1];
            }
            let mut v: Vec<u32> = space.block[k]
                .values(work[k])
                .into_iter()
                .filter(|&e| e >= 1)
                .collect();
            if k > 0 {
                let smallest = v.iter().copied().min();
                v.retain(|&e| e as usize <= work[k].max(1));
                if v.is_empty() {
                    v.extend(smallest);
                }
            }
            v
        })
        .collect();
    let multiple = space.thread_multiple.max(1);
    let mut out = Vec::new();
    for &x in &extents[0] {
        for &y in &extents[1] {
            for &z in &extents[2] {
                let block = [x, y, z];
                let threads = u64::from(x) * u64::from(y) * u64::from(z);
                if threads <= u64::from(limits.max_block)
                    && threads % u64::from(multiple) == 0
                    && geometry.shared(block) <= limits.max_shared_per_block
                {
                    out.push(block);
                }
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
mod tests;
