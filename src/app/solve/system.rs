//! [`HostSystem`]: an action's system on the host in f64 (links, clover field), from
//! which both backends build their operators.

use super::config::{FermionBoundary, Parameters};
use super::{wilson_mass, Action, SolveError};
use crate::app::propagator::prepared_links;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{CloverField, ColourSpinorField, GaugeField, SpinorLayout};
use qdsl_core::gauge::{clover_field_with, FieldStrengthTrace, OpenBoundary};
use qdsl_core::lattice::Parity;
use qdsl_core::Real;
use qdsl_kernels::{asqtad_links, fold_staggered_phases, hisq_links};
use qdsl_runtime::operator::cpu::{EvenOddStaggered, EvenOddWilson, StaggeredLinks};
use qdsl_runtime::operator::EvenOddClover;
use qdsl_runtime::solver::device::{DeviceContext, DeviceOperator, DevicePrecision};
use qdsl_runtime::solver::LinearOperator;
use std::sync::Arc;

/// A CPU operator in precision T, as a trait object.
pub(super) type CpuOperator<T> = Box<dyn LinearOperator<ColourSpinorField<T>> + Send + Sync>;

/// The links of the staggered operator, in f64 (phases and the time `boundary` folded
/// in). Asqtad with tadpole factor `u0`, HISQ with Naik correction `epsilon_naik`.
fn staggered_links(
    gauge: &GaugeField<f64>,
    action: Action,
    u0: f64,
    epsilon_naik: f64,
    boundary: TimeBoundary,
) -> Result<StaggeredLinks<f64>, SolveError> {
    let gauge = &prepared_links(gauge, action, boundary, 1.0);
    let smearing = |message: String| SolveError::Smearing { action, message };
    let (fat, long) = match action {
        Action::Asqtad => asqtad_links(gauge, u0).map_err(|e| smearing(e.to_string()))?,
        Action::Hisq => hisq_links(gauge, epsilon_naik).map_err(|e| smearing(e.to_string()))?,
        _ => return Ok(StaggeredLinks::Naive(fold_staggered_phases(gauge))),
    };
    Ok(StaggeredLinks::Improved { fat, long })
}

/// The system of an action on the host, in f64: what both backends build their
/// operators from.
pub(super) enum HostSystem {
    Wilson {
        gauge: GaugeField<f64>,
        kappa: f64,
        boundary: TimeBoundary,
    },
    Staggered {
        links: StaggeredLinks<f64>,
        mass: f64,
    },
    /// Clover and twisted mass: the host operator, and the links, the full-lattice
    /// clover field A and the twist μ it was built from.
    Clover {
        op: Box<EvenOddClover<f64>>,
        gauge: GaugeField<f64>,
        clover: CloverField<f64>,
        mu: f64,
        boundary: TimeBoundary,
    },
}

/// The parity the system is solved on.
pub(super) const PARITY: Parity = Parity::Even;

impl HostSystem {
    /// The system of `action` with its checked `parameters` on the thin links `gauge`
    /// (clover and twisted mass: the field strength's `trace` kept or removed).
    /// Open and SF boundaries (Wilson-like actions only) make every Wilson-like system a
    /// clover one: the hop links and the clover field of [`OpenBoundary::clover_fields`]
    /// (c_sw = 0 for Wilson, so Wilson is then solved in mass normalisation).
    pub(super) fn new(
        gauge: &GaugeField<f64>,
        parameters: &Parameters,
        action: Action,
        u0: f64,
        boundary: FermionBoundary,
        trace: FieldStrengthTrace,
    ) -> Result<Self, SolveError> {
        let boundary = match boundary {
            FermionBoundary::Wrap(b) => b,
            FermionBoundary::Open(open) => {
                return Self::open(gauge, parameters, action, &open, trace)
            }
        };
        Ok(match *parameters {
            Parameters::Wilson { kappa, .. } if action == Action::Wilson => HostSystem::Wilson {
                gauge: gauge.clone(),
                kappa,
                boundary,
            },
            Parameters::Wilson { kappa, csw, mu } => {
                let clover = clover_field_with(gauge, wilson_mass(kappa), csw, trace);
                HostSystem::Clover {
                    op: Box::new(EvenOddClover::from_clover(
                        gauge.clone(),
                        &clover,
                        mu,
                        PARITY,
                        boundary,
                    )?),
                    gauge: gauge.clone(),
                    clover,
                    mu,
                    boundary,
                }
            }
            Parameters::Staggered {
                mass, epsilon_naik, ..
            } => HostSystem::Staggered {
                links: staggered_links(gauge, action, u0, epsilon_naik, boundary)?,
                mass,
            },
        })
    }

