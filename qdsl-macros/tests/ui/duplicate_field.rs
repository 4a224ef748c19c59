use qdsl_macros::stencil;

stencil! {
    pub hop(out: Spinor, psi: Spinor, psi: Spinor, u: Gauge) {
        out += psi(x);
    }
}

fn main() {}
