//! Runs one benchmarked path N times, for instruction counting under callgrind:
//!
//! ```text
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null icount VARIANT N
//! ```
//!
//! Setup is the same at every N, so the difference of two runs divided by the difference
//! of their N is the cost of one operation. `.ci/icount.sh` does that for every variant.
//! Variants: each path of `mcp_benches::ALL` (`stdio/tools_call`, ..., `connectome/record`) and its
//! reference, the same name with `ref:` in front (`ref:stdio/tools_call`); the scaling
//! workloads `scale/tools_call/N` and `scale/tools_list/N` (see `mcp_benches::scaled`);
//! `list` prints the candidates, `describe` prints each path's input and output sizes.

use std::process::ExitCode;

use mcp_benches::{ALL, candidate, input, reference};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("list") {
        for name in ALL {
            println!("{name}");
            println!("ref:{name}");
        }
        return ExitCode::SUCCESS;
    }
    if args.first().map(String::as_str) == Some("describe") {
        for name in ALL {
            let input = input(name).map_or(0, |b| b.len());
            let output = candidate(name).map_or(0, |mut w| w.run());
            println!("{name}: {input} bytes in, {output} bytes out");
        }
        return ExitCode::SUCCESS;
    }
    let (Some(variant), Some(Ok(n))) = (args.first(), args.get(1).map(|n| n.parse::<u64>())) else {
        eprintln!("usage: icount VARIANT N | icount list | icount describe");
        return ExitCode::from(2);
    };
    let workload = match variant.strip_prefix("ref:") {
        Some(name) => reference(name),
        None => candidate(variant).or_else(|| mcp_benches::scaled(variant)),
    };
    let Some(mut w) = workload else {
        eprintln!("unknown variant {variant:?} (`icount list` prints them)");
        return ExitCode::from(2);
    };
    let mut total = 0u64;
    for _ in 0..n {
        total = total.wrapping_add(w.run() as u64);
    }
    // Every run does work: a path that produced nothing measured a failure.
    if n > 0 && total == 0 {
        eprintln!("{variant}: the workload produced no output");
        return ExitCode::FAILURE;
    }
    println!("{variant} x{n}: {total}");
    ExitCode::SUCCESS
}
