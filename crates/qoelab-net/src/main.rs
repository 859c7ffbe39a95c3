//! `qoelab-netemu`: the binary behind `qoelab link` (the Python CLI execs it). Exit status:
//! COMMAND's; 2 for option errors and missing prerequisites (one line on stderr). `qoelab-netemu run
//! --plan FILE` is the real-network driver behind `qoelab run --real` (see `real`); `qoelab-netemu
//! --source-id` prints the fingerprint of the sources it was built from (build.rs).

#[cfg(target_os = "linux")]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--source-id") {
        // the fingerprint of the sources it was built from (build.rs), checked by the Python front
        println!("{}", env!("QOELAB_SOURCE_ID"));
        return;
    }
    if args.first().map(String::as_str) == Some("run") {
        // `qoelab run --real` (the Python front writes the plan and reads the results).
        std::process::exit(qoelab_net::real::main(&args[1..]));
    }
    if args.iter().take_while(|a| *a != "--").any(|a| a == "--help" || a == "-h") {
        println!("{}", qoelab_net::opts::USAGE);
        return;
    }
    let o = match qoelab_net::opts::parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("qoelab link: error: {e}");
            std::process::exit(2);
        }
    };
    match qoelab_net::run::run(&o) {
        Ok(code) => std::process::exit(code),
        Err(e) => std::process::exit(qoelab_net::run::fatal_exit("qoelab link", &e)),
    }
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("qoelab link: error: the real-network emulator needs Linux (network namespaces, TUN)");
    std::process::exit(2);
}
