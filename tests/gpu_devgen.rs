//! On a GPU machine: inputs drawn on the device are the host's draws to the bit, for every
//! dtype and init, at sizes that end mid-pair and mid-block, and the device-side comparison
//! finds an element written over; and how long a draw takes beside
//! the upload it replaces (printed, not asserted). Skips, saying why, without a GPU.

use kwb::run::devgen::DeviceGen;
use kwb::run::device::{DevBuf, Stream};
use kwb::run::gpu::gpu_or_skip;
use kwb::run::inputs::{generate, recipe};
use kwb::workspace::{DType, Init};
use std::time::Instant;

#[test]
fn device_draws_are_the_host_draws_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("device_draws_are_the_host_draws_bit_for_bit") else {
        return;
    };
    gpu.ctx.bind_to_thread().expect("bind the context");
    let facts = gpu.facts().expect("device facts");
    let stream = Stream::new().expect("a stream");
    let gen = DeviceGen::load(&stream, facts.sm_count)
        .unwrap_or_else(|why| panic!("the device generator failed its self-check: {why}"));
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
        for dtype in DType::ALL {
            for init in &inits {
                let seed = 0xC0FFEE ^ n as u64;
                let Ok(host) = generate(dtype, n, init, &[n], seed) else {
                    continue; // a range that holds no value of this dtype
                };
                let r = recipe(dtype, init).unwrap().unwrap();
                let buf = DevBuf::alloc(host.bytes.len()).unwrap();
                gen.fill(&stream, &buf, dtype, n, &r, seed).unwrap();
                stream.sync().unwrap();
                let dev = buf.download().unwrap();
                let w = dtype.size() as usize;
                let first =
                    (0..n).find(|&i| dev[i * w..(i + 1) * w] != host.bytes[i * w..(i + 1) * w]);
                assert_eq!(first, None, "{dtype} {init:?} at n = {n}: first difference");
                assert_eq!(
                    gen.first_difference(&stream, &buf, dtype, n, &r, seed)
                        .unwrap(),
                    None
                );
                // The last element given the first one's bits: found on the device, exactly.
                let mut harmed = dev.clone();
                harmed.copy_within(0..w, (n - 1) * w);
                if harmed != dev {
                    buf.upload(&harmed).unwrap();
                    let found = gen
                        .first_difference(&stream, &buf, dtype, n, &r, seed)
                        .unwrap();
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
fn a_draw_and_the_upload_it_replaces_are_timed() {
    let Some(gpu) = gpu_or_skip("a_draw_is_faster_than_the_upload_it_replaces") else {
        return;
    };
    gpu.ctx.bind_to_thread().expect("bind the context");
    let facts = gpu.facts().expect("device facts");
    let stream = Stream::new().expect("a stream");
    let gen = DeviceGen::load(&stream, facts.sm_count).expect("the generator loads");
    for (name, n) in [("16Mi", 16usize << 20), ("256Mi", 256 << 20)] {
        let dtype = DType::F16;
        let t = Instant::now();
        let host = generate(dtype, n, &Init::DEFAULT, &[n], 1).unwrap();
        let host_ms = t.elapsed().as_secs_f64() * 1e3;
        let buf = DevBuf::alloc(host.bytes.len()).unwrap();
        let r = recipe(dtype, &Init::DEFAULT).unwrap().unwrap();
        let (mut draw, mut upload) = (f64::MAX, f64::MAX);
        for _ in 0..5 {
            let t = Instant::now();
            buf.upload(&host.bytes).unwrap();
            stream.sync().unwrap();
            upload = upload.min(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            gen.fill(&stream, &buf, dtype, n, &r, 1).unwrap();
            stream.sync().unwrap();
            draw = draw.min(t.elapsed().as_secs_f64() * 1e3);
        }
        assert_eq!(buf.download().unwrap(), host.bytes, "{name}");
        println!(
            "devgen {name} fp16 randn: drawn on the GPU in {draw:.2} ms, uploaded in {upload:.2} ms \
             (host draw {host_ms:.0} ms)"
        );
    }
}
