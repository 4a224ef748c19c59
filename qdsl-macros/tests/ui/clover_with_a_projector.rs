use qdsl_macros::stencil;

stencil! {
    pub clover(out: Spinor, psi: Spinor, a: Clover) {
        out += (1 - gamma(0)) * a(x) * psi(x);
    }
}

fn main() {}
