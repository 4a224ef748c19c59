//! `qdsl generate`: quenched gauge-field generation (heatbath + over-relaxation, or HMC)
//! with checkpoints, a plaquette history and resumption after a crash.
//!
//! A run is a sequence of updates numbered 0, 1, …, `therm + sweeps − 1`; an update is one
//! heatbath sweep followed by `or_per_hb` over-relaxation sweeps, or one HMC trajectory.
//! The plaquette P is measured after every update. After thermalisation, every
//! `save_every`-th update (and the last) writes a checkpoint into the run directory:
//!
//! * `cfg_NNNNNN.lime`: the configuration after update NNNNNN − 1 (i.e. NNNNNN updates
//!   done), an ILDG LIME file in f64 with its SciDAC checksum and qdsl's `<plaq>` record
//!   ([`write_lime_gauge`]);
//! * `state.json`: the run's parameters, the number of updates done, the checkpoint's
//!   file name and the history so far (the random generator's state is the seed and the
//!   update number: every update draws from counter-based streams indexed by it);
//! * `history.json` and `history.svg`: the plaquette history and its plot.
//!
//! Each file is written to a temporary name in the same directory and renamed over the
//! old one (atomic on POSIX file systems), the configuration before the state that names
//! it: a crash at any point leaves a state file naming a complete configuration, and
//! resuming from it regenerates everything after it bit for bit.
//!
//! On a GPU ([`RunControl::gpu`]) the updates run on the device with the same random
//! streams ([`GpuHeatbath`], [`GpuHmc`]): the links stay there, P is reduced there, and
//! the links come back only for the checkpoints. A GPU run agrees with the CPU run of the
//! same seed to rounding (the test `gpu_runs_equal_the_cpu_runs`), and is itself
//! deterministic, so its resumption is bit for bit too.

use plotters::prelude::*;
use qdsl_core::dsl::paths::{ActionSpec, GaugeAction};
use qdsl_core::field::GaugeField;
use qdsl_core::gauge::generate::{Heatbath, Hmc, Integrator, Level, Series};
use qdsl_core::gauge::plaquette;
use qdsl_core::io::lime_gauge::{write_lime_gauge, LimeWriteOptions};
use qdsl_core::io::{read_gauge, ReadOptions};
use qdsl_core::lattice::Lattice;
use qdsl_kernels::{IwasakiGauge, SymanzikGauge, WilsonGauge};
use qdsl_runtime::device::Gpu;
use qdsl_runtime::generate::{DeviceGauge, DevicePlaquette, GpuHeatbath, GpuHmc};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Boxed error of the generation app (file names and expected/found values in the text).
pub type GenerateAppError = Box<dyn std::error::Error + Send + Sync>;

/// The gauge action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ActionKind {
    /// Wilson plaquette action.
    Wilson,
    /// Tree-level Symanzik (Lüscher–Weisz): c₁ = −1/12.
    Symanzik,
    /// Iwasaki: c₁ = −0.331.
    Iwasaki,
}

impl ActionKind {
    /// The action's `link_paths!` spec (qdsl-kernels).
    pub fn spec(self) -> ActionSpec {
        match self {
            ActionKind::Wilson => WilsonGauge::spec(),
            ActionKind::Symanzik => SymanzikGauge::spec(),
            ActionKind::Iwasaki => IwasakiGauge::spec(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            ActionKind::Wilson => "wilson",
            ActionKind::Symanzik => "symanzik",
            ActionKind::Iwasaki => "iwasaki",
        }
    }
}

/// The update algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Algorithm {
    /// One Cabibbo–Marinari heatbath sweep and `or_per_hb` over-relaxation sweeps.
    Heatbath,
    /// One HMC trajectory (Omelyan or leapfrog, `md_steps` steps of length τ/md_steps).
    Hmc,
}

