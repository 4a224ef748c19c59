use qdsl_macros::stencil;

stencil! {
    #[knobs(dirichlet = [on])]
    pub clover(out: Spinor, psi: Spinor, a: Clover) {
        out += a(x) * psi(x);
    }
}

fn main() {}
