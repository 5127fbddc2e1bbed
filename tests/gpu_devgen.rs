//! On a GPU machine: inputs drawn on the device are the host's draws to the bit, for every
//! dtype and init, at sizes that end mid-pair and mid-block, and the device-side comparison
//! finds an element written over; and how long a draw takes beside
//! the upload it replaces (printed, not asserted). Ignored without `--include-ignored` (they
//! need a GPU); run with it and no GPU, they skip, or fail under `KWB_REQUIRE_GPU=1`.

use kwb::run::gpu::devgen::{draws_on_device, DeviceGen, Draw};
use kwb::run::gpu::device::{DevBuf, Stream};
use kwb::run::gpu::open::{gpu_or_skip, Gpu};
use kwb::run::host::inputs::{generate, recipe};
use kwb::workspace::{DType, Init};
use std::time::Instant;

/// The GPU, a stream and the generator (which has passed its self-check), or `None` to skip.
fn generator(test: &str) -> Option<(Gpu, Stream, DeviceGen)> {
    let gpu = gpu_or_skip(test)?;
    gpu.ctx.bind_to_thread().expect("bind the context");
    let facts = gpu.facts().expect("device facts");
    let stream = Stream::new().expect("a stream");
    let gen = DeviceGen::load(&stream, facts.sm_count)
        .unwrap_or_else(|why| panic!("the device generator failed its self-check: {why}"));
    Some((gpu, stream, gen))
}

#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn device_draws_are_the_host_draws_bit_for_bit() {
    let Some((_gpu, stream, gen)) = generator("device_draws_are_the_host_draws_bit_for_bit") else {
        return;
    };
    let inits = [
        Init::DEFAULT,
        Init::Randn {
            mean: -3.5,
            std: 1e3,
        },
        Init::Uniform {
            low: 0.0,
            high: 1.0,
        },
        Init::Uniform {
            low: -0.5,
            high: 9.5,
        },
        Init::Uniform {
            low: 65000.0,
            high: 65504.0,
        },
        Init::Arange,
        Init::Constant { value: -0.3 },
    ];
    let (mut compared, mut cases) = (0usize, 0usize);
    for n in [1usize, 3, 65_537, 3_000_001] {
        for dtype in DType::ALL.into_iter().filter(|&d| draws_on_device(d)) {
            for init in &inits {
                let seed = 0xC0FFEE ^ n as u64;
                let Ok(host) = generate(dtype, n, init, &[n], seed) else {
                    continue; // a range that holds no value of this dtype
                };
                let recipe = recipe(dtype, init).unwrap().unwrap();
                let draw = Draw {
                    dtype,
                    elems: n,
                    recipe,
                    seed,
                };
                let buf = DevBuf::alloc(host.bytes.len()).unwrap();
                gen.fill(&stream, &buf, &draw).unwrap();
                stream.sync().unwrap();
                let dev = buf.download().unwrap();
                let w = dtype.size() as usize;
                let first =
                    (0..n).find(|&i| dev[i * w..(i + 1) * w] != host.bytes[i * w..(i + 1) * w]);
                assert_eq!(first, None, "{dtype} {init:?} at n = {n}: first difference");
                assert_eq!(gen.first_difference(&stream, &buf, &draw).unwrap(), None);
                // The last element given the first one's bits: found on the device, exactly.
                let mut harmed = dev.clone();
                harmed.copy_within(0..w, (n - 1) * w);
                if harmed != dev {
                    buf.upload(&harmed).unwrap();
                    let found = gen.first_difference(&stream, &buf, &draw).unwrap();
                    assert_eq!(found, Some(n as u64 - 1), "{dtype} {init:?} at n = {n}");
                }
                compared += n;
                cases += 1;
            }
        }
    }
    println!("devgen: {cases} buffers, {compared} elements, every one equal to the host's");
}

#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn a_draw_and_the_upload_it_replaces_are_timed() {
    let Some((_gpu, stream, gen)) = generator("a_draw_and_the_upload_it_replaces_are_timed") else {
        return;
    };
    for (name, n) in [("16Mi", 16usize << 20), ("256Mi", 256 << 20)] {
        let dtype = DType::F16;
        let t = Instant::now();
        let host = generate(dtype, n, &Init::DEFAULT, &[n], 1).unwrap();
        let host_ms = t.elapsed().as_secs_f64() * 1e3;
        let buf = DevBuf::alloc(host.bytes.len()).unwrap();
        let draw = Draw {
            dtype,
            elems: n,
            recipe: recipe(dtype, &Init::DEFAULT).unwrap().unwrap(),
            seed: 1,
        };
        let (mut draw_ms, mut upload_ms) = (f64::MAX, f64::MAX);
        for _ in 0..5 {
            let t = Instant::now();
            buf.upload(&host.bytes).unwrap();
            stream.sync().unwrap();
            upload_ms = upload_ms.min(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            gen.fill(&stream, &buf, &draw).unwrap();
            stream.sync().unwrap();
            draw_ms = draw_ms.min(t.elapsed().as_secs_f64() * 1e3);
        }
        assert_eq!(buf.download().unwrap(), host.bytes, "{name}");
        println!(
            "devgen {name} fp16 randn: drawn on the GPU in {draw_ms:.2} ms, uploaded in {upload_ms:.2} ms \
             (host draw {host_ms:.0} ms)"
        );
    }
}
