use qdsl_macros::link_paths;

link_paths! {
    /// A "plaquette" that never comes back along mu.
    pub action bad(u: Gauge) {
        plaquette: 1 * [+mu, +nu, -mu, -nu];
        staple: -1/12 * [+nu, +mu, -nu];
    }
}

fn main() {}
