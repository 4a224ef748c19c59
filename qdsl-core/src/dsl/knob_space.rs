//! The knob space of a kernel: what the tuner may vary without changing what the kernel
//! computes. It travels in the kernel's [`crate::dsl::Geometry`], so every interface
//! value — a generated stencil's [`crate::dsl::CompiledKernel`] and a hand-written or
//! emitted kernel's [`crate::dsl::KernelInterface`] — carries its own, and the runtime's
//! tuner enumerates its candidates from it (one definition per kernel, no candidate
//! lists at the launch sites).
//!
//! * [`CompileSpace`]: the builds worth compiling — register caps (PTX `.maxnreg`), and
//!   the prefetch builds of a source with `#if QDSL_PREFETCH` blocks ([`PREFETCH_MACRO`]);
//! * [`LaunchSpace`]: per block dimension the extents tried ([`Extents`]), the default
//!   block, the multiple every block's thread count must be (whole warps, or half warps
//!   for QUDA-style 16-thread blocks), whether occupancy is also throttled with unused
//!   shared memory, and, for a grid-stride kernel, the grid sizes tried. The shared
//!   memory a block needs as a function of its shape is the geometry's
//!   (`shared_per_thread · threads + shared_fixed`); the tuner drops blocks whose need
//!   exceeds the device's limit.

/// The macro a generated source's prefetch blocks test (`#if QDSL_PREFETCH`): its
/// presence declares the prefetch compile knob.
pub const PREFETCH_MACRO: &str = "QDSL_PREFETCH";

/// Block extents tried along x by the generated stencils and the 1-D kernels: 16
/// (QUDA's fastest Wilson block on the H100, with throttled occupancy), then multiples
/// of a warp.
pub const LINEAR_BLOCKS: [u32; 10] = [16, 32, 64, 96, 128, 192, 256, 384, 512, 1024];

/// The extents tried along one block dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Extents {
    /// Exactly these, in this order.
    List(&'static [u32]),
    /// Every multiple of `step` in `[min, max]` (`min` rounded up to a multiple).
    Multiples {
        /// The step (at least 1).
        step: u32,
        /// The smallest extent.
        min: u32,
        /// The largest extent.
        max: u32,
    },
    /// The powers of two in `[min, max]`.
    PowersOfTwo {
        /// The smallest extent.
        min: u32,
        /// The largest extent.
        max: u32,
    },
    /// The whole work extent along this dimension (e.g. all Ls slices of a site in one
    /// block, for kernels that keep a fifth-dimension column in shared memory).
    Work,
    /// The divisors of the work extent up to `max` (every block covers whole slices of
    /// a 5D field: the kernel has no bound test along y).
    Divisors {
        /// The largest extent.
        max: u32,
    },
}

impl Extents {
    /// The extents, in order, for a work extent of `work` along this dimension (only
    /// [`Extents::Work`] depends on it; at least 1).
    pub fn values(&self, work: usize) -> Vec<u32> {
        match *self {
            Extents::List(l) => l.to_vec(),
            Extents::Multiples { step, min, max } => {
                let step = step.max(1);
                let first = min.max(1).div_ceil(step) * step;
                (first..=max).step_by(step as usize).collect()
            }
            Extents::PowersOfTwo { min, max } => (0..32)
                .map(|k| 1u32 << k)
                .filter(|&p| p >= min && p <= max)
                .collect(),
            Extents::Work => vec![u32::try_from(work.max(1)).unwrap_or(u32::MAX)],
            Extents::Divisors { max } => {
                let w = work.max(1);
                (1..=max.max(1))
                    .filter(|&d| w.is_multiple_of(d as usize))
                    .collect()
            }
        }
    }
}

/// The launch knobs of a kernel (see the module doc). Dimensions beyond the geometry's
/// tunable ones, and every dimension of a fixed block, are not tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchSpace {
    /// The extents tried per block dimension (x, y, z).
    pub block: [Extents; 3],
    /// The block of untuned launches (and the first candidate); 0 along a dimension
    /// stands for the work extent there (with [`Extents::Work`]).
    pub default_block: [u32; 3],
    /// Every block's thread count is a multiple of this (32: whole warps).
    pub thread_multiple: u32,
    /// Whether each block is also tried with unused dynamic shared memory that caps the
    /// blocks per multiprocessor (at 32, 16 and 8).
    pub throttle: bool,
    /// The grid sizes along x tried for a grid-stride kernel (`None`: the grid covers
    /// the work). Capped by the geometry's largest grid and the work.
    pub grid_x: Option<Extents>,
}

impl LaunchSpace {
    /// The space of a 1-D kernel: blocks of [`LINEAR_BLOCKS`] along x (16-thread
    /// multiples), default `default_x`, with occupancy throttling.
    pub const fn linear(default_x: u32) -> Self {
        LaunchSpace {
            block: [
                Extents::List(&LINEAR_BLOCKS),
                Extents::List(&[1]),
                Extents::List(&[1]),
            ],
            default_block: [default_x, 1, 1],
            thread_multiple: 16,
            throttle: true,
            grid_x: None,
        }
    }

    /// This space without occupancy throttling (a quarter of the candidates: for
    /// kernels tuned as a side matter, such as BLAS and format conversions).
    pub const fn without_throttle(mut self) -> Self {
        self.throttle = false;
        self
    }

    /// This space with the grid sizes `grid` tried along x (a grid-stride kernel).
    pub const fn with_grid_x(mut self, grid: Extents) -> Self {
        self.grid_x = Some(grid);
        self
    }

