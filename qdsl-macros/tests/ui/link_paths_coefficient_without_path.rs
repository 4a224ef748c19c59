use qdsl_macros::link_paths;

link_paths! {
    /// A coefficient with no path after it.
    pub bad(u: Gauge) -> fat {
        one_link: 5/8;
    }
}

fn main() {}
