use qdsl_macros::stencil;

stencil! {
    pub hop(out: Spinor, other: Spinor, psi: Spinor) {
        out += psi(x);
        other += psi(x);
    }
}

fn main() {}
