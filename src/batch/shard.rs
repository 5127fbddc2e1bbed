//! Shards for a cluster, with no scheduler of kwb's own: `kwb batch --shard K/N` runs the jobs
//! whose place in the plan is K modulo N (sizes outer, versions inner, after `--sizes` and
//! `--versions`), so every shard is fixed by the workspace alone and the N shards cover the
//! plan exactly once. Round-robin spreads every size over the shards, so no shard gets all of
//! the largest. `kwb merge` puts the shard reports back together.

use crate::report::ShardMark;

/// Shard `index` of `count` (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// `K/N` with `0 <= K < N`: the form a Slurm array index, a Kubernetes completion index
    /// or a CI matrix index gives.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = || format!("--shard `{text}`: expected K/N with 0 <= K < N, e.g. 0/4");
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let index: u32 = k.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// Whether the job at `place` in the plan belongs to this shard.
    pub fn owns(&self, place: usize) -> bool {
        place % self.count as usize == self.index as usize
    }

    /// The mark a shard's report carries.
    pub fn mark(&self, sizes: Vec<String>, versions: Vec<String>) -> ShardMark {
        ShardMark {
            index: self.index,
            count: self.count,
            sizes,
            versions,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_cover_the_plan_exactly_once() {
        assert_eq!(Shard::parse("1/3"), Ok(Shard { index: 1, count: 3 }));
        for bad in ["3/3", "1", "a/2", "0/0", "-1/2"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        let shards: Vec<Shard> = (0..3).map(|i| Shard { index: i, count: 3 }).collect();
        for place in 0..20 {
            assert_eq!(shards.iter().filter(|s| s.owns(place)).count(), 1);
        }
    }
}
