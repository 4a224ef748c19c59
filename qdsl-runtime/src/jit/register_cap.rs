//! Register caps on PTX: the `.maxnreg R` performance directive.
//!
//! NVRTC's `--maxrregcount` only acts when NVRTC itself assembles SASS: the PTX it
//! returns carries no trace of it, and the driver, which assembles our PTX at module
//! load, would never see the cap. The PTX ISA's per-entry directive does reach the
//! driver's assembler:
//!
//! ```text
//! .visible .entry wilson_hop_…(
//!     .param .u64 …
//! )
//! .maxnreg 64
//! {
//! ```
//!
//! (the same text NVRTC writes for a `__maxnreg__(64)` kernel). So a capped build is
//! the cached, uncapped PTX with this one line added: no second NVRTC compile, and the
//! PTX cache key (source, options, arch, NVRTC version) stays that of the source.

/// Errors of adding a register cap to PTX.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegisterCapError {
    /// The PTX has no `.entry` of that name.
    #[error("the PTX has no entry {entry} (expected a line `.visible .entry {entry}(`)")]
    NoEntry {
        /// The entry's name.
        entry: String,
    },
    /// The entry's parameter list is not closed by a line `)`.
    #[error("the parameter list of entry {entry} is not closed by a line `)`")]
    Unclosed {
        /// The entry's name.
        entry: String,
    },
    /// The entry already carries a `.maxnreg` directive.
    #[error("entry {entry} already has a register cap ({found:?})")]
    AlreadyCapped {
        /// The entry's name.
        entry: String,
        /// The directive found.
        found: String,
    },
    /// A cap of zero registers.
    #[error("a register cap must be at least 1, found 0")]
    Zero,
}

/// `ptx` with the directive `.maxnreg max_registers` added to the entry `entry`: the
/// line right after the `)` that closes its parameter list.
pub fn cap_registers(
    ptx: &str,
    entry: &str,
    max_registers: u32,
) -> Result<String, RegisterCapError> {
    if max_registers == 0 {
        return Err(RegisterCapError::Zero);
    }
    let lines: Vec<&str> = ptx.lines().collect();
    let head = format!(".entry {entry}(");
    let start = lines
        .iter()
        .position(|l| {
            l.trim_start()
                .strip_prefix(".visible ")
                .unwrap_or(l.trim_start())
                == head
        })
        .ok_or_else(|| RegisterCapError::NoEntry {
            entry: entry.into(),
        })?;
    let close = (start..lines.len())
        .find(|&i| lines[i].trim() == ")")
        .ok_or_else(|| RegisterCapError::Unclosed {
            entry: entry.into(),
        })?;
    // Directives sit between ")" and the body's "{".
    if let Some(found) = lines[close + 1..]
        .iter()
        .take_while(|l| l.trim() != "{")
        .find(|l| l.trim_start().starts_with(".maxnreg"))
    {
        return Err(RegisterCapError::AlreadyCapped {
            entry: entry.into(),
            found: found.trim().into(),
        });
    }
    let mut out = String::with_capacity(ptx.len() + 16);
    for (i, l) in lines.iter().enumerate() {
        out.push_str(l);
        out.push('\n');
        if i == close {
            out.push_str(&format!(".maxnreg {max_registers}\n"));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entry as NVRTC 13 writes it (recorded from `nvrtcGetPTX`).
    const PTX: &str = "//\n.version 9.0\n.target sm_90\n.address_size 64\n\n\
        .visible .entry k(\n\t.param .u64 k_param_0,\n\t.param .f32 k_param_1\n)\n{\n\tret;\n}\n";

    #[test]
    fn the_directive_goes_between_the_parameters_and_the_body() {
        let capped = cap_registers(PTX, "k", 40).unwrap();
        // The layout NVRTC itself writes for `__maxnreg__(40)` (recorded).
        assert!(
            capped.contains("\t.param .f32 k_param_1\n)\n.maxnreg 40\n{\n"),
            "{capped}"
        );
        assert_eq!(capped.len(), PTX.len() + ".maxnreg 40\n".len());
    }

    #[test]
    fn bad_requests_are_errors() {
        assert_eq!(
            cap_registers(PTX, "other", 40),
            Err(RegisterCapError::NoEntry {
                entry: "other".into()
            })
        );
        // A prefix of the name is another entry.
        assert!(cap_registers(PTX, "", 40).is_err());
        assert_eq!(cap_registers(PTX, "k", 0), Err(RegisterCapError::Zero));
        let twice = cap_registers(&cap_registers(PTX, "k", 40).unwrap(), "k", 32);
        assert_eq!(
            twice,
            Err(RegisterCapError::AlreadyCapped {
                entry: "k".into(),
                found: ".maxnreg 40".into()
            })
        );
        let open = PTX.replace(")\n{", "\n{");
        assert_eq!(
            cap_registers(&open, "k", 40),
            Err(RegisterCapError::Unclosed { entry: "k".into() })
        );
    }

    /// ptxas (an independent assembler) honours the directive on the generated hops:
    /// every capped build of the bench's Wilson and staggered variants uses at most its
    /// cap, and the uncapped build more than the smallest cap. Prints the registers and
    /// spills per cap (`--nocapture`) for the tuning notes.
    #[test]
    #[cfg_attr(
        not(qdsl_nvrtc),
        ignore = "needs NVRTC and ptxas (not found when the tests were built)"
    )]
    fn ptxas_honours_the_cap_on_the_generated_hops() {
        use crate::jit::{ptxas, Arch};
        use qdsl_core::dsl::variant::{Recon, StorageFormat};
        use qdsl_core::dsl::Variant;
        let root = tempfile::tempdir().unwrap();
        let jit = crate::testing::jit(root.path());
        ptxas::find_ptxas().expect("ptxas (the build found it)");
        let cases = [
            ("wilson_hop", StorageFormat::F32, Recon::R12),
            ("wilson_hop", StorageFormat::F32, Recon::R18),
            ("wilson_hop", StorageFormat::Fixed16, Recon::R12),
            ("naive_staggered_hop", StorageFormat::F32, Recon::R18),
            ("improved_staggered_hop", StorageFormat::F32, Recon::R18),
            ("improved_staggered_hop", StorageFormat::Fixed16, Recon::R18),
        ];
        for (kernel, format, recon) in cases {
            let entry = qdsl_kernels::catalog::stencils()
                .into_iter()
                .find(|e| e.name == kernel)
                .unwrap();
            let v = Variant {
                spinor: format,
                gauge: format,
                recon,
                ..Variant::default()
            };
            let name = (entry.kernel_name)(&v);
            let ptx = jit
                .compile(&name, &(entry.cuda)(&v).unwrap(), Arch::SM_90, &[])
                .unwrap()
                .ptx;
            let usage = |ptx: &str| {
                let r = ptxas::report(ptx, Arch::SM_90).unwrap();
                assert_eq!(r.len(), 1, "{name}");
                (r[0].registers, r[0].spill_stores, r[0].spill_loads)
            };
            let (free, ..) = usage(&ptx);
            let mut line = format!("{kernel} {format:?} {recon:?}: none {free}");
            for cap in crate::tune::REGISTER_CAPS {
                let (regs, stores, loads) = usage(&cap_registers(&ptx, &name, cap).unwrap());
                assert!(regs <= cap, "{name} capped at {cap} uses {regs}");
                line += &format!(" | {cap}: {regs} regs, spill {stores}/{loads} B");
            }
            assert!(free > crate::tune::REGISTER_CAPS[0], "{line}");
            eprintln!("{line}");
        }
    }
}
