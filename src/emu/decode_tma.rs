//! Decoding the opcodes of Hopper's asynchronous tile loads: `mbarrier.*`, the barriers that
//! count arrivals and transaction bytes; `cp.async.bulk.tensor`, a TMA copy of one box that
//! completes on such a barrier; `prefetch.tensormap`; `fence.mbarrier_init`.

use super::inst::*;

fn mods(sub: u8) -> Mods {
    Mods {
        vec: 1,
        sub,
        ..Mods::default()
    }
}

/// `mbarrier.OP[.parity][.sem][.scope][.shared[::cta|::cluster]].b64`: OP one of `init`,
/// `arrive`, `arrive.expect_tx`, `expect_tx`, `try_wait`, `test_wait`, `inval`.
pub fn mbarrier(text: &str) -> Result<(Op, Ty, Mods), String> {
    let mut parts = text.split('.').skip(1).peekable();
    let what = parts.next().unwrap_or_default();
    let mut sub = match what {
        "init" => MBAR_INIT,
        "arrive" if parts.peek() == Some(&"expect_tx") => {
            parts.next();
            MBAR_ARRIVE_EXPECT_TX
        }
        "arrive" => MBAR_ARRIVE,
        "expect_tx" => MBAR_EXPECT_TX,
        "try_wait" => MBAR_TRY_WAIT,
        "test_wait" => MBAR_TEST_WAIT,
        "inval" => MBAR_INVAL,
        _ => return Err(format!("`{text}` (the emulator runs mbarrier init, arrive, arrive.expect_tx, expect_tx, try_wait, test_wait and inval)")),
    };
    let mut m = mods(0);
    let mut typed = false;
    for p in parts {
        match p {
            "parity" if matches!(sub, MBAR_TRY_WAIT | MBAR_TEST_WAIT) => sub += 1,
            "shared" | "shared::cta" | "shared::cluster" => m.space = Some(Space::Shared),
            "b64" => typed = true,
            "release" | "acquire" | "relaxed" | "cta" | "cluster" => {}
            other => return Err(format!("`{text}` (modifier `.{other}`)")),
        }
    }
    if !typed {
        return Err(format!("`{text}` (no `.b64`)"));
    }
    m.sub = sub;
    Ok((Op::Mbarrier, Ty::B64, m))
}

/// `cp.async.bulk.tensor.Nd.shared::cluster.global[.tile].mbarrier::complete_tx::bytes
/// [.L2::cache_hint]`, N from 1 to 5 (also `.shared::cta` as the destination). Stores, the
/// im2col forms and multicast are named as unsupported.
pub fn bulk_tensor(text: &str) -> Result<(Op, Ty, Mods), String> {
    let rest = text
        .strip_prefix("cp.async.bulk.tensor.")
        .ok_or_else(|| format!("`{text}` (the emulator runs bulk copies of tensors only)"))?;
    let mut m = mods(0);
    let (mut dst_shared, mut src_global, mut complete) = (false, false, false);
    let mut rank = None;
    for p in rest.split('.') {
        match p {
            "1d" | "2d" | "3d" | "4d" | "5d" if rank.is_none() => {
                rank = Some(p.as_bytes()[0] - b'0');
            }
            "shared::cluster" | "shared::cta" if !dst_shared && !src_global => dst_shared = true,
            "global" if dst_shared => src_global = true,
            "tile" => {}
            "mbarrier::complete_tx::bytes" => complete = true,
            h if h.starts_with("L2::") => {}
            "global" => return Err(format!("`{text}` (stores to global memory; the emulator runs TMA loads into shared memory)")),
            other => return Err(format!("`{text}` (modifier `.{other}`)")),
        }
    }
    m.vec = rank.ok_or_else(|| format!("`{text}` (no dimension `.1d` to `.5d`)"))?;
    if !(dst_shared && src_global && complete) {
        return Err(format!(
            "`{text}` (the emulator runs `.shared::cluster.global.mbarrier::complete_tx::bytes` loads)"
        ));
    }
    m.space = Some(Space::Shared);
    Ok((Op::BulkTensor, Ty::B8, m))
}

/// `prefetch[.const|.param].tensormap`.
pub fn prefetch_tensormap(text: &str) -> Result<(Op, Ty, Mods), String> {
    match text {
        "prefetch.tensormap" | "prefetch.param.tensormap" | "prefetch.const.tensormap" => {
            Ok((Op::PrefetchTensorMap, Ty::B64, mods(0)))
        }
        _ => Err(format!("`{text}`")),
    }
}

/// `fence.mbarrier_init.release.cluster`: orders the initialisations before other threads'
/// use, which the emulator's program order already does.
pub fn mbarrier_init_fence(text: &str) -> Result<(Op, Ty, Mods), String> {
    match text {
        "fence.mbarrier_init.release.cluster" => Ok((Op::Membar, Ty::B32, mods(0))),
        _ => Err(format!("`{text}`")),
    }
}
