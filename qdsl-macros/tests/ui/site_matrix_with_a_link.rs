use qdsl_macros::stencil;

stencil! {
    pub coarse(out: Spinor<2, 4>, phi: Spinor<2, 4>, xm: SiteMatrix<8>, y: Gauge<8>) {
        out += xm(x) * y[0](x) * phi(x + 0);
    }
}

fn main() {}
