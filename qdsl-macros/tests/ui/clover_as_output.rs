use qdsl_macros::stencil;

stencil! {
    pub clover(out: Spinor, psi: Spinor, a: Clover) {
        a += psi(x);
    }
}

fn main() {}
