use qdsl_macros::stencil;

stencil! {
    pub coarse(out: Spinor<2, 4>, phi: Spinor<2, 4>, xm: SiteMatrix<8>) {
        out += xm(x);
    }
}

fn main() {}
