use qdsl_macros::stencil;

stencil! {
    #[knobs(recon = [18, 13])]
    pub hop(out: Spinor, psi: Spinor, u: Gauge) {
        for mu in 0..4 {
            out += (1 - gamma(mu)) * u[mu](x) * psi(x + mu);
        }
    }
}

fn main() {}
