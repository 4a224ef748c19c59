use qdsl_macros::stencil;

stencil! {
    pub projected_coarse(out: Spinor<4, 6>, psi: Spinor<4, 6>, y: Gauge<24>) {
        for mu in 0..4 {
            out += (1 - gamma(mu)) * y[mu](x) * psi(x + mu);
        }
    }
}

fn main() {}
