//! The canary scan on host memory laid out the way the worker lays out a device buffer.

use super::*;

/// A whole allocation for `elems` elements of `elem_size` bytes, guards filled.
fn image(layout: &GuardLayout) -> Vec<u8> {
    let mut all = vec![0u8; layout.total()];
    all[..layout.data_offset()].copy_from_slice(&layout.before_pattern());
    all[layout.after_offset()..].copy_from_slice(&layout.after_pattern());
    all
}

fn scan(layout: &GuardLayout, b: &Named, all: &[u8]) -> Vec<String> {
    let before = &all[..layout.data_offset()];
    let after = &all[layout.after_offset()..];
    layout
        .scan(b, before, after)
        .iter()
        .map(|d| d.to_string())
        .collect()
}

fn named(name: &str, elem_size: usize, elems: usize) -> Named {
    Named {
        name: name.into(),
        elem_size,
        elems,
    }
}

#[test]
fn layout_keeps_data_aligned_and_guards_at_least_as_asked() {
    let l = GuardLayout::new(1000, 65536);
    assert_eq!(l.data_offset(), 65536);
    assert_eq!(l.after_offset(), 66536);
    assert_eq!(l.after_len(), 24 + 65536);
    assert_eq!(l.total() % ALIGN, 0);
    let odd = GuardLayout::new(4096, 100);
    assert_eq!((odd.guard, odd.after_len(), odd.total()), (256, 256, 4608));
    let none = GuardLayout::new(12, 0);
    assert_eq!((none.data_offset(), none.after_len()), (0, 244));
}

#[test]
fn the_canary_depends_on_position() {
    let p = pattern(-64, 128);
    assert_eq!(p.len(), 128);
    assert!(p.windows(2).filter(|w| w[0] == w[1]).count() < 8, "{p:?}");
    assert_ne!(pattern(0, 64), pattern(64, 64));
    assert!(p.iter().any(|&b| b != 0) && p.iter().any(|&b| b != 0xff));
}

#[test]
fn untouched_guards_are_clean() {
    let l = GuardLayout::new(4 * 1000, 1024);
    let mut all = image(&l);
    // Writing every element of the data is fine.
    all[l.data_offset()..l.after_offset()].fill(0x3f);
    assert!(scan(&l, &named("c", 4, 1000), &all).is_empty());
}

#[test]
fn an_off_by_one_past_the_end_is_located() {
    let n = 1 << 20;
    let l = GuardLayout::new(4 * n, DEFAULT_GUARD_BYTES);
    let mut all = image(&l);
    // c[n + 3] = 1.0f
    let at = l.after_offset() + 4 * 3;
    all[at..at + 4].copy_from_slice(&1.0f32.to_le_bytes());
    assert_eq!(
        scan(&l, &named("c", 4, n), &all),
        ["wrote 4 bytes past the end of `c` (first at c[1048576+3])"]
    );
}

#[test]
fn a_write_before_the_start_is_located() {
    let l = GuardLayout::new(2 * 100, 512);
    let mut all = image(&l);
    // a[-2] and a[-1], f16: the first (lowest) is reported, both are counted.
    let at = l.data_offset() - 4;
    all[at..at + 4].copy_from_slice(&[0, 0x3c, 0, 0x3c]);
    assert_eq!(
        scan(&l, &named("a", 2, 100), &all),
        ["wrote 4 bytes before the start of `a` (first at a[-2])"]
    );
}

#[test]
fn damage_on_both_sides_and_in_the_padding() {
    // 3 f32: 12 bytes of data, 244 of padding before the guard proper.
    let l = GuardLayout::new(12, 256);
    let mut all = image(&l);
    all[0] ^= 0xff; // the first byte of the before guard: x[-64]
    let at = l.after_offset(); // x[3], in the padding
    all[at + 1] ^= 1;
    all[at + 9] ^= 1; // x[5]
    assert_eq!(
        scan(&l, &named("x", 4, 3), &all),
        [
            "wrote 4 bytes before the start of `x` (first at x[-64])",
            "wrote 8 bytes past the end of `x` (first at x[3+0])",
        ]
    );
}

#[test]
fn a_write_that_keeps_some_canary_bytes_still_counts_the_whole_element() {
    let l = GuardLayout::new(8, 256);
    let mut all = image(&l);
    let at = l.after_offset() + 8 * 2; // y[3] of f64
    all[at + 7] = !all[at + 7];
    assert_eq!(
        scan(&l, &named("y", 8, 1), &all),
        ["wrote 8 bytes past the end of `y` (first at y[1+2])"]
    );
}

#[test]
fn damage_either_side_of_a_scan_piece_boundary_is_counted_once_each() {
    let n = 3 << 20;
    let l = GuardLayout::new(n, 4 << 20);
    let mut all = image(&l);
    // Bytes either side of a 1 MiB piece boundary inside the before guard: two f64 slots.
    let boundary = 1 << 20;
    all[boundary - 1] ^= 0x55;
    all[boundary] ^= 0x55;
    all[boundary + 3] ^= 0x55;
    let d = l.scan(
        &named("z", 8, n / 8),
        &all[..l.data_offset()],
        &all[l.after_offset()..],
    );
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].bytes, d[0].first_elem), (16, -(3 << 17) - 1));
}

#[test]
fn an_overwritten_input_is_located() {
    let uploaded: Vec<u8> = (0..4000u32).map(|i| (i * 7) as u8).collect();
    let mut got = uploaded.clone();
    let a = named("a", 4, 1000);
    assert_eq!(scan_input(&a, &uploaded, &got), None);
    for i in [1000 * 4 - 4, 600 * 4 + 2, 601 * 4] {
        got[i] ^= 0x80;
    }
    let d = scan_input(&a, &uploaded, &got).unwrap();
    assert_eq!(
        d.to_string(),
        "wrote 12 bytes into input `a`, which the kernel must only read (first at a[600])"
    );
    assert_eq!(d.side, Where::Input);
}
