use qdsl_macros::stencil;

stencil! {
    pub twist(out: ColourVector, chi: ColourVector) {
        out += 0.5 * (i * gamma(5)) * chi(x);
    }
}

fn main() {}
