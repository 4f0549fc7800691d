//! [`Lookup`]: the state's id → position tables. Ids mostly arrive in
//! increasing order (every id source ctxlog uses puts the time first), so
//! they go to a sorted `Vec` (24 bytes an entry for a part id, against about
//! 50 in a `BTreeMap`); an id that arrives out of order goes to a
//! `BTreeMap` beside it. Lookups cost O(log n) either way.

use std::collections::BTreeMap;

/// A map from ids to positions, kept compact for ids in increasing order.
#[derive(Debug, Clone)]
pub(crate) struct Lookup<K, V> {
    /// Keys strictly increasing.
    ordered: Vec<(K, V)>,
    /// Keys that arrived out of order.
    late: BTreeMap<K, V>,
}

impl<K, V> Default for Lookup<K, V> {
    fn default() -> Self {
        Lookup {
            ordered: Vec::new(),
            late: BTreeMap::new(),
        }
    }
}

impl<K: Ord + Copy, V: Copy> Lookup<K, V> {
    /// The value of `key`.
    pub(crate) fn get(&self, key: &K) -> Option<V> {
        match self.ordered.binary_search_by(|(k, _)| k.cmp(key)) {
            Ok(i) => self.ordered.get(i).map(|&(_, v)| v),
            Err(_) => self.late.get(key).copied(),
        }
    }

    /// Sets `key` to `value`.
    pub(crate) fn insert(&mut self, key: K, value: V) {
        match self.ordered.last() {
            Some((last, _)) if *last >= key => {
                match self.ordered.binary_search_by(|(k, _)| k.cmp(&key)) {
                    Ok(i) => {
                        if let Some(slot) = self.ordered.get_mut(i) {
                            slot.1 = value;
                        }
                    }
                    Err(_) => {
                        self.late.insert(key, value);
                    }
                }
            }
            _ if self.late.contains_key(&key) => {
                self.late.insert(key, value);
            }
            _ => self.ordered.push((key, value)),
        }
    }

    /// Keeps the keys whose value `f` maps to `Some`, with that value
    /// (the order of the keys is kept, so the table stays compact).
    pub(crate) fn filter_map_values(&mut self, mut f: impl FnMut(V) -> Option<V>) {
        self.ordered.retain_mut(|(_, v)| match f(*v) {
            Some(new) => {
                *v = new;
                true
            }
            None => false,
        });
        if self.ordered.len() < self.ordered.capacity() / 4 {
            self.ordered.shrink_to(self.ordered.len() * 2);
        }
        self.late.retain(|_, v| match f(*v) {
            Some(new) => {
                *v = new;
                true
            }
            None => false,
        });
    }

    /// The number of keys.
    pub(crate) fn len(&self) -> usize {
        self.ordered.len() + self.late.len()
    }
}

/// Equal when they map the same keys to the same values, however the keys
/// arrived.
impl<K: Ord + Copy, V: Copy + PartialEq> PartialEq for Lookup<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .ordered
                .iter()
                .map(|(k, v)| (k, v))
                .chain(self.late.iter())
                .all(|(k, v)| other.get(k) == Some(*v))
    }
}

#[cfg(test)]
mod tests {
    use super::Lookup;
    use std::collections::BTreeMap;

    #[test]
    fn a_lookup_answers_as_a_btreemap_whatever_the_order_of_keys() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut lookup = Lookup::default();
        let mut model = BTreeMap::new();
        for i in 0..5_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Mostly increasing, sometimes out of order, sometimes again.
            let key = match x % 10 {
                0 => x % 4_000,
                1 => u64::from(i.saturating_sub(3)) * 10,
                _ => u64::from(i) * 10 + 5,
            };
            lookup.insert(key, i);
            model.insert(key, i);
            assert_eq!(lookup.len(), model.len());
        }
        for k in 0..60_000u64 {
            assert_eq!(lookup.get(&k), model.get(&k).copied(), "key {k}");
        }
        let mut reversed = Lookup::default();
        for (k, v) in model.iter().rev() {
            reversed.insert(*k, *v);
        }
        assert_eq!(lookup, reversed);
        reversed.insert(7, 1);
        assert_ne!(lookup, reversed);
        // Dropping the values below 2,500 and shifting the rest.
        lookup.filter_map_values(|v| v.checked_sub(2_500));
        model.retain(|_, v| *v >= 2_500);
        model.values_mut().for_each(|v| *v -= 2_500);
        assert_eq!(lookup.len(), model.len());
        for k in 0..60_000u64 {
            assert_eq!(lookup.get(&k), model.get(&k).copied(), "key {k}");
        }
    }
}
