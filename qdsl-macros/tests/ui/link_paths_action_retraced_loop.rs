use qdsl_macros::link_paths;

link_paths! {
    /// A loop whose last step undoes its first (the same link back and forth).
    pub action bad(u: Gauge) {
        plaquette: 1 * [+nu, +mu, +nu, -mu, -nu, -nu];
    }
}

fn main() {}
