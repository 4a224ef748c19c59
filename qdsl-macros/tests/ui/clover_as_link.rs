use qdsl_macros::stencil;

stencil! {
    pub hop(out: Spinor, psi: Spinor, a: Clover) {
        out += a[0](x) * psi(x + 0);
    }
}

fn main() {}
