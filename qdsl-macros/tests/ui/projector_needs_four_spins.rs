use qdsl_macros::stencil;

stencil! {
    pub hop(out: ColourVector, chi: ColourVector, u: Gauge) {
        for mu in 0..4 {
            out += (1 - gamma(mu)) * u[mu](x) * chi(x + mu);
        }
    }
}

fn main() {}
