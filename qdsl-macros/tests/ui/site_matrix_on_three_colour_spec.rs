use qdsl_macros::stencil;

stencil! {
    pub clover_like(out: Spinor, psi: Spinor, xm: SiteMatrix<12>, u: Gauge) {
        out += xm(x) * psi(x);
        out += u[0](x) * psi(x + 0);
    }
}

fn main() {}
