use qdsl_macros::stencil;

stencil! {
    pub hop(out: Spinor, chi: ColourVector) {
        out += chi(x);
    }
}

fn main() {}
