//! The even-odd operators on device fields, built from two hop kernels each:
//! [`DeviceEvenOddWilson`] and [`DeviceEvenOddStaggered`].

use crate::device::{DeviceError, DeviceField, DeviceLayout, Gpu};
use crate::tune::Tuner;
use qdsl_core::dsl::variant::{OutputSites, StorageFormat};
use qdsl_core::dsl::{Stencil, Variant};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_kernels::{ImprovedStaggeredHop, NaiveStaggeredHop, WilsonHop};

use super::*;

/// The hop variant of a device operator: parity, dagger, xpay and the given formats.
pub(super) fn device_variant(base: &Variant, sites: Parity, dagger: bool, xpay: bool) -> Variant {
    Variant {
        sites: OutputSites::Parity(sites),
        dagger,
        xpay,
        ..*base
    }
}

/// The four hop kernels of a two-hop even-odd operator: (q ← p, p ← q with xpay) × dagger.
#[derive(Debug)]
pub(super) struct TwoHops {
    /// [dagger as usize][0: to q, no xpay; 1: to p, xpay]
    hops: [[DeviceStencil; 2]; 2],
}

impl TwoHops {
    pub(super) fn new<S: Stencil>(
        gpu: &Gpu,
        base: &Variant,
        parity: Parity,
        with_dagger: bool,
    ) -> Result<Self, OperatorError> {
        let make = |dagger: bool| -> Result<[DeviceStencil; 2], OperatorError> {
            // A dagger-less operator (Hermitian A) reuses the plain kernels.
            let dagger = dagger && with_dagger;
            Ok([
                DeviceStencil::of::<S>(
                    gpu,
                    &device_variant(base, parity.opposite(), dagger, false),
                )?,
                DeviceStencil::of::<S>(gpu, &device_variant(base, parity, dagger, true))?,
            ])
        };
        Ok(Self {
            hops: [make(false)?, make(true)?],
        })
    }

    /// out = a ψ + b D_pq (D_qp ψ) with the extra gauge inputs `links`; `tmp` holds
    /// the q-parity intermediate.
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &self,
        gpu: &Gpu,
        tuner: &Tuner,
        lattice: &Lattice,
        links: &[&DeviceField],
        (a, b): (f64, f64),
        out: &mut DeviceField,
        psi: &DeviceField,
        tmp: &mut DeviceField,
        dagger: bool,
    ) -> Result<(), OperatorError> {
        let [to_q, to_p] = &self.hops[usize::from(dagger)];
        let mut inputs: Vec<&DeviceField> = vec![psi];
        inputs.extend_from_slice(links);
        to_q.run(gpu, tuner, lattice, tmp, &inputs, None)?;
        let mut inputs: Vec<&DeviceField> = vec![&*tmp];
        inputs.extend_from_slice(links);
        let xpay = DeviceXpay { a, x: psi, b };
        to_p.run(gpu, tuner, lattice, out, &inputs, Some(&xpay))
    }

    /// The hop to the other parity q (`to_p` false, no xpay) or back to p (`to_p`
    /// true, xpay), plain or dagger.
    pub(super) fn hop(&self, dagger: bool, to_p: bool) -> &DeviceStencil {
        &self.hops[usize::from(dagger)][usize::from(to_p)]
    }

    pub(super) fn flops_per_site(&self) -> usize {
        self.hops[0][0].info().flops_per_site + self.hops[0][1].info().flops_per_site
    }
}

/// A zero spinor field of `reals` reals per site on `sites` sites in `format`.
pub fn device_spinor(
    gpu: &Gpu,
    format: StorageFormat,
    reals: usize,
    sites: usize,
) -> Result<DeviceField, DeviceError> {
    let f = crate::device::DeviceFormat::Fermion(format.fermion_format());
    let layout = DeviceLayout::new(f, reals, sites)?;
    DeviceField::zeros(gpu, layout)
}

/// M̂ = 1 − κ² H_pq H_qp on device fields (see [`super::EvenOddWilson`]).
#[derive(Debug)]
pub struct DeviceEvenOddWilson {
    hops: TwoHops,
    gauge: DeviceField,
    lattice: Lattice,
    kappa: f64,
    tmp: DeviceField,
}