/// The parameters of a run (all recorded in the state file; a resumed run must match).
#[derive(Clone, Debug, PartialEq)]
pub struct GenerateParams {
    /// The gauge action.
    pub action: ActionKind,
    /// The coupling β.
    pub beta: f64,
    /// The lattice extents.
    pub dims: [usize; 4],
    /// The algorithm.
    pub algorithm: Algorithm,
    /// Updates kept after thermalisation.
    pub sweeps: u64,
    /// Over-relaxation sweeps per heatbath sweep.
    pub or_per_hb: usize,
    /// HMC: molecular-dynamics steps per trajectory.
    pub md_steps: usize,
    /// HMC: the integrator.
    pub integrator: Integrator,
    /// HMC: trajectory length τ.
    pub tau: f64,
    /// Thermalisation updates (measured, not saved).
    pub therm: u64,
    /// A checkpoint every this many updates after thermalisation (0: only at the end).
    pub save_every: u64,
    /// The seed of every random stream.
    pub seed: u64,
    /// Start from a hot (Haar-random) field instead of the unit field.
    pub hot_start: bool,
}

impl GenerateParams {
    fn to_json(&self) -> Value {
        json!({
            "action": self.action.name(),
            "beta": self.beta,
            "lattice": self.dims,
            "algorithm": match self.algorithm { Algorithm::Heatbath => "heatbath", Algorithm::Hmc => "hmc" },
            "sweeps": self.sweeps,
            "or_per_hb": self.or_per_hb,
            "md_steps": self.md_steps,
            "integrator": match self.integrator { Integrator::Leapfrog => "leapfrog", Integrator::Omelyan => "omelyan" },
            "tau": self.tau,
            "therm": self.therm,
            "save_every": self.save_every,
            "seed": self.seed,
            "start": if self.hot_start { "hot" } else { "cold" },
        })
    }

    fn total(&self) -> u64 {
        self.therm + self.sweeps
    }

    /// Whether a checkpoint is written after update `n` (0-based).
    fn saves_after(&self, n: u64) -> bool {
        n + 1 == self.total()
            || (self.save_every > 0
                && n >= self.therm
                && (n + 1 - self.therm).is_multiple_of(self.save_every))
    }
}

/// The updater of a run.
enum Updater {
    Heatbath {
        hb: Box<Heatbath>,
        or_per_hb: usize,
    },
    Hmc(Hmc),
    /// The updates on a GPU: the links live on the device, the plaquette is reduced
    /// there, and the links come back to the host only for the checkpoints.
    Gpu {
        gpu: Rc<Gpu>,
        links: Box<DeviceGauge>,
        plaquette: Box<DevicePlaquette>,
        update: GpuUpdate,
    },
}

/// What a GPU update runs.
enum GpuUpdate {
    Heatbath {
        hb: Box<GpuHeatbath>,
        or_per_hb: usize,
    },
    Hmc(Box<GpuHmc>),
}

/// One update's record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UpdateRecord {
    /// P after the update.
    pub plaquette: f64,
    /// HMC: ΔH of the trajectory.
    pub delta_h: Option<f64>,
    /// HMC: whether it was accepted.
    pub accepted: Option<bool>,
}

/// What a run did.
#[derive(Clone, Debug, PartialEq)]
pub struct GenerateReport {
    /// One record per update, from the start of the run (resumed runs included).
    pub history: Vec<UpdateRecord>,
    /// The checkpoints written by this invocation.
    pub checkpoints: Vec<PathBuf>,
    /// The update the run started from (0, or the resumed checkpoint's count).
    pub resumed_from: u64,
}

impl GenerateReport {
    /// The plaquettes after thermalisation.
    pub fn measured(&self, therm: u64) -> Series {
        Series::new(
            self.history
                .iter()
                .skip(therm as usize)
                .map(|r| r.plaquette)
                .collect(),
        )
    }
}

