//! `qdsl solve --sources N|propagator`: several right-hand sides solved at once (the
//! multi-RHS kernels and block CG), with a per-source report.

use super::CliError;
use crate::app::solve::{
    solve_sources_on, Precision, SolveBackend, SolveConfig, SourceSet, SourcesReport,
};
use qdsl_core::field::GaugeField;

/// The value of `--sources`: a count of Gaussian sources, or `propagator`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourcesArg {
    /// N Gaussian sources.
    Count(usize),
    /// The point sources of a propagator at the origin (12, or 3 for staggered).
    Propagator,
}

/// Parses `--sources`: a positive integer, or `propagator`.
pub fn parse_sources(s: &str) -> Result<SourcesArg, String> {
    if s == "propagator" {
        return Ok(SourcesArg::Propagator);
    }
    match s.parse::<usize>() {
        Ok(n) if (1..=64).contains(&n) => Ok(SourcesArg::Count(n)),
        _ => Err(format!(
            "expected a number of sources from 1 to 64 or `propagator`, found `{s}`"
        )),
    }
}

/// Solves the sources of `arg` (Gaussian seeds from `seed`) and prints the report; an
/// error after the report if a source did not converge.
pub fn run_sources(
    arg: SourcesArg,
    seed: u64,
    backend: &SolveBackend,
    gauge: &GaugeField<f64>,
    config: &SolveConfig,
) -> Result<(), CliError> {
    let set = match arg {
        SourcesArg::Count(count) => SourceSet::Gaussian { count, seed },
        SourcesArg::Propagator => SourceSet::Propagator,
    };
    let report = solve_sources_on(backend, gauge, config, set)?;
    print!("{}", render(&report));
    if !report.all_converged() {
        return Err("not every source converged (see the table)".into());
    }
    Ok(())
}

/// The per-source report.
pub fn render(r: &SourcesReport) -> String {
    let mut s = String::new();
    let n = r.sources.len();
    s += &format!("  action      {} ({})\n", r.action, r.parameters);
    s += &format!(
        "  lattice     {}, even-odd preconditioned, even sites\n",
        r.lattice
    );
    s += &format!("  backend     {}\n", r.backend);
    let precision = match r.precision {
        Precision::F64 => "f64",
        _ => "f64 with f32 iterations (defect correction)",
    };
    s += &format!(
        "  solver      block {} on {n} sources at once, precision {precision}, tolerance {:.1e}\n",
        r.solver, r.tolerance
    );
    s += &format!(
        "  set-up      {:.3} s; solve {:.3} s ({:.3} s per source), {} operator applications on all sources\n",
        r.setup.as_secs_f64(),
        r.solve.as_secs_f64(),
        r.solve.as_secs_f64() / n.max(1) as f64,
        r.applications
    );
    s += "  source                      result          iterations  true residual  recomputed\n";
    for l in &r.sources {
        s += &format!(
            "  {:<27} {:<15} {:>10}  {:>13.3e}  {:>10.3e}\n",
            l.label,
            l.result.convergence.to_string(),
            l.result.iterations,
            l.result.true_residual,
            l.recomputed_residual
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_parse_counts_and_propagator() {
        assert_eq!(parse_sources("8"), Ok(SourcesArg::Count(8)));
        assert_eq!(parse_sources("propagator"), Ok(SourcesArg::Propagator));
        for bad in ["0", "65", "x", "-1"] {
            let e = parse_sources(bad).unwrap_err();
            assert!(e.contains(&format!("`{bad}`")), "{e}");
        }
    }
}
