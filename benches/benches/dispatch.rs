//! Engine-only dispatch: bytes in, response bytes out, host answered inline; next to a
//! bare simd-json tape parse of the same bytes as the reference.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcp_benches::{dispatch, engine, ping, tools_call, tools_list};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("stdio");
    for (name, frame) in [("tools_call", tools_call()), ("ping", ping()), ("tools_list", tools_list())] {
        g.throughput(Throughput::Bytes(frame.len() as u64));
        let mut e = engine();
        let mut sink = vec![0u8; 1 << 16];
        g.bench_function(format!("dispatch/{name}"), |b| {
            b.iter(|| dispatch(&mut e, black_box(&frame), &mut sink))
        });
        let mut buffers = simd_json::Buffers::new(frame.len());
        let mut scratch = frame.clone();
        let mut tape = simd_json::Tape(Vec::new());
        g.bench_function(format!("reference_parse/{name}"), |b| {
            b.iter(|| {
                scratch.copy_from_slice(&frame);
                let mut t = std::mem::replace(&mut tape, simd_json::Tape(Vec::new())).reset();
                let ok = simd_json::fill_tape(black_box(&mut scratch[..]), &mut buffers, &mut t).is_ok();
                tape = t.reset();
                ok
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
