use super::*;

const BF16: Arith = Arith {
    dtype: Scalar::BF16,
};
const F32: Arith = Arith { dtype: Scalar::F32 };

fn values(v: &[f64]) -> Vec<Term> {
    v.iter().map(|&x| Term::Value(x)).collect()
}

#[test]
fn triton_releases_map_to_their_order() {
    for (major, minor) in [(3, 0), (3, 5), (3, 6), (3, 7)] {
        assert_eq!(SumOrder::of_release(major, minor), SumOrder::Sequential);
    }
    for (major, minor) in [(3, 8), (3, 9), (3, 10), (4, 0)] {
        assert_eq!(SumOrder::of_release(major, minor), SumOrder::Tree);
    }
}

#[test]
fn sixteen_bit_orders_round_differently() {
    // 1 + 2^-8 is a bf16 tie that rounds to even (1.0); two of the 2^-8 added first survive.
    let t = values(&[1.0, 2f64.powi(-8), 2f64.powi(-8), 2f64.powi(-8)]);
    assert_eq!(BF16.thread(SumOrder::Sequential, &t), 1.0);
    // Tree, four bf16 registers: the even ones (1 + 2^-8 → 1) and the odd ones (2^-7) apart.
    assert_eq!(BF16.thread(SumOrder::Tree, &t), 1.0 + 2f64.powi(-7));
    // fp32 keeps every bit here, in either order.
    assert_eq!(F32.thread(SumOrder::Tree, &t), 1.0 + 3.0 * 2f64.powi(-8));
}

#[test]
fn a_contracted_product_keeps_its_low_bits() {
    let (a, c, d) = (1.0 + 2f64.powi(-7), -1.0, 1.0 + 2f64.powi(-6));
    // a * a = 1 + 2^-6 + 2^-14: rounded alone it loses 2^-14, fused into the add it keeps it.
    // Both orders take the first two terms as a pair: the first product fused, the second
    // rounded.
    let first_fused = [Term::Product(a, a), Term::Product(c, d)];
    let second_fused = [Term::Product(c, d), Term::Product(a, a)];
    for order in [SumOrder::Sequential, SumOrder::Tree] {
        assert_eq!(
            BF16.thread(order, &first_fused),
            2f64.powi(-14),
            "{order:?}"
        );
        assert_eq!(BF16.thread(order, &second_fused), 0.0, "{order:?}");
    }
    // Later terms of a fold are fused onto the running sum.
    let third = [Term::Value(0.0), Term::Product(c, d), Term::Product(a, a)];
    assert_eq!(BF16.thread(SumOrder::Sequential, &third), 2f64.powi(-14));
}

#[test]
fn butterflies_leave_the_total_in_every_lane() {
    let mut lanes: Vec<f64> = (0..32).map(f64::from).collect();
    F32.butterfly(&mut lanes);
    assert!(lanes.iter().all(|&v| v == 496.0));
}

#[test]
fn full_sums_count_each_element_once() {
    // Exact in fp32: small integers. Covers several registers per thread, one, and a tile
    // smaller than the program (copies held by several threads).
    for (numel, warps, vec) in [(4096, 8, 8), (256, 4, 4), (64, 4, 4), (8, 1, 4)] {
        let l = Blocked::new(numel, warps * 32, vec);
        for order in [SumOrder::Sequential, SumOrder::Tree] {
            let s = full_sum(&F32, order, l, &|g| Term::Value((g % 7) as f64));
            let want: u64 = (0..numel).map(|g| g % 7).sum();
            assert_eq!(s, want as f64, "{numel}/{warps}/{vec} {order:?}");
        }
    }
}

#[test]
fn blocked_layouts_hold_every_element() {
    let l = Blocked::new(4096, 256, 8);
    assert_eq!((l.vec, l.ept), (8, 16));
    assert_eq!(l.flat(1, 0), 8);
    assert_eq!(l.flat(0, 8), 2048);
    let small = Blocked::new(64, 128, 4);
    assert_eq!((small.vec, small.ept), (1, 1));
    assert!(!small.owns(64, 0));
}
