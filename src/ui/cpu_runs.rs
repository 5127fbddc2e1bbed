//! With no GPU, `kwb watch` still checks every save: this thread runs each version's planned
//! jobs on the CPU (CUDA in the PTX emulator, tile versions in the tile interpreter) and sends
//! back results labelled with their backend, findings included, the way the GPU thread does.
//! The latest save wins: a newer request for a version replaces a queued one.

use super::action::{Action, RunEvent};
use super::runtime::{GpuRequest, Msg};
use crate::batch::{cpu_code, fill_cpu_result, CpuEngine};
use crate::report::{RunResult, Status};
use crate::run::cpu::{run_job, CpuOptions};
use std::sync::mpsc::{Receiver, Sender};

pub(super) fn cpu_thread(rx: Receiver<GpuRequest>, tx: Sender<Msg>) {
    let mut queue: Vec<GpuRequest> = Vec::new();
    loop {
        if queue.is_empty() {
            match rx.recv() {
                Ok(r) => queue.push(r),
                Err(_) => return,
            }
        }
        while let Ok(r) = rx.try_recv() {
            queue.retain(|x| x.index != r.index);
            queue.push(r);
        }
        let req = queue.remove(0);
        let n = req.jobs.len();
        for (k, p) in req.jobs.iter().enumerate() {
            let mut result = RunResult::new(&req.version, &p.size_name, Status::Ok);
            (result.bytes, result.flops) = (p.bytes, p.flops);
            match (&p.job, &p.cpu) {
                (Err(e), _) => {
                    result.status = Status::Error;
                    result.message = Some(e.clone());
                }
                (Ok(_), None) => {
                    result.status = Status::Error;
                    result.message = Some("nothing to run on the CPU".into());
                }
                (Ok(job), Some(cpu)) => {
                    let _ = tx.send(Msg::Action(Action::Run {
                        index: req.index,
                        generation: req.generation,
                        size: p.size,
                        event: RunEvent::Phase(crate::run::protocol::Phase::Checking),
                    }));
                    match cpu_code(&cpu.code, CpuEngine::Auto) {
                        Err(e) => {
                            result.status = Status::Error;
                            result.message = Some(e);
                        }
                        Ok(code) => {
                            let reference = cpu
                                .reference
                                .as_ref()
                                .and_then(|c| cpu_code(c, CpuEngine::Auto).ok());
                            let outcome =
                                run_job(job, &code, reference.as_ref(), &CpuOptions::default());
                            result.backend = Some(code.backend());
                            fill_cpu_result(&mut result, outcome);
                        }
                    }
                }
            }
            let sent = tx.send(Msg::Action(Action::Run {
                index: req.index,
                generation: req.generation,
                size: p.size,
                event: RunEvent::Finished {
                    result: Box::new(result),
                    samples: Vec::new(),
                    last: k + 1 == n,
                    provisional: false,
                },
            }));
            if sent.is_err() {
                return;
            }
        }
    }
}