/// How a run reports progress and whether it stops early.
pub struct RunControl<'a> {
    /// Called after each update with (update index, total, record).
    pub progress: &'a mut dyn FnMut(u64, u64, &UpdateRecord),
    /// Stop (as if killed) after this many updates of this invocation, without writing
    /// anything more: for testing the resumption.
    pub stop_after: Option<u64>,
    /// Run the updates on this GPU (heatbath: the sweeps and the links on the device;
    /// HMC: the force), else on the CPU. The same seed gives the same run to rounding.
    pub gpu: Option<Rc<Gpu>>,
}

/// Runs (or resumes, when `resume` is set and `dir/state.json` exists) the generation
/// into `dir`.
pub fn generate(
    params: &GenerateParams,
    dir: &Path,
    resume: bool,
    control: RunControl<'_>,
) -> Result<GenerateReport, GenerateAppError> {
    let lattice = Lattice::new(params.dims)?;
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("{}: cannot create the run directory: {e}", dir.display()))?;
    let state_path = dir.join("state.json");
    let (mut u, mut history, start) = if resume && state_path.exists() {
        load_state(params, dir, &state_path)?
    } else {
        if state_path.exists() {
            return Err(format!(
                "{}: a run's state file exists; pass --resume to continue it, or choose another directory",
                state_path.display()
            )
            .into());
        }
        let u = if params.hot_start {
            GaugeField::random(lattice, params.seed)
        } else {
            GaugeField::unit(lattice)
        };
        (u, Vec::new(), 0)
    };
    let mut updater = updater(params, lattice, control.gpu.clone(), &u)?;
    let mut checkpoints = Vec::new();
    for (done_here, n) in (start..params.total()).enumerate() {
        if control.stop_after.is_some_and(|s| done_here as u64 >= s) {
            break;
        }
        let record = match &mut updater {
            Updater::Heatbath { hb, or_per_hb } => {
                hb.heatbath_sweep(&mut u, params.seed, n);
                for _ in 0..*or_per_hb {
                    hb.overrelaxation_sweep(&mut u);
                }
                UpdateRecord {
                    plaquette: plaquette(&u).average,
                    delta_h: None,
                    accepted: None,
                }
            }
            Updater::Gpu {
                gpu,
                links,
                plaquette,
                update,
            } => {
                let (delta_h, accepted) = match update {
                    GpuUpdate::Heatbath { hb, or_per_hb } => {
                        hb.heatbath_sweep(gpu, links, params.seed, n)?;
                        for _ in 0..*or_per_hb {
                            hb.overrelaxation_sweep(gpu, links)?;
                        }
                        (None, None)
                    }
                    GpuUpdate::Hmc(hmc) => {
                        let t = hmc.trajectory(gpu, links, params.seed, n)?;
                        (Some(t.delta_h), Some(t.accepted))
                    }
                };
                if params.saves_after(n) {
                    u = links.download(gpu)?;
                }
                UpdateRecord {
                    plaquette: plaquette.plaquette(gpu, links)?,
                    delta_h,
                    accepted,
                }
            }
            Updater::Hmc(hmc) => {
                let t = hmc.trajectory(&mut u, params.seed, n)?;
                UpdateRecord {
                    plaquette: plaquette(&u).average,
                    delta_h: Some(t.delta_h),
                    accepted: Some(t.accepted),
                }
            }
        };
        history.push(record);
        (control.progress)(n, params.total(), &record);
        if params.saves_after(n) {
            checkpoints.push(save_checkpoint(params, dir, &u, n + 1, &history)?);
        }
    }
    Ok(GenerateReport {
        history,
        checkpoints,
        resumed_from: start,
    })
}

