//! Summarise report files with the default budgets, `--times N` times, and print the
//! summary once: a process with the engine alone, for `perf record` and heap profilers
//! (`cargo run --release -p report-core --example summarize -- [--times N] FILE...`).

use report_core::{summarize_files, Budgets};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut times = 1;
    if args.first().map(String::as_str) == Some("--times") && args.len() > 1 {
        times = args[1].parse().expect("--times takes a number");
        args.drain(..2);
    }
    if args.is_empty() {
        eprintln!("usage: summarize [--times N] FILE...");
        std::process::exit(2);
    }
    let budgets = Budgets::default();
    let mut out = Vec::new();
    for _ in 0..times {
        out = summarize_files(&args, None, &budgets, None, None, None, None).unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(1)
        });
    }
    println!("{}", String::from_utf8_lossy(&out));
}
