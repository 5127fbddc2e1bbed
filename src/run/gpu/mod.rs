//! The worker side: the process that owns a GPU. [`worker`] answers the supervisor's requests;
//! [`execute`] runs one job (inputs, a checked run, the benchmark); [`open`] and [`device`]
//! reach the driver; [`program`] loads a CUBIN and packs launches; [`bench`], [`cupti`] and
//! [`kernel_span`] time runs on CUPTI's kernel records; [`flush`] gives a cold L2; [`peak`] and
//! [`stream_peak`] measure the device's peaks; [`redzone`] and [`canary`] catch stray writes;
//! [`devgen`] draws large inputs on the GPU.

pub mod bench;
pub mod canary;
pub mod cupti;
pub mod cupti_locate;
pub mod devgen;
pub mod device;
pub mod execute;
pub mod flush;
pub mod kernel_span;
pub mod open;
pub mod peak;
pub mod program;
pub mod redzone;
pub mod stream_peak;
pub mod worker;