/// The updater of `params` on `gpu` (or the CPU), starting from links `u`.
fn updater(
    params: &GenerateParams,
    lattice: Lattice,
    gpu: Option<Rc<Gpu>>,
    u: &GaugeField<f64>,
) -> Result<Updater, GenerateAppError> {
    let spec = params.action.spec();
    let hmc = || -> Result<Hmc, GenerateAppError> {
        Ok(Hmc::new(
            vec![Level::new(
                &spec,
                params.beta,
                params.md_steps,
                params.integrator,
            )?],
            params.tau,
        )?)
    };
    let Some(gpu) = gpu else {
        return Ok(match params.algorithm {
            Algorithm::Heatbath => Updater::Heatbath {
                hb: Box::new(Heatbath::new(&spec, params.beta, lattice)?),
                or_per_hb: params.or_per_hb,
            },
            Algorithm::Hmc => Updater::Hmc(hmc()?),
        });
    };
    let update = match params.algorithm {
        Algorithm::Heatbath => GpuUpdate::Heatbath {
            hb: Box::new(GpuHeatbath::new(&gpu, &spec, params.beta, lattice)?),
            or_per_hb: params.or_per_hb,
        },
        Algorithm::Hmc => GpuUpdate::Hmc(Box::new(GpuHmc::new(&gpu, &hmc()?, lattice)?)),
    };
    Ok(Updater::Gpu {
        links: Box::new(DeviceGauge::upload(&gpu, u)?),
        plaquette: Box::new(DevicePlaquette::new(&gpu)?),
        gpu,
        update,
    })
}

/// The checkpoint's file name after `done` updates.
fn checkpoint_name(done: u64) -> String {
    format!("cfg_{done:06}.lime")
}

/// Writes `path` through `write` into a temporary file beside it, then renames it over
/// `path` (atomic on POSIX file systems).
fn write_atomically(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<(), GenerateAppError>,
) -> Result<(), GenerateAppError> {
    let tmp = path.with_extension("tmp");
    write(&tmp)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        format!(
            "{}: cannot rename {} into place: {e}",
            path.display(),
            tmp.display()
        )
        .into()
    })
}

fn history_json(params: &GenerateParams, history: &[UpdateRecord]) -> Value {
    let measured = Series::new(
        history
            .iter()
            .skip(params.therm as usize)
            .map(|r| r.plaquette)
            .collect(),
    );
    let summary = if measured.len() >= 4 {
        let ac = measured.autocorrelation_time();
        json!({"mean": measured.mean(), "error": ac.error, "tau_int": ac.tau_int, "window": ac.window, "count": measured.len()})
    } else {
        Value::Null
    };
    json!({
        "plaquette": history.iter().map(|r| r.plaquette).collect::<Vec<_>>(),
        "delta_h": history.iter().map(|r| r.delta_h).collect::<Vec<_>>(),
        "accepted": history.iter().map(|r| r.accepted).collect::<Vec<_>>(),
        "therm": params.therm,
        "summary": summary,
    })
}

fn save_checkpoint(
    params: &GenerateParams,
    dir: &Path,
    u: &GaugeField<f64>,
    done: u64,
    history: &[UpdateRecord],
) -> Result<PathBuf, GenerateAppError> {
    let cfg = dir.join(checkpoint_name(done));
    write_atomically(&cfg, |tmp| {
        Ok(write_lime_gauge(tmp, u, &LimeWriteOptions::default())?)
    })?;
    let hist = history_json(params, history);
    let state = json!({
        "format": "qdsl-generate-state",
        "version": 1,
        "params": params.to_json(),
        "updates_done": done,
        "checkpoint": checkpoint_name(done),
        "history": hist,
    });
    let text = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default();
    write_atomically(&dir.join("history.json"), |tmp| {
        std::fs::write(tmp, text(&hist)).map_err(|e| format!("{}: {e}", tmp.display()).into())
    })?;
    write_atomically(&dir.join("history.svg"), |tmp| {
        write_plot(params, history, tmp)
    })?;
    write_atomically(&dir.join("state.json"), |tmp| {
        std::fs::write(tmp, text(&state)).map_err(|e| format!("{}: {e}", tmp.display()).into())
    })?;
    Ok(cfg)
}

