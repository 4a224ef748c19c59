use qdsl_macros::stencil;

stencil! {
    pub coarse(out: Spinor<2, 4>, phi: Spinor<2, 4>, xm: SiteMatrix<8>) {
        for mu in 0..4 {
            out += xm[mu](x) * phi(x + mu);
        }
    }
}

fn main() {}
