use qdsl_macros::stencil;

stencil! {
    pub clover(out: ColourVector, chi: ColourVector, a: Clover) {
        out += a(x) * chi(x);
    }
}

fn main() {}
