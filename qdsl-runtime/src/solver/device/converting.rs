//! [`ConvertingOperator`]: an operator whose kernels run on device vectors of one
//! precision W, applied to vectors stored in another precision P through the BLAS
//! conversion:
//!
//! ```text
//! out = round_P(M · round_W(in))          (M† likewise)
//! ```
//!
//! Vectors in a format the stencil kernels do not read can take part in a mixed-precision
//! solve this way: each operator application decodes into W, runs W's kernels and
//! re-encodes. (The bit-packed packed20 and packed30 once went through it; the kernels
//! now read and write them directly, [`super::DeviceOperator`], and the conversion is the
//! reference their tests compare with.) The two W temporaries are allocated on first use
//! and reused while the shape stays the same.

use super::precision::DevicePrecision;
use super::vector::DeviceVector;
use crate::solver::{ConvertFrom, LinearOperator, SolverError};
use std::sync::Mutex;

/// The W-precision input and output of the last application.
type Buffers<W> = (DeviceVector<W>, DeviceVector<W>);

/// `O` (an operator on `DeviceVector<W>`) acting on vectors of any precision (see the
/// module doc).
#[derive(Debug)]
pub struct ConvertingOperator<O, W> {
    op: O,
    buffers: Mutex<Option<Buffers<W>>>,
}

impl<O, W: DevicePrecision> ConvertingOperator<O, W> {
    /// Wraps `op`, whose vectors are stored in `W`.
    pub fn new(op: O) -> Self {
        Self {
            op,
            buffers: Mutex::new(None),
        }
    }

    /// The wrapped operator.
    pub fn inner(&self) -> &O {
        &self.op
    }

    /// out ← round_P(M in) (dagger: M†).
    fn run<P: DevicePrecision>(
        &self,
        out: &mut DeviceVector<P>,
        input: &DeviceVector<P>,
        dagger: bool,
    ) -> Result<(), SolverError>
    where
        O: LinearOperator<DeviceVector<W>>,
    {
        let shape = |l: &crate::device::DeviceLayout| (l.sites, l.host_reals);
        let mut guard = self.buffers.lock().unwrap_or_else(|p| p.into_inner());
        let reusable = guard
            .as_ref()
            .is_some_and(|(a, _)| shape(a.layout()) == shape(input.layout()));
        if !reusable {
            let (sites, reals) = shape(input.layout());
            let make = || {
                DeviceVector::<W>::zeros(input.context(), reals, sites).map_err(SolverError::field)
            };
            *guard = Some((make()?, make()?));
        }
        let Some((a, b)) = guard.as_mut() else {
            return Err(SolverError::field(crate::device::DeviceError::Shape(
                "the converting operator has no buffers".into(),
            )));
        };
        a.convert_from(input)?;
        if dagger {
            self.op.apply_dagger(b, a)?;
        } else {
            self.op.apply(b, a)?;
        }
        out.convert_from(b)
    }
}