/// Reads the state file and its checkpoint; an error names the file and the key whose
/// value differs from this invocation's.
fn load_state(
    params: &GenerateParams,
    dir: &Path,
    state_path: &Path,
) -> Result<(GaugeField<f64>, Vec<UpdateRecord>, u64), GenerateAppError> {
    let name = state_path.display();
    let text = std::fs::read_to_string(state_path).map_err(|e| format!("{name}: {e}"))?;
    let state: Value =
        serde_json::from_str(&text).map_err(|e| format!("{name}: expected JSON, found: {e}"))?;
    if state["format"] != "qdsl-generate-state" {
        return Err(format!(
            "{name}: expected format \"qdsl-generate-state\", found {}",
            state["format"]
        )
        .into());
    }
    let want = params.to_json();
    for (key, value) in want.as_object().into_iter().flatten() {
        if key == "sweeps" || key == "save_every" {
            continue; // a run may be extended, or saved more or less often
        }
        if &state["params"][key] != value {
            return Err(format!(
                "{name}: the run was started with {key} = {}, this invocation has {key} = {value}",
                state["params"][key]
            )
            .into());
        }
    }
    let done = state["updates_done"].as_u64().ok_or_else(|| {
        format!(
            "{name}: expected an integer updates_done, found {}",
            state["updates_done"]
        )
    })?;
    let cfg_name = state["checkpoint"].as_str().ok_or_else(|| {
        format!(
            "{name}: expected a checkpoint file name, found {}",
            state["checkpoint"]
        )
    })?;
    let file = read_gauge(dir.join(cfg_name), &ReadOptions::default())?;
    if file.field.lattice().dims() != params.dims {
        return Err(format!(
            "{cfg_name}: expected lattice {:?}, found {:?}",
            params.dims,
            file.field.lattice().dims()
        )
        .into());
    }
    let h = &state["history"];
    let plaq = h["plaquette"].as_array().cloned().unwrap_or_default();
    if plaq.len() as u64 != done {
        return Err(format!(
            "{name}: expected {done} plaquettes in the history, found {}",
            plaq.len()
        )
        .into());
    }
    let history = (0..done as usize)
        .map(|i| {
            Ok(UpdateRecord {
                plaquette: plaq[i]
                    .as_f64()
                    .ok_or_else(|| format!("{name}: plaquette {i} is not a number"))?,
                delta_h: h["delta_h"][i].as_f64(),
                accepted: h["accepted"][i].as_bool(),
            })
        })
        .collect::<Result<Vec<_>, GenerateAppError>>()?;
    Ok((file.field, history, done))
}

