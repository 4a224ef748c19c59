use qdsl_macros::link_paths;

link_paths! {
    /// A Naik path summed into a one-hop link.
    pub bad(u: Gauge) -> fat {
        one_link: 5/8 * [+mu];
        naik: -1/24 * [+mu, +mu, +mu];
    }
}

fn main() {}