impl<P, W, O> LinearOperator<DeviceVector<P>> for ConvertingOperator<O, W>
where
    P: DevicePrecision,
    W: DevicePrecision,
    O: LinearOperator<DeviceVector<W>>,
{
    /// out ← round_P(M round_W(in)).
    fn apply(&self, out: &mut DeviceVector<P>, input: &DeviceVector<P>) -> Result<(), SolverError> {
        self.run(out, input, false)
    }

    /// out ← round_P(M† round_W(in)).
    fn apply_dagger(
        &self,
        out: &mut DeviceVector<P>,
        input: &DeviceVector<P>,
    ) -> Result<(), SolverError> {
        self.run(out, input, true)
    }

    /// Those of M (the conversions are vector work, not counted).
    fn flops_per_apply(&self) -> u64 {
        self.op.flops_per_apply()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::device::{DeviceOperator, Single};

    /// `qdsl solve` takes its iteration operator as `dyn LinearOperator + Send + Sync`:
    /// the device operator behind a conversion qualifies (a compile-time check).
    #[test]
    fn a_converting_device_operator_is_send_and_sync() {
        fn shareable<T: Send + Sync>() {}
        shareable::<ConvertingOperator<DeviceOperator<Single>, Single>>();
    }
}

#[cfg(test)]
mod gpu_tests {
    //! Need a GPU (skipped with a message without one): run on the GPU machine with
    //! `cargo test --release -p qdsl-runtime --lib solver::device::converting`.

    use super::*;

    use crate::operator::EvenOddWilson;
    use crate::solver::device::{DeviceContext, DeviceOperator, Double, Single};
    use crate::solver::{
        cg, NormalForm, NormalOperator, Packed20, Packed30, QuantizedField, SolverField,
        SolverOptions,
    };

    use qdsl_core::dsl::variant::TimeBoundary;
    use qdsl_core::field::{ColourSpinorField, GaugeField};
    use qdsl_core::io::{read_gauge, ReadOptions};
    use qdsl_core::lattice::Parity;
    use std::path::Path;
    use std::sync::Arc;

    use crate::testing::context;

    /// MILC's 8⁴ sample configuration of the test data.
    fn milc_sample() -> GaugeField<f64> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/milc/lat.sample.l8");
        read_gauge(&path, &ReadOptions::default())
            .expect("the MILC sample")
            .field
    }

    /// Packed vectors round like the host encoder (qdsl-core's packed format through
    /// [`QuantizedField`]), bit for bit, from f64 vectors on the GPU; and an operator
    /// applied through the conversion equals the f64 CPU operator to the packed format's
    /// bound (f32 arithmetic for packed20).
    #[test]
    #[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
    fn packed_vectors_round_like_the_host_and_the_operator_applies() {
        let (ctx, _dir) = context();
        let gauge = milc_sample();
        let boundary = TimeBoundary::Antiperiodic;
        let cpu = EvenOddWilson::new(gauge.clone(), 0.12, Parity::Even, boundary);
        let layout = cpu.layout();
        let host = ColourSpinorField::<f64>::gaussian(layout, 11);
        let d = DeviceVector::<Double>::upload(&ctx, &host).unwrap();
        let p20 = DeviceVector::<Packed20>::converted(&d);
        assert_eq!(
            &p20.download(layout).unwrap(),
            QuantizedField::<Packed20>::new(host.clone()).field()
        );
        let p30 = DeviceVector::<Packed30>::converted(&d);
        assert_eq!(
            &p30.download(layout).unwrap(),
            QuantizedField::<Packed30>::new(host.clone()).field()
        );
        let single =
            DeviceOperator::<Single>::wilson(&ctx, &gauge, 0.12, Parity::Even, boundary).unwrap();
        let op = ConvertingOperator::<_, Single>::new(single);
        let xh = p20.download(layout).unwrap();
        let mut y = p20.zeros_like();
        op.apply(&mut y, &p20).unwrap();
        let mut want = xh.zeros_like();
        cpu.apply(&mut want, &xh).unwrap();
        let diff: f64 = y
            .download(layout)
            .unwrap()
            .data()
            .iter()
            .zip(want.data())
            .map(|(a, b)| (a - b).norm_sqr())
            .sum::<f64>()
            .sqrt();
        let scale = want.data().iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt();
        assert!(diff <= 1e-4 * scale, "{diff:e} vs {scale:e}");
        assert!(ctx.error().is_none(), "{:?}", ctx.error());
    }

    /// CG on the normal equations of even-odd Wilson (κ = 0.12, MILC's 8⁴ sample,
    /// antiperiodic time) with Krylov vectors in `P` and the operator in `W` reaches a
    /// 1e−10 true residual with reliable updates, recomputed here with the CPU f64
    /// operator on the downloaded solution.
    fn solve_to_1e_10<P: DevicePrecision, W: DevicePrecision>(
        ctx: &Arc<DeviceContext>,
        gauge: &GaugeField<f64>,
    ) {
        let boundary = TimeBoundary::Antiperiodic;
        let cpu = EvenOddWilson::new(gauge.clone(), 0.12, Parity::Even, boundary);
        let layout = cpu.layout();
        let high =
            DeviceOperator::<Double>::wilson(ctx, gauge, 0.12, Parity::Even, boundary).unwrap();
        let inner = DeviceOperator::<W>::wilson(ctx, gauge, 0.12, Parity::Even, boundary).unwrap();
        let low = ConvertingOperator::<_, W>::new(inner);
        let source = ColourSpinorField::<f64>::gaussian(layout, 21);
        // b = M̂† source, so that M̂†M̂ x = b is the normal system of M̂ x = source.
        let mut b_host = source.zeros_like();
        cpu.apply_dagger(&mut b_host, &source).unwrap();
        let b = DeviceVector::<Double>::upload(ctx, &b_host).unwrap();
        let mut x = b.zeros_like();
        let opts = SolverOptions {
            tolerance: 1e-10,
            max_iterations: 5000,
            ..SolverOptions::default()
        };
        let (hn, ln) = (
            NormalOperator::new(&high, NormalForm::MdagM),
            NormalOperator::new(&low, NormalForm::MdagM),
        );
        let name = P::FORMAT.name();
        let result = cg::<_, DeviceVector<P>, _, _>(&hn, &ln, &b, &mut x, &opts).unwrap();
        assert!(result.is_converged(), "{name}: {result:?}");
        assert!(result.reliable_updates > 0, "{name}: {result:?}");
        // The true residual ‖b − M̂†M̂ x‖/‖b‖ with the CPU operator in f64.
        let xh = x.download(layout).unwrap();
        let (mut t, mut r) = (xh.zeros_like(), xh.zeros_like());
        cpu.apply(&mut t, &xh).unwrap();
        cpu.apply_dagger(&mut r, &t).unwrap();
        let res: f64 = r
            .data()
            .iter()
            .zip(b_host.data())
            .map(|(a, b)| (b - a).norm_sqr())
            .sum::<f64>()
            .sqrt()
            / b_host.norm_sqr().sqrt();
        assert!(res <= 1e-10, "{name}: true residual {res:e}");
        assert!(ctx.error().is_none(), "{name}: {:?}", ctx.error());
    }

    /// f64–packed20 (operator in f32) and f64–packed30 (operator in f64).
    #[test]
    #[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
    fn f64_packed_cg_reaches_1e_10_on_the_milc_sample() {
        let (ctx, _dir) = context();
        let gauge = milc_sample();
        solve_to_1e_10::<Packed20, Single>(&ctx, &gauge);
        solve_to_1e_10::<Packed30, Double>(&ctx, &gauge);
    }
}
