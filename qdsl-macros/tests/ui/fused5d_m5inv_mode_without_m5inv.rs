use qdsl_macros::fused5d;

fused5d! {
    pub mode_without_m5inv(Dw = WilsonHop, m5inv = [mma_f16]) = Mphi * Dw;
}

fn main() {}
