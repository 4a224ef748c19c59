use qdsl_macros::stencil;

stencil! {
    pub hop(out: Spinor, psi: Spinor, u: Gauge) {
        for mu in 0..5 {
            out += u[mu](x) * psi(x + mu);
        }
    }
}

fn main() {}
