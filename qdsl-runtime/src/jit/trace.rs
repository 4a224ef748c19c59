//! A timeline of the set-up's work for finding what a first run waits on: with
//! `QDSL_JIT_TRACE=1`, every NVRTC compilation, module load and kernel tuning prints one
//! line to standard error — when it began (ms since [`epoch`] was first asked for, which
//! `qdsl` does first thing), how long it took, what it was and on which thread.

use std::sync::OnceLock;
use std::time::Instant;

/// The environment variable that turns the timeline on.
pub const TRACE_ENV: &str = "QDSL_JIT_TRACE";

/// The timeline's origin: the first call of this function.
pub fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Whether the timeline is on (`QDSL_JIT_TRACE` set and not `0`), read once.
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var(TRACE_ENV).is_ok_and(|v| !v.is_empty() && v != "0"))
}

/// Prints one timeline line for work `kind` on `name` that began at `start` and ends
/// now (nothing when the timeline is off).
pub fn event(kind: &str, name: &str, start: Instant) {
    if enabled() {
        eprintln!("{}", line(kind, name, start, Instant::now()));
    }
}

/// The timeline line of work `kind` on `name` from `start` to `end`.
fn line(kind: &str, name: &str, start: Instant, end: Instant) -> String {
    let origin = epoch();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    format!(
        "qdsl-trace: {:>9.1} ms +{:>8.1} ms {kind:<6} {name} ({:?})",
        ms(start.saturating_duration_since(origin)),
        ms(end.saturating_duration_since(start)),
        std::thread::current().id()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_line_gives_start_duration_kind_and_name() {
        let start = epoch() + Duration::from_millis(1500);
        let l = line(
            "nvrtc",
            "wilson_hop",
            start,
            start + Duration::from_millis(250),
        );
        assert!(l.contains("1500.0 ms"), "{l}");
        assert!(l.contains("+   250.0 ms"), "{l}");
        assert!(l.contains("nvrtc  wilson_hop"), "{l}");
    }
}
