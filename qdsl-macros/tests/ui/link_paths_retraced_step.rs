use qdsl_macros::link_paths;

link_paths! {
    /// A 3-staple that steps back along the direction it just bound.
    pub bad(u: Gauge) -> fat {
        one_link: 5/8 * [+mu];
        staple3: -1/16 * [+nu, -nu, +mu];
    }
}

fn main() {}
