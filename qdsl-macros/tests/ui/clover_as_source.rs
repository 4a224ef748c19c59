use qdsl_macros::stencil;

stencil! {
    pub clover(out: Spinor, psi: Spinor, a: Clover) {
        out += a(x);
    }
}

fn main() {}