impl DeviceEvenOddWilson {
    /// M̂ on `parity` with the uploaded links `gauge`; `formats` gives the storage
    /// formats, the compression and the time boundary (its sites, dagger and xpay are
    /// set per hop).
    pub fn new(
        gpu: &Gpu,
        gauge: DeviceField,
        lattice: Lattice,
        kappa: f64,
        parity: Parity,
        formats: &Variant,
    ) -> Result<Self, OperatorError> {
        let (base, format) = (*formats, formats.spinor);
        let hops = TwoHops::new::<WilsonHop>(gpu, &base, parity, true)?;
        let tmp = device_spinor(gpu, format, 24, lattice.half_volume())?;
        Ok(Self {
            hops,
            gauge,
            lattice,
            kappa,
            tmp,
        })
    }

    /// out = M̂ ψ (dagger: M̂† ψ), queued on the GPU's stream.
    pub fn apply(
        &mut self,
        gpu: &Gpu,
        tuner: &Tuner,
        out: &mut DeviceField,
        psi: &DeviceField,
        dagger: bool,
    ) -> Result<(), OperatorError> {
        let k2 = self.kappa * self.kappa;
        self.hops.apply(
            gpu,
            tuner,
            &self.lattice,
            &[&self.gauge],
            (1.0, -k2),
            out,
            psi,
            &mut self.tmp,
            dagger,
        )
    }

    /// Flops of one application: (V/2)(1320 + 1392).
    pub fn flops(&self) -> u64 {
        (self.lattice.half_volume() * self.hops.flops_per_site()) as u64
    }
}

/// A = 4m² − D_pq D_qp on device fields (see [`super::EvenOddStaggered`]): naive
/// staggered with one gauge field, improved with fat and long links.
#[derive(Debug)]
pub struct DeviceEvenOddStaggered {
    hops: TwoHops,
    links: Vec<DeviceField>,
    lattice: Lattice,
    mass: f64,
    tmp: DeviceField,
}

impl DeviceEvenOddStaggered {
    /// A on `parity`: `links` = `[U]` (naive) or `[fat, long]` (improved), recon 18, the
    /// spinor and gauge storage formats taken from `formats`.
    pub fn new(
        gpu: &Gpu,
        links: Vec<DeviceField>,
        lattice: Lattice,
        mass: f64,
        parity: Parity,
        formats: &Variant,
    ) -> Result<Self, OperatorError> {
        let base = Variant {
            spinor: formats.spinor,
            gauge: formats.gauge,
            ..Variant::default()
        };
        let format = base.spinor;
        let hops = match links.len() {
            1 => TwoHops::new::<NaiveStaggeredHop>(gpu, &base, parity, false)?,
            2 => TwoHops::new::<ImprovedStaggeredHop>(gpu, &base, parity, false)?,
            n => {
                return Err(OperatorError::Field {
                    kernel: "staggered operator".into(),
                    field: "links".into(),
                    expected: "1 (naive) or 2 (fat, long) gauge fields".into(),
                    found: n.to_string(),
                })
            }
        };
        let tmp = device_spinor(gpu, format, 6, lattice.half_volume())?;
        Ok(Self {
            hops,
            links,
            lattice,
            mass,
            tmp,
        })
    }

    /// out = A ψ (A is Hermitian), queued on the GPU's stream.
    pub fn apply(
        &mut self,
        gpu: &Gpu,
        tuner: &Tuner,
        out: &mut DeviceField,
        psi: &DeviceField,
    ) -> Result<(), OperatorError> {
        let links: Vec<&DeviceField> = self.links.iter().collect();
        let m2 = 4.0 * self.mass * self.mass;
        self.hops.apply(
            gpu,
            tuner,
            &self.lattice,
            &links,
            (m2, -1.0),
            out,
            psi,
            &mut self.tmp,
            false,
        )
    }

    /// Flops of one application: (V/2)(f_hop + f_hop,xpay).
    pub fn flops(&self) -> u64 {
        (self.lattice.half_volume() * self.hops.flops_per_site()) as u64
    }
}