/// Draws P against the update number as an SVG file, thermalisation shaded apart.
fn write_plot(
    params: &GenerateParams,
    history: &[UpdateRecord],
    path: &Path,
) -> Result<(), GenerateAppError> {
    let e = |x: &dyn std::fmt::Display| -> GenerateAppError {
        format!("{}: {x}", path.display()).into()
    };
    let ys: Vec<(f64, f64)> = history
        .iter()
        .enumerate()
        .map(|(i, r)| (i as f64, r.plaquette))
        .collect();
    let (lo, hi) = ys.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| {
        (lo.min(p.1), hi.max(p.1))
    });
    let pad = ((hi - lo) * 0.05).max(1e-6);
    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let title = format!(
        "{} beta = {} {:?} {:?}",
        params.action.name(),
        params.beta,
        params.dims,
        params.algorithm
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..(history.len().max(1) as f64), (lo - pad)..(hi + pad))
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc("update")
        .y_desc("plaquette")
        .draw()
        .map_err(|x| e(&x))?;
    let therm = params.therm as f64;
    chart
        .draw_series(LineSeries::new(
            ys.iter().copied().filter(|p| p.0 < therm),
            &RED,
        ))
        .map_err(|x| e(&x))?
        .label("thermalisation")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
    chart
        .draw_series(LineSeries::new(
            ys.iter().copied().filter(|p| p.0 >= therm - 1.0),
            &BLUE,
        ))
        .map_err(|x| e(&x))?
        .label("measured")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
    chart
        .configure_series_labels()
        .background_style(WHITE)
        .border_style(BLACK)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(algorithm: Algorithm) -> GenerateParams {
        GenerateParams {
            action: ActionKind::Wilson,
            beta: 5.8,
            dims: [4, 4, 4, 4],
            algorithm,
            sweeps: 6,
            or_per_hb: 2,
            md_steps: 6,
            integrator: Integrator::Omelyan,
            tau: 1.0,
            therm: 2,
            save_every: 2,
            seed: 17,
            hot_start: false,
        }
    }

    fn run(
        p: &GenerateParams,
        dir: &Path,
        resume: bool,
        stop_after: Option<u64>,
    ) -> GenerateReport {
        let mut progress = |_: u64, _: u64, _: &UpdateRecord| {};
        generate(
            p,
            dir,
            resume,
            RunControl {
                progress: &mut progress,
                stop_after,
                gpu: None,
            },
        )
        .unwrap()
    }

    /// The same run on the GPU and on the CPU (4⁴, heatbath + OR and HMC, 8 updates):
    /// the plaquette histories agree to 1e−9 and the HMC decisions are the same; the GPU
    /// run's interruption and resumption is bit for bit.
    #[test]
    #[ignore = "needs a CUDA GPU: cargo test -p qdsl --lib app::generate -- --include-ignored"]
    fn gpu_runs_equal_the_cpu_runs() {
        let (gpu, _jit) = qdsl_runtime::testing::gpu();
        let gpu = Rc::new(gpu);
        for algorithm in [Algorithm::Heatbath, Algorithm::Hmc] {
            let p = params(algorithm);
            let cpu_dir = tempfile::tempdir().unwrap();
            let cpu = run(&p, cpu_dir.path(), false, None);
            let go = |dir: &Path, resume: bool, stop_after: Option<u64>| {
                let mut progress = |_: u64, _: u64, _: &UpdateRecord| {};
                generate(
                    &p,
                    dir,
                    resume,
                    RunControl {
                        progress: &mut progress,
                        stop_after,
                        gpu: Some(gpu.clone()),
                    },
                )
                .unwrap()
            };
            let gpu_dir = tempfile::tempdir().unwrap();
            let on_gpu = go(gpu_dir.path(), false, None);
            for (g, c) in on_gpu.history.iter().zip(&cpu.history) {
                assert!(
                    (g.plaquette - c.plaquette).abs() < 1e-9,
                    "{algorithm:?}: {g:?} {c:?}"
                );
                assert_eq!(g.accepted, c.accepted);
            }
            let broken = tempfile::tempdir().unwrap();
            go(broken.path(), false, Some(5));
            let resumed = go(broken.path(), true, None);
            assert_eq!(resumed.history, on_gpu.history, "{algorithm:?}");
        }
    }

    /// An interrupted run (killed after 5 of 8 updates: checkpoints after updates 4 and
    /// — not — 6) resumed from its last checkpoint gives the same history and the same
    /// checkpoint files, byte for byte, as an uninterrupted run; for the heatbath and
    /// for HMC.
    #[test]
    fn interrupted_and_resumed_run_equals_an_uninterrupted_one() {
        for algorithm in [Algorithm::Heatbath, Algorithm::Hmc] {
            let p = params(algorithm);
            let whole = tempfile::tempdir().unwrap();
            let full = run(&p, whole.path(), false, None);
            assert_eq!(full.history.len(), 8);
            assert_eq!(full.checkpoints.len(), 3); // after updates 4, 6, 8
            let broken = tempfile::tempdir().unwrap();
            let first = run(&p, broken.path(), false, Some(5));
            assert_eq!(first.checkpoints.len(), 1);
            // A stale temporary file from the crash does no harm.
            std::fs::write(broken.path().join("cfg_000006.tmp"), b"partial").unwrap();
            let second = run(&p, broken.path(), true, None);
            assert_eq!(second.resumed_from, 4);
            assert_eq!(second.history, full.history);
            for name in [
                "cfg_000004.lime",
                "cfg_000006.lime",
                "cfg_000008.lime",
                "history.json",
            ] {
                let a = std::fs::read(whole.path().join(name)).unwrap();
                let b = std::fs::read(broken.path().join(name)).unwrap();
                assert!(a == b, "{algorithm:?}: {name} differs");
            }
            assert!(whole.path().join("history.svg").exists());
            // The checkpoint is a valid ILDG file (checksum and <plaq> record verified on
            // reading) holding the field whose plaquette the history recorded.
            let last = read_gauge(
                whole.path().join("cfg_000008.lime"),
                &ReadOptions::default(),
            )
            .unwrap();
            assert_eq!(plaquette(&last.field).average, full.history[7].plaquette);
        }
    }

    /// A new run refuses a directory holding a run's state; a resume with another β is
    /// an error naming the key and both values.
    #[test]
    fn state_mismatches_are_errors() {
        let p = params(Algorithm::Heatbath);
        let dir = tempfile::tempdir().unwrap();
        run(&p, dir.path(), false, Some(4));
        let mut progress = |_: u64, _: u64, _: &UpdateRecord| {};
        let err = generate(
            &p,
            dir.path(),
            false,
            RunControl {
                progress: &mut progress,
                stop_after: None,
                gpu: None,
            },
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("--resume"), "{err}");
        let other = GenerateParams { beta: 6.0, ..p };
        let err = generate(
            &other,
            dir.path(),
            true,
            RunControl {
                progress: &mut progress,
                stop_after: None,
                gpu: None,
            },
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("beta = 5.8") && err.contains("beta = 6.0"),
            "{err}"
        );
    }

    /// Every action through its `link_paths!` spec (qdsl-kernels): over-relaxation keeps
    /// S to rounding after a heatbath sweep (4³×8 hot start: the rectangle actions need
    /// extents that are multiples of 4), and an HMC trajectory run forward then backward
    /// with negated momenta returns to the start to 1e−10.
    #[test]
    fn every_action_updates_through_its_kernel_spec() {
        use qdsl_core::gauge::generate::{max_link_difference, negate};
        let lat = Lattice::new([4, 4, 4, 8]).unwrap();
        for action in [
            ActionKind::Wilson,
            ActionKind::Symanzik,
            ActionKind::Iwasaki,
        ] {
            let spec = action.spec();
            let hb = Heatbath::new(&spec, 2.5, lat).unwrap();
            let mut u = GaugeField::<f64>::random(lat, 5);
            hb.heatbath_sweep(&mut u, 5, 0);
            let s0 = spec.action(&u, 1.0).unwrap();
            hb.overrelaxation_sweep(&mut u);
            let s1 = spec.action(&u, 1.0).unwrap();
            assert!((s1 - s0).abs() < 1e-10 * s0.abs(), "{action:?}: {s0} {s1}");
            let hmc = Hmc::new(
                vec![Level::new(&spec, 2.5, 3, Integrator::Omelyan).unwrap()],
                0.5,
            )
            .unwrap();
            let p0 = Hmc::momenta(lat, 5, 0);
            let (mut v, mut p) = (u.clone(), p0.clone());
            hmc.integrate(&mut v, &mut p).unwrap();
            negate(&mut p);
            hmc.integrate(&mut v, &mut p).unwrap();
            negate(&mut p);
            let (du, dp) = (max_link_difference(&u, &v), max_link_difference(&p, &p0));
            assert!(du < 1e-10 && dp < 1e-10, "{action:?}: {du} {dp}");
        }
    }
}
