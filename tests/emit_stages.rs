//! `qdsl emit` prints every stage of one kernel variant: the spec's IR, the lowered spec,
//! the kernel IR, the compiled kernel's interface and the CUDA source, each with what
//! identifies that stage (and the stages agree on the kernel's name and parameters).

use std::process::Command;

fn emit(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_qdsl"))
        .arg("emit")
        .args(args)
        .output()
        .expect("running qdsl");
    assert!(
        out.status.success(),
        "qdsl emit {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

#[test]
fn every_stage_is_printed() {
    let base = [
        "improved_staggered_hop",
        "--precision",
        "f32",
        "--recon",
        "18",
    ];
    let with = |stage: &str| {
        let mut a = base.to_vec();
        a.push(stage);
        emit(&a)
    };
    let ir = with("--ir");
    assert!(ir.contains("name: \"improved_staggered_hop\""), "{ir}");
    let lowered = with("--lowered");
    // The lowered spec records which 3-site hops read long links.
    assert!(lowered.contains("long_link: true"), "{lowered}");
    assert!(lowered.contains("OtherParity"), "{lowered}");
    let interface = with("--interface");
    let cuda = with("--cuda");
    let name = interface
        .lines()
        .find_map(|l| l.strip_prefix("kernel      "))
        .expect("the kernel line")
        .to_string();
    assert!(cuda.contains(&format!("extern \"C\" __global__ void {name}(")));
    // Every parameter the interface lists is declared in the source, in that order.
    let params: Vec<&str> = interface
        .lines()
        .skip_while(|l| *l != "parameters")
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert_eq!(params.first(), Some(&"f_out"));
    assert!(params.contains(&"stride_long"), "{interface}");
    let mut at = cuda.find("__global__").unwrap();
    for p in &params {
        let found = cuda[at..]
            .find(p)
            .unwrap_or_else(|| panic!("{p} missing or out of order"));
        at += found;
    }
}

/// `--kernel-ir` prints the kernel IR after the passes: the same entry name and
/// parameters as the interface, the long-link terms first (the term-order pass), a
/// prefetch stage before each term (the prefetch pass), and the statements of each term;
/// the whole text is a reviewed snapshot.
#[test]
fn the_kernel_ir_is_printed() {
    let args = |stage: &str| {
        emit(&[
            "improved_staggered_hop",
            "--precision",
            "f32",
            "--recon",
            "18",
            stage,
        ])
    };
    let text = args("--kernel-ir");
    let interface = args("--interface");
    let name = interface
        .lines()
        .find_map(|l| l.strip_prefix("kernel      "))
        .expect("the kernel line");
    assert!(
        text.starts_with(&format!("kernel {name} (real = float)\n")),
        "{text}"
    );
    let stages: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("stage "))
        .collect();
    // 16 terms (8 long, 8 one-link), the first term's prefetch ahead of everything and
    // the next term's before each term but the last.
    assert_eq!(stages.len(), 32, "{text}");
    assert_eq!(
        stages[..4],
        [
            "prefetch of term 2:",
            "prefetch of term 3:",
            "term 2 (long link):",
            "prefetch of term 6:"
        ]
    );
    assert_eq!(stages[31], "term 13:");
    assert!(text.contains("  InputStride { name: \"long\", index: 2 }: const int stride_long"));
    insta::assert_snapshot!("kernel_ir_improved_staggered_hop_f32_recon18", text);
}

/// `--link-scale global` selects fixed-point links with a global scale: the interface
/// lists `scale_fat` and `scale_long` (bound to the fat and long fields), the source
/// declares them; with recon 12 or float links the emitter refuses the knob by name.
#[test]
fn the_link_scale_flag_selects_global_scales() {
    let base = [
        "improved_staggered_hop",
        "--precision",
        "fixed16",
        "--link-scale",
        "global",
    ];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        a
    };
    let interface = emit(&with(&["--recon", "18", "--interface"]));
    for field in ["fat", "long"] {
        assert!(interface.contains(&format!("scale_{field}")), "{interface}");
    }
    let cuda = emit(&with(&["--recon", "18", "--cuda"]));
    assert!(cuda.contains("const real scale_fat,"), "{cuda}");
    // The Wilson hop allows recon 12, and refuses a global scale with it, and with f32.
    for (precision, recon) in [("fixed16", "12"), ("f32", "18")] {
        let out = Command::new(env!("CARGO_BIN_EXE_qdsl"))
            .arg("emit")
            .args(["wilson_hop", "--link-scale", "global", "--cuda"])
            .args(["--precision", precision, "--recon", recon])
            .output()
            .expect("running qdsl");
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("link_scale"), "{stderr}");
    }
}

/// `qdsl emit --plan` prints a `link_paths!` smearing's GPU tree (the staple levels nested,
/// the Lepage wrap tied) and a gauge force's; `--cuda` the smearing's single kernel in the
/// precision asked, reading recon 12 + phase input when asked.
#[test]
fn link_path_plans_and_sources_are_printed() {
    let plan = emit(&["asqtad_fat", "--plan"]);
    assert!(plan.contains("168 matrix products per link"), "{plan}");
    assert!(plan.contains("sum over sigma"), "{plan}");
    assert!(plan.contains("(tied)"), "{plan}");
    assert!(plan.contains("GPU 672 matrix products"), "{plan}");
    let force = emit(&["symanzik_gauge", "--plan"]);
    assert!(force.contains("72 matrix products per link"), "{force}");
    let cuda = emit(&["fat7", "--cuda", "--precision", "f64", "--recon", "18"]);
    assert!(cuda.contains("typedef double real;"));
    assert!(cuda.contains("extern \"C\" __global__ void fat7_links("));
    assert!(cuda.contains("constexpr int LINK_REALS = 18;"));
    let r12 = emit(&["fat7", "--cuda", "--recon", "12"]);
    assert!(r12.contains("constexpr int LINK_REALS = 14;"));
}
