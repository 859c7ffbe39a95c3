// The source fingerprint `QOELAB_SOURCE_ID` (an environment variable at compile time): an FNV-1a
// hash of the Rust sources of the workspace's crates (`crates/{qoelab-core,qoelab-net,qoelab-py}/src`,
// file names and contents). The emulator binary (`qoelab-netemu --source-id`) and the Python module
// (`qoelab._core.source_id()`) both carry it, so that `qoelab link` and `qoelab run --real` can tell
// an emulator built from other sources than the module (a stale `target/release/qoelab-netemu`)
// and refuse it instead of running other link, AQM and session code than the simulator.
// `crates/qoelab-py/build.rs` includes this file: one computation for both.

use std::path::{Path, PathBuf};

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let crates = here.parent().expect("the crates folder").to_path_buf();
    let mut files = Vec::new();
    for c in ["qoelab-core", "qoelab-net", "qoelab-py"] {
        let src = crates.join(c).join("src");
        println!("cargo:rerun-if-changed={}", src.display());
        walk(&src, &mut files);
    }
    files.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: &[u8]| {
        for &x in b {
            h ^= x as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for f in &files {
        let rel = f.strip_prefix(&crates).unwrap_or(f);
        eat(rel.to_string_lossy().as_bytes());
        eat(&[0]);
        eat(&std::fs::read(f).unwrap_or_default());
        eat(&[0]);
    }
    println!("cargo:rustc-env=QOELAB_SOURCE_ID={h:016x}");
}
