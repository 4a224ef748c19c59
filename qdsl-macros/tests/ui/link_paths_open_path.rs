use qdsl_macros::link_paths;

link_paths! {
    /// A staple that does not come back from nu.
    pub bad(u: Gauge) -> fat {
        staple3: -1/16 * [+nu, +mu, +nu];
    }
}

fn main() {}
