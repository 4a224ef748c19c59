use qdsl_macros::stencil;

stencil! {
    pub hop(out: Spinor, psi: Spinor, u: Gauge) {
        for mu in 0..4 {
            out += 1.0 / (2.0 - 2.0) * (1 - gamma(mu)) * u[mu](x) * psi(x + mu);
        }
    }
}

fn main() {}
