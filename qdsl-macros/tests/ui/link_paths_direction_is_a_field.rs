use qdsl_macros::link_paths;

link_paths! {
    /// The input field used as a direction.
    pub bad(u: Gauge) -> fat {
        staple3: -1/16 * [+u, +mu, -u];
    }
}

fn main() {}
