use qdsl_macros::stencil;

stencil! {
    pub hop(out: Spinor, psi: Spinor) {
        out = psi(x);
    }
}

fn main() {}
