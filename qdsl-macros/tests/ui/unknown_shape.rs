use qdsl_macros::stencil;

stencil! {
    pub hop(out: Spinor, psi: Spinr, u: Gauge) {
        out += psi(x);
    }
}

fn main() {}
