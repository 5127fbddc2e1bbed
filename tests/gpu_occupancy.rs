//! On a GPU machine: kwb's resource readings and occupancy calculator against the driver's own
//! `cuFuncGetAttribute` and `cuOccupancyMaxActiveBlocksPerMultiprocessor`, for every shipped
//! kernel across block sizes and dynamic shared memory. Ignored without `--include-ignored`
//! (it needs a GPU).

mod support;

use cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
use kwb::compile::occupancy::{occupancy, KernelUsage};
use kwb::run::gpu::open::{driver_occupancy, gpu_or_skip, kernel_attrs};
use kwb::workspace::Workspace;

#[test]
#[ignore = "needs an NVIDIA GPU: the GPU bundle runs it with --include-ignored"]
fn occupancy_and_resources_agree_with_the_driver() {
    let Some(gpu) = gpu_or_skip("occupancy_and_resources_agree_with_the_driver") else {
        return;
    };
    let facts = gpu.facts().expect("device facts");
    let arch = gpu.arch().unwrap().expect("a GPU arch kwb knows");
    support::provision_nvrtc();
    let c = kwb::compile::Compiler::new(arch, kwb::compile::Cache::disabled()).unwrap();

    let mut files = Vec::new();
    for dir in ["elementwise-add", "gelu", "softmax", "tests"] {
        for e in std::fs::read_dir(support::repo().join("kernels").join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "cu") && !p.ends_with("broken_syntax.cu") {
                files.push(p);
            }
        }
    }
    files.sort();
    let blocks = [32u32, 64, 96, 128, 160, 256, 384, 512, 640, 768, 1024];
    let dynamic = [0usize, 1000, 8192, 20000, 40000, 49152];
    let (mut cases, mut mismatches) = (0, Vec::new());
    for f in &files {
        let ws = Workspace::for_kernel_file(f).unwrap();
        let out = c.compile_version(Some(&ws), &ws.versions[0]);
        assert!(out.ok, "{}: {:?}", f.display(), out.diagnostics);
        let module = gpu.load_cubin(&out.cubin).expect("load CUBIN");
        for k in &out.kernels {
            let func = module.load_function(&k.name).expect("kernel in module");
            let attrs = kernel_attrs(&func).unwrap();
            assert_eq!(attrs.registers, k.registers, "{}: registers", k.name);
            assert_eq!(
                attrs.static_shared_bytes, k.static_shared_bytes,
                "{}: static shared",
                k.name
            );
            assert_eq!(attrs.local_bytes, k.local_bytes, "{}: local bytes", k.name);
            for &d in &dynamic {
                // Past 48 KB a kernel must opt in to more dynamic shared memory; kwb's runner
                // does so for every launch that asks, and its calculator assumes it.
                if k.static_shared_bytes as usize + d > 48 * 1024 {
                    func.set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, d as i32)
                        .expect("opt in to more dynamic shared memory");
                }
                for &b in blocks.iter().filter(|b| **b <= attrs.max_threads_per_block) {
                    let usage = KernelUsage {
                        threads_per_block: b,
                        registers_per_thread: k.registers,
                        static_shared_bytes: k.static_shared_bytes,
                        dynamic_shared_bytes: d as u32,
                        barriers: k.barriers,
                    };
                    let ours = occupancy(arch.spec(), &usage)
                        .map(|o| o.active_blocks_per_sm)
                        .unwrap_or(0);
                    let theirs = driver_occupancy(&func, b, d).unwrap();
                    cases += 1;
                    if ours != theirs {
                        mismatches.push(format!(
                            "{} block {b} dyn {d}: kwb {ours}, driver {theirs}",
                            k.name
                        ));
                    }
                }
            }
        }
    }
    println!(
        "occupancy: {cases} cases over {} files, {} mismatches, on {} ({}, driver {})",
        files.len(),
        mismatches.len(),
        facts.name,
        facts.arch,
        facts.driver_version
    );
    assert!(cases >= 100, "only {cases} cases");
    let shown: Vec<&str> = mismatches.iter().take(20).map(String::as_str).collect();
    assert!(mismatches.is_empty(), "{}", shown.join("\n"));
}
