//! Decoding the synchronisation opcodes that carry a value or an arrival: the barrier
//! reductions behind `__syncthreads_and`, `_or` and `_count` (`bar.red`), and the `cp.async`
//! bookkeeping (`commit_group`, `wait_group`, `wait_all`, `mbarrier.arrive[.noinc]`).

use super::inst::*;

fn mods(sub: u8) -> Mods {
    Mods {
        vec: 1,
        sub,
        ..Mods::default()
    }
}

/// `bar[.cta].red.{and,or}.pred` and `bar[.cta].red.popc.u32`, also spelt
/// `barrier[.cta].red.OP[.aligned].TYPE` (NVRTC emits `bar.red.and.pred`, `bar.red.or.pred`
/// and `bar.red.popc.u32`). The operands are the destination, the barrier, an optional thread
/// count and the (possibly negated) predicate.
pub fn barrier_red(text: &str) -> Result<(Op, Ty, Mods), String> {
    let mut parts = text.split('.').skip(1).peekable();
    if parts.peek() == Some(&"cta") {
        parts.next();
    }
    if parts.next() != Some("red") {
        return Err(format!("`{text}`"));
    }
    let (mut sub, mut ty) = (None, None);
    for p in parts {
        match p {
            "and" if sub.is_none() => sub = Some(RED_AND),
            "or" if sub.is_none() => sub = Some(RED_OR),
            "popc" if sub.is_none() => sub = Some(RED_POPC),
            "aligned" | "sync" => {}
            "pred" | "u32" if ty.is_none() => ty = Ty::parse(p),
            other => return Err(format!("`{text}` (modifier `.{other}`)")),
        }
    }
    match (sub, ty) {
        (Some(RED_AND | RED_OR), Some(Ty::Pred)) | (Some(RED_POPC), Some(Ty::U32)) => {}
        _ => {
            return Err(format!(
                "`{text}` (the emulator runs `.red.and.pred`, `.red.or.pred` and `.red.popc.u32`)"
            ))
        }
    }
    let (sub, ty) = (sub.unwrap_or_default(), ty.unwrap_or(Ty::Pred));
    Ok((Op::BarRed, ty, mods(sub)))
}

/// `cp.async.commit_group`, `cp.async.wait_group`, `cp.async.wait_all`, and
/// `cp.async.mbarrier.arrive[.noinc].shared[::cta].b64`.
pub fn cp_async_sync(text: &str) -> Result<(Op, Ty, Mods), String> {
    let group = |sub| Ok((Op::CpAsyncGroup, Ty::B32, mods(sub)));
    match text {
        "cp.async.commit_group" => return group(CPA_COMMIT),
        "cp.async.wait_group" => return group(CPA_WAIT_GROUP),
        "cp.async.wait_all" => return group(CPA_WAIT_ALL),
        _ => {}
    }
    let rest = text
        .strip_prefix("cp.async.mbarrier.arrive")
        .ok_or_else(|| format!("`{text}`"))?;
    let mut m = mods(0);
    let typed = rest.ends_with(".b64");
    for p in rest.split('.').skip(1) {
        match p {
            "noinc" if m.sub == 0 => m.sub = 1,
            "shared" | "shared::cta" => m.space = Some(Space::Shared),
            "b64" => {}
            other => return Err(format!("`{text}` (modifier `.{other}`)")),
        }
    }
    if !typed {
        return Err(format!("`{text}` (no `.b64`)"));
    }
    Ok((Op::CpAsyncArrive, Ty::B64, m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barrier_reductions_and_cp_async_arrivals_decode() {
        for (text, sub, ty) in [
            ("bar.red.and.pred", RED_AND, Ty::Pred),
            ("bar.red.or.pred", RED_OR, Ty::Pred),
            ("bar.red.popc.u32", RED_POPC, Ty::U32),
            ("barrier.cta.red.popc.aligned.u32", RED_POPC, Ty::U32),
            ("barrier.red.or.pred", RED_OR, Ty::Pred),
        ] {
            assert_eq!(barrier_red(text), Ok((Op::BarRed, ty, mods(sub))), "{text}");
        }
        for bad in ["bar.red.popc.pred", "bar.red.and.u32", "bar.red.xor.pred"] {
            let e = barrier_red(bad).unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
        let (op, _, m) = cp_async_sync("cp.async.mbarrier.arrive.noinc.shared::cta.b64").unwrap();
        assert_eq!((op, m.sub), (Op::CpAsyncArrive, 1));
        let (op, _, m) = cp_async_sync("cp.async.mbarrier.arrive.shared.b64").unwrap();
        assert_eq!((op, m.sub), (Op::CpAsyncArrive, 0));
        let e = cp_async_sync("cp.async.mbarrier.arrive.shared::cluster.b64").unwrap_err();
        assert!(e.contains("shared::cluster"), "{e}");
        let (op, _, m) = cp_async_sync("cp.async.wait_group").unwrap();
        assert_eq!((op, m.sub), (Op::CpAsyncGroup, CPA_WAIT_GROUP));
    }
}
