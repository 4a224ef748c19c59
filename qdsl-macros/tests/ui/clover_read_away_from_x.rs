use qdsl_macros::stencil;

stencil! {
    pub clover(out: Spinor, psi: Spinor, a: Clover) {
        out += a(x + 1) * psi(x);
    }
}

fn main() {}
