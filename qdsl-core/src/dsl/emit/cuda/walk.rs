//! The frame of a walking kernel ([`crate::dsl::kernel_ir::walk`]): the tile map, the
//! links loaded into registers, each term's place in a stage, the rows this thread
//! copies, and the slice loop — copy the next slice, wait for this one, the stages and
//! the epilogue on it — around the kernel IR's stages.

use super::term::{link_site, shift_and_wrap};
use super::{dependency_wait, epilogue, site_coordinates, stmt, storage, zero_accumulator, Src};
use crate::dsl::interface::Geometry;
use crate::dsl::kernel_ir::walk::{self, WalkPlan, STAGES};
use crate::dsl::kernel_ir::KernelIr;
use crate::dsl::knob_space::{Extents, LaunchSpace};

/// The name of the hoisted link `link` of term `term`.
pub(super) fn link_name(term: usize, link: usize) -> String {
    format!("walk_g{term}_{link}")
}

/// The name of term `term`'s place in a stage.
pub(super) fn place_name(term: usize) -> String {
    format!("walk_n{term}")
}

/// The name of term `term`'s wrap flag.
pub(super) fn wraps_name(term: usize) -> String {
    format!("walk_wraps{term}")
}

/// The pointer a staged source load reads (`walk_<source>`, its component stride
/// `stride_walk_<source>`).
pub(super) fn stage_pointer(source: &str) -> String {
    format!("walk_{source}")
}

/// Copies per thread and stage: the copied rows over the own rows, rounded up.
fn copies() -> usize {
    walk::copies_per_thread().ceil() as usize
}

/// A walking kernel's launch geometry: block (L0/2, 8 or 16) over the work (L0/2, the
/// rows of the output parity), [`STAGES`] stages of the copied rows in shared memory
/// (the worst tile's ratio of copied to own rows per thread), register caps as compile
/// knobs.
pub(super) fn geometry(k: &KernelIr, plan: &WalkPlan) -> Geometry {
    let record = k.field(&plan.source).map_or(0, |f| f.layout.record_bytes());
    let per_thread = (STAGES as f64 * walk::copies_per_thread() * record as f64).ceil() as u32;
    // Any thread count: a tile of a small lattice may be less than a warp.
    let space = LaunchSpace {
        thread_multiple: 1,
        ..LaunchSpace::cubic(
            Extents::Work,
            Extents::List(&walk::BLOCK_ROWS),
            Extents::List(&[1]),
            [0, walk::BLOCK_ROWS[0], 1],
        )
    };
    Geometry::per_site(per_thread).with_tunable_block(2, space)
}

/// Prints the body of a walking kernel (module docs).
pub(super) fn body(s: &mut Src, k: &KernelIr, plan: &WalkPlan) {
    let Some(source) = k.field(&plan.source) else {
        return;
    };
    tile_map(s);
    site_coordinates(s);
    if k.prologue.checkerboard_index {
        s.line(
            1,
            "const int cb = parity * half + idx; // this site's checkerboard index",
        );
    }
    dependency_wait(s);
    hoisted_links(s, k, plan);
    source_places(s, plan);
    let stage = Stage {
        chunk: source.layout.cuda_type(),
        chunks: source.layout.head_chunks(),
        source: &plan.source,
    };
    copied_rows(s, &stage);
    slice_loop(s, k, &stage);
}

/// What a stage holds: the source's chunk type, its chunks per record, its name.
struct Stage<'a> {
    chunk: &'static str,
    chunks: usize,
    source: &'a str,
}

impl Stage<'_> {
    /// The statement queueing the copy of slice `slice` into stage `stage`.
    fn copy(&self, slice: &str, stage: &str) -> String {
        let (c, src) = (self.chunks, self.source);
        format!(
            "walk_copy<{c}>(walk_stage + ({stage}) * {c} * walk_per_slice, f_{src} + ({slice}) * half, stride_{src}, walk_from, walk_t, walk_nt, walk_per_slice);"
        )
    }
}

/// The block's tile ([`walk::tile`]), this thread's site i and the lattice constants the
/// terms use.
fn tile_map(s: &mut Src) {
    let (ty, tt) = (walk::TILE_Y, walk::TILE_T);
    s.line(
        1,
        "const int hx = L0 >> 1; // block.x: whole x rows of the output parity",
    );
    s.line(
        1,
        &format!(
            "const WalkTile tile{{{ty}, (int)blockDim.y / {}, {tt}}}; // block.y rows: {ty} x block.y/{} x {tt} in y, z, t",
            ty * tt,
            ty * tt
        ),
    );
    for line in [
        "const int tiles_y = L1 / tile.ty, tiles_z = L2 / tile.tz;",
        "const int o[3] = {(int)blockIdx.y % tiles_y * tile.ty, (int)blockIdx.y / tiles_y % tiles_z * tile.tz, (int)blockIdx.y / (tiles_y * tiles_z) * tile.tt};",
        "const int ly = threadIdx.y % tile.ty, lz = threadIdx.y / tile.ty % tile.tz, lt = threadIdx.y / (tile.ty * tile.tz);",
        "const int i = threadIdx.x + hx * (o[0] + ly + L1 * (o[1] + lz + L2 * (o[2] + lt)));",
        "const int L[4] = {L0, L1, L2, L3};",
        "const int half = (L0 * L1 * L2 * L3) >> 1;",
        "const int parity = OUT_PARITY;",
        "const int idx = i;",
    ] {
        s.line(1, line);
    }
}

