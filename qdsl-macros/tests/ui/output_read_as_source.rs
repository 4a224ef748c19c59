use qdsl_macros::stencil;

stencil! {
    pub hop(out: Spinor, psi: Spinor, u: Gauge) {
        for mu in 0..4 {
            out += u[mu](x) * out(x + mu);
        }
    }
}

fn main() {}
