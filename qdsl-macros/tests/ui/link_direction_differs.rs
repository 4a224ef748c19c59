use qdsl_macros::stencil;

stencil! {
    pub hop(out: Spinor, psi: Spinor, u: Gauge) {
        out += u[1](x) * psi(x + 3);
    }
}

fn main() {}
