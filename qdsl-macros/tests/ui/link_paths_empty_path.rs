use qdsl_macros::link_paths;

link_paths! {
    /// An empty path.
    pub bad(u: Gauge) -> fat {
        one_link: 5/8 * [+mu];
        nothing: 1/4 * [];
    }
}

fn main() {}