    /// A space of 2-D blocks: `x` × `y` extents whose thread count is a multiple of a
    /// warp, default `default`.
    pub const fn planar(x: Extents, y: Extents, default: [u32; 2]) -> Self {
        LaunchSpace {
            block: [x, y, Extents::List(&[1])],
            default_block: [default[0], default[1], 1],
            thread_multiple: 32,
            throttle: false,
            grid_x: None,
        }
    }

    /// The space of a kernel that keeps whole fifth-dimension columns in a block (the
    /// coming `fused5d!` kernels: the 4D hop, then s-local stages on shared memory):
    /// 4D sites along x (`x` extents, `default_x` by default), all Ls slices of a site
    /// along y ([`Extents::Work`]), thread counts in whole warps (with Ls = 12, x in
    /// multiples of 8).
    pub const fn sites_by_slices(x: Extents, default_x: u32) -> Self {
        LaunchSpace {
            block: [x, Extents::Work, Extents::List(&[1])],
            default_block: [default_x, 0, 1],
            thread_multiple: 32,
            throttle: false,
            grid_x: None,
        }
    }

    /// The space of a stencil with the slices of 5D fields inside the block (the
    /// multi-right-hand-side hop, [`crate::dsl::variant::Slices::InBlock`]): sites along
    /// x ([`LINEAR_BLOCKS`]), along y the divisors of Ls up to 32 (block.y slices of a
    /// site read its links together; fewer slices per block, more grid rows, a smaller
    /// working set in L2), thread counts in whole warps, default 32 sites × all Ls
    /// slices.
    pub const fn slices_in_block() -> Self {
        LaunchSpace {
            block: [
                Extents::List(&LINEAR_BLOCKS),
                Extents::Divisors { max: 32 },
                Extents::List(&[1]),
            ],
            default_block: [32, 0, 1],
            thread_multiple: 32,
            throttle: false,
            grid_x: None,
        }
    }

    /// A space of 3-D blocks: `x` × `y` × `z` extents whose thread count is a multiple
    /// of a warp, default `default`.
    pub const fn cubic(x: Extents, y: Extents, z: Extents, default: [u32; 3]) -> Self {
        LaunchSpace {
            block: [x, y, z],
            default_block: default,
            thread_multiple: 32,
            throttle: false,
            grid_x: None,
        }
    }
}

/// The compile knobs of a kernel: which builds besides the generated one are worth
/// compiling.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CompileSpace {
    /// Register caps (PTX `.maxnreg`) below the uncapped build's count.
    pub register_caps: bool,
    /// The prefetch builds (`-DQDSL_PREFETCH=1`, links only or not).
    pub prefetch: bool,
}

impl CompileSpace {
    /// No compile knobs: the generated build only.
    pub const NONE: CompileSpace = CompileSpace {
        register_caps: false,
        prefetch: false,
    };

    /// This space with the prefetch knob where `source` declares it ([`PREFETCH_MACRO`]).
    pub fn with_prefetch_of(mut self, source: &str) -> Self {
        self.prefetch |= source.contains(PREFETCH_MACRO);
        self
    }
}

/// The knob space of a kernel: its compile knobs and its launch knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KnobSpace {
    /// The builds.
    pub compile: CompileSpace,
    /// The launches.
    pub launch: LaunchSpace,
}

impl KnobSpace {
    /// A 1-D kernel's (see [`LaunchSpace::linear`]) without compile knobs.
    pub const fn linear(default_x: u32) -> Self {
        KnobSpace {
            compile: CompileSpace::NONE,
            launch: LaunchSpace::linear(default_x),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divisors_cover_whole_slices() {
        let d = Extents::Divisors { max: 32 };
        assert_eq!(d.values(12), vec![1, 2, 3, 4, 6, 12]);
        assert_eq!(d.values(8), vec![1, 2, 4, 8]);
        assert_eq!(d.values(1), vec![1]);
        assert_eq!(d.values(0), vec![1]);
        assert_eq!(Extents::Divisors { max: 4 }.values(12), vec![1, 2, 3, 4]);
    }

    #[test]
    fn extents_enumerate_what_they_say() {
        assert_eq!(Extents::List(&[16, 32]).values(7), vec![16, 32]);
        assert_eq!(
            Extents::Multiples {
                step: 32,
                min: 1,
                max: 128
            }
            .values(0),
            vec![32, 64, 96, 128]
        );
        // min is rounded up to a multiple of the step; an empty range is empty.
        assert_eq!(
            Extents::Multiples {
                step: 3,
                min: 4,
                max: 12
            }
            .values(0),
            vec![6, 9, 12]
        );
        assert!(Extents::Multiples {
            step: 8,
            min: 9,
            max: 15
        }
        .values(0)
        .is_empty());
        assert_eq!(
            Extents::PowersOfTwo { min: 3, max: 32 }.values(0),
            vec![4, 8, 16, 32]
        );
        assert_eq!(Extents::Work.values(12), vec![12]);
        assert_eq!(Extents::Work.values(0), vec![1]);
    }

    #[test]
    fn the_prefetch_knob_is_declared_by_the_source() {
        let c = CompileSpace {
            register_caps: true,
            prefetch: false,
        };
        assert!(c.with_prefetch_of("#if QDSL_PREFETCH\n#endif\n").prefetch);
        assert!(!c.with_prefetch_of("__global__ void k() {}").prefetch);
        assert_eq!(CompileSpace::NONE, CompileSpace::default());
    }
}
