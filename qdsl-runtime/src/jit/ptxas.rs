//! Offline register and spill reports: `ptxas -v` on generated PTX (no GPU needed).
//!
//! `ptxas` is found as `$QDSL_PTXAS`, else on `PATH`, else in a CUDA toolkit
//! (`$CUDA_HOME/bin`, `$CUDA_PATH/bin`, `/usr/local/cuda/bin`), else in the
//! `nvidia-cuda-nvcc` Python wheel (`site-packages/nvidia/cu13/bin/ptxas`).

use super::Arch;
use crate::libs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Resource usage of one kernel, as `ptxas -v` reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PtxasReport {
    /// The entry function's name.
    pub function: String,
    /// Registers per thread.
    pub registers: u32,
    /// Bytes of spill stores.
    pub spill_stores: u32,
    /// Bytes of spill loads.
    pub spill_loads: u32,
    /// Bytes of stack frame.
    pub stack_frame: u32,
}

/// Errors of running ptxas.
#[derive(Debug, thiserror::Error)]
pub enum PtxasError {
    /// No ptxas binary was found.
    #[error("ptxas not found (tried $QDSL_PTXAS, PATH, the CUDA toolkit and the nvidia-cuda-nvcc wheel); `pip install nvidia-cuda-nvcc==13.0.88`")]
    NotFound,
    /// ptxas could not be started or a temporary file not written.
    #[error("running ptxas: {0}")]
    Io(#[from] std::io::Error),
    /// ptxas rejected the PTX.
    #[error("ptxas failed (exit {status}):\n{output}")]
    Failed {
        /// Exit status.
        status: String,
        /// Its output.
        output: String,
    },
}

/// The ptxas binary, if found ([`libs::probe::find_ptxas`]), looked up once per process.
pub fn find_ptxas() -> Option<PathBuf> {
    static FOUND: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    FOUND.get_or_init(libs::probe::find_ptxas).clone()
}

/// Assembles `ptx` for `arch` with `ptxas -v` and returns one report per entry function.
pub fn report(ptx: &str, arch: Arch) -> Result<Vec<PtxasReport>, PtxasError> {
    let ptxas = find_ptxas().ok_or(PtxasError::NotFound)?;
    let dir = tempfile_dir()?;
    let input = dir.join("input.ptx");
    std::fs::write(&input, ptx)?;
    let result = run(&ptxas, &input, &dir.join("out.cubin"), arch);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run(
    ptxas: &Path,
    input: &Path,
    output: &Path,
    arch: Arch,
) -> Result<Vec<PtxasReport>, PtxasError> {
    let out = Command::new(ptxas)
        .arg("-v")
        .arg(format!("--gpu-name={arch}"))
        .arg("-o")
        .arg(output)
        .arg(input)
        .output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(PtxasError::Failed {
            status: out.status.to_string(),
            output: text,
        });
    }
    Ok(parse(&text))
}

/// A fresh private directory under the system temporary directory.
fn tempfile_dir() -> std::io::Result<PathBuf> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let d = std::env::temp_dir().join(format!(
        "qdsl-ptxas-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d)?;
    Ok(d)
}

/// The number just before `unit` in `line` (e.g. `"Used 40 registers"`, `"registers"`).
fn number_before(line: &str, unit: &str) -> Option<u32> {
    let words: Vec<&str> = line.split([' ', ',']).filter(|w| !w.is_empty()).collect();
    words
        .windows(2)
        .find(|w| w[1] == unit || w[1].starts_with(unit))
        .and_then(|w| w[0].parse().ok())
}

/// Parses `ptxas -v` output: a report starts at "Compiling entry function 'f'", takes
/// the stack/spill line and the "Used N registers" line that follow.
pub fn parse(text: &str) -> Vec<PtxasReport> {
    let mut reports: Vec<PtxasReport> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or_default();
            reports.push(PtxasReport {
                function: name.to_string(),
                ..Default::default()
            });
        } else if let Some(r) = reports.last_mut() {
            if line.contains("bytes stack frame") {
                r.stack_frame = number_before(line, "bytes").unwrap_or(0);
                let after = |key: &str| {
                    line.split(',')
                        .find(|p| p.contains(key))
                        .and_then(|p| number_before(p, "bytes"))
                        .unwrap_or(0)
                };
                r.spill_stores = after("spill stores");
                r.spill_loads = after("spill loads");
            } else if line.contains("Used ") {
                r.registers = number_before(line, "registers").unwrap_or(0);
            }
        }
    }
    reports
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of real ptxas 13.0 output, with distinct numbers in every field.
    #[test]
    fn parses_two_functions() {
        let text = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'k1' for 'sm_90'\n\
ptxas info    : Function properties for k1\n    \
16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n\
ptxas info    : Used 255 registers, used 0 barriers, 380 bytes cmem[0]\n\
ptxas info    : Compiling entry function 'k2' for 'sm_90'\n\
ptxas info    : Function properties for k2\n    \
0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
ptxas info    : Used 40 registers, used 1 barriers, 364 bytes cmem[0]\n";
        let r = parse(text);
        assert_eq!(
            r,
            vec![
                PtxasReport {
                    function: "k1".into(),
                    registers: 255,
                    spill_stores: 8,
                    spill_loads: 12,
                    stack_frame: 16
                },
                PtxasReport {
                    function: "k2".into(),
                    registers: 40,
                    ..Default::default()
                }
            ]
        );
    }
}
