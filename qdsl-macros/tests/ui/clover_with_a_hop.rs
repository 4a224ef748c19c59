use qdsl_macros::stencil;

stencil! {
    pub hop(out: Spinor, psi: Spinor, a: Clover) {
        for mu in 0..4 {
            out += a(x) * psi(x + mu);
        }
    }
}

fn main() {}