/// Every term's links, loaded into registers once for all slices.
fn hoisted_links(s: &mut Src, k: &KernelIr, plan: &WalkPlan) {
    s.line(
        1,
        "// The links of every term, in registers for all slices.",
    );
    for (t, term) in plan.terms.iter().enumerate() {
        for (j, l) in term.links.iter().enumerate() {
            let Some(field) = k.field(&l.field) else {
                continue;
            };
            let name = link_name(t, j);
            s.line(1, &format!("real {name}[{}];", field.layout.reals));
            s.line(1, "{");
            link_site(s, 2, "const int ln", l);
            storage::load_link_reals(
                s,
                2,
                (&format!("f_{}", l.field), &field.layout),
                l.mu,
                ("ln", &name),
            );
            s.line(1, "}");
        }
    }
}

/// Every term's place in a stage (and where it hops across the antiperiodic boundary,
/// whether it does).
fn source_places(s: &mut Src, plan: &WalkPlan) {
    s.line(
        1,
        "// Each term's source: its place in a stage (component c at c * walk_per_slice).",
    );
    s.line(1, "const int walk_per_slice = tile.rows() * hx;");
    for (t, term) in plan.terms.iter().enumerate() {
        let place = if term.mu == 0 {
            s.line(1, &format!("int walk_x{t} = x[0];"));
            s.line(1, "{");
            s.line(2, "int y[4] = {x[0], x[1], x[2], x[3]};");
            shift_and_wrap(s, 2, "y", 0, term.steps, "");
            s.line(2, &format!("walk_x{t} = y[0];"));
            s.line(1, "}");
            format!("tile.slot(ly, lz, lt) * hx + (walk_x{t} >> 1)")
        } else {
            let shift = |mu: usize| match (mu == term.mu, term.steps > 0) {
                (true, true) => format!(" + {}", term.steps),
                (true, false) => format!(" - {}", -term.steps),
                (false, _) => String::new(),
            };
            format!(
                "tile.slot(ly{}, lz{}, lt{}) * hx + (x[0] >> 1)",
                shift(1),
                shift(2),
                shift(3)
            )
        };
        s.line(1, &format!("const int {} = {place};", place_name(t)));
        if term.tracks_wraps {
            let test = match term.steps > 0 {
                true => format!("x[{}] + 1 >= L[{}]", term.mu, term.mu),
                false => format!("x[{}] < 1", term.mu),
            };
            s.line(
                1,
                &format!(
                    "const bool {} = {test}; // the hop crosses the antiperiodic boundary",
                    wraps_name(t)
                ),
            );
        }
    }
}

/// The rows this thread copies into every stage, and the stages.
fn copied_rows(s: &mut Src, stage: &Stage<'_>) {
    let n = copies();
    s.line(
        1,
        "// The rows this thread copies into every stage: their sites in a slice of the source.",
    );
    s.line(
        1,
        "const int walk_t = threadIdx.x + hx * threadIdx.y, walk_nt = hx * blockDim.y;",
    );
    s.line(1, &format!("int walk_from[{n}];"));
    s.line(
        1,
        "walk_rows_of(walk_from, tile, hx, o, L, walk_t, walk_nt, walk_per_slice);",
    );
    s.line(
        1,
        &format!(
            "extern __shared__ {} walk_stage[]; // {STAGES} stages of the copied rows, sized at launch",
            stage.chunk
        ),
    );
}

/// The slice loop: copy slice s5 + 1 while s5's rows are computed, the stages and the
/// epilogue on slice s5.
fn slice_loop(s: &mut Src, k: &KernelIr, stage: &Stage<'_>) {
    s.line(
        1,
        &format!(
            "for (int k = 0; k < {}; k++) {{ if (k < walk_ls) {{ {} }} walk_commit(); }}",
            STAGES - 1,
            stage.copy("k", "k")
        ),
    );
    s.line(1, "for (int s5 = 0; s5 < walk_ls; s5++) {");
    s.line(2, &format!("const int next = s5 + {};", STAGES - 1));
    s.line(
        2,
        &format!(
            "if (next < walk_ls) {{ {} }}",
            stage.copy("next", &format!("next % {STAGES}"))
        ),
    );
    s.line(2, "walk_commit();");
    s.line(
        2,
        &format!(
            "walk_wait<{}>(); // this thread's copies of slice s5 have landed",
            STAGES - 1
        ),
    );
    s.line(2, "__syncthreads(); // ... and every thread's");
    s.line(
        2,
        &format!(
            "const {}* const {} = walk_stage + (s5 % {STAGES}) * {} * walk_per_slice;",
            stage.chunk,
            stage_pointer(stage.source),
            stage.chunks
        ),
    );
    s.line(
        2,
        &format!(
            "const int stride_{} = walk_per_slice;",
            stage_pointer(stage.source)
        ),
    );
    s.line(
        2,
        "const int io = s5 * n_out + i; // the output's index: slice s5 of n_out sites",
    );
    s.1 += 1;
    zero_accumulator(s, k.prologue.spins);
    for st in &k.stages {
        stmt::print_body(s, 1, &st.body, k);
    }
    epilogue(s, k);
    s.1 -= 1;
    s.line(
        2,
        "__syncthreads(); // the stage of slice s5 is copied into next",
    );
    s.line(1, "}");
}