    /// The clover system with open or SF boundaries (see [`Self::new`]).
    fn open(
        gauge: &GaugeField<f64>,
        parameters: &Parameters,
        action: Action,
        open: &OpenBoundary,
        trace: FieldStrengthTrace,
    ) -> Result<Self, SolveError> {
        let Parameters::Wilson { kappa, csw, mu } = *parameters else {
            return Err(SolveError::OpenBoundary(format!(
                "{} boundaries apply to the Wilson, clover and twisted-mass actions, not to \
                 {action}",
                open.kind
            )));
        };
        let (links, clover) = open
            .clover_fields(gauge, wilson_mass(kappa), csw, trace)
            .map_err(|e| SolveError::OpenBoundary(e.to_string()))?;
        // No link crosses the time boundary any more: the kernels' wrap sign is moot.
        let boundary = TimeBoundary::Periodic;
        Ok(HostSystem::Clover {
            op: Box::new(EvenOddClover::from_clover(
                links.clone(),
                &clover,
                mu,
                PARITY,
                boundary,
            )?),
            gauge: links,
            clover,
            mu,
            boundary,
        })
    }

    /// The CPU operator in precision T and the layout it acts on.
    pub(super) fn cpu_operator<T: Real>(&self) -> (CpuOperator<T>, SpinorLayout) {
        match self {
            HostSystem::Wilson {
                gauge,
                kappa,
                boundary,
            } => {
                let op = EvenOddWilson::<T>::new(gauge.cast(), *kappa, PARITY, *boundary);
                let layout = op.layout();
                (Box::new(op), layout)
            }
            HostSystem::Staggered { links, mass } => {
                let op = EvenOddStaggered::<T>::new(links.cast(), *mass, PARITY);
                let layout = op.layout();
                (Box::new(op), layout)
            }
            HostSystem::Clover { op, .. } => {
                let op = op.cast::<T>();
                let layout = op.layout();
                (Box::new(op), layout)
            }
        }
    }

    /// The CPU operator in precision T on `n` right-hand sides at once (fields of n
    /// slices) and the layout of one source.
    pub(super) fn cpu_operator_sources<T: Real>(&self, n: usize) -> (CpuOperator<T>, SpinorLayout) {
        match self {
            HostSystem::Wilson {
                gauge,
                kappa,
                boundary,
            } => {
                let op = EvenOddWilson::<T>::new(gauge.cast(), *kappa, PARITY, *boundary);
                let layout = op.layout();
                (Box::new(op.with_sources(n)), layout)
            }
            HostSystem::Staggered { links, mass } => {
                let op = EvenOddStaggered::<T>::new(links.cast(), *mass, PARITY);
                let layout = op.layout();
                (Box::new(op.with_sources(n)), layout)
            }
            HostSystem::Clover { op, .. } => {
                let op = op.cast::<T>();
                let layout = op.layout();
                (Box::new(op.with_sources(n)), layout)
            }
        }
    }

    /// The device operator for vectors of precision P holding `n` right-hand sides
    /// (the multi-RHS kernels for n > 1).
    pub(super) fn device_operator_sources<P: DevicePrecision>(
        &self,
        ctx: &Arc<DeviceContext>,
        n: usize,
    ) -> Result<DeviceOperator<P>, SolveError> {
        match self {
            HostSystem::Wilson {
                gauge,
                kappa,
                boundary,
            } => DeviceOperator::wilson_on_sources(ctx, gauge, *kappa, PARITY, *boundary, n),
            HostSystem::Staggered { links, mass } => {
                DeviceOperator::staggered_on_sources(ctx, links, *mass, PARITY, n)
            }
            HostSystem::Clover {
                gauge,
                clover,
                mu,
                boundary,
                ..
            } => DeviceOperator::clover_on_sources(ctx, gauge, clover, *mu, PARITY, *boundary, n),
        }
        .map_err(|e| SolveError::Device(e.to_string()))
    }

    /// The device operator for vectors of precision P.
    pub(super) fn device_operator<P: DevicePrecision>(
        &self,
        ctx: &Arc<DeviceContext>,
    ) -> Result<DeviceOperator<P>, SolveError> {
        match self {
            HostSystem::Wilson {
                gauge,
                kappa,
                boundary,
            } => DeviceOperator::wilson(ctx, gauge, *kappa, PARITY, *boundary),
            HostSystem::Staggered { links, mass } => {
                DeviceOperator::staggered(ctx, links, *mass, PARITY)
            }
            HostSystem::Clover {
                gauge,
                clover,
                mu,
                boundary,
                ..
            } => DeviceOperator::clover(ctx, gauge, clover, *mu, PARITY, *boundary),
        }
        .map_err(|e| SolveError::Device(e.to_string()))
    }
}
