use qdsl_macros::stencil;

stencil! {
    pub hop(out: Spinor, psi: Spinor, u: Gauge) {
        u += psi(x);
    }
}

fn main() {}
