use qdsl_macros::link_paths;

link_paths! {
    /// The same term name twice.
    pub bad(u: Gauge) -> fat {
        staple: -1/16 * [+nu, +mu, -nu];
        staple: 1/64 * [+nu, +rho, +mu, -rho, -nu];
    }
}

fn main() {}
