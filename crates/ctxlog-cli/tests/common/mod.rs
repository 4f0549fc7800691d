//! What the CLI's process-level tests share.

/// A small seeded source (splitmix64) for the random moments and damages of
/// the kill and damage tests.
pub struct Rng(pub u64);

impl Rng {
    /// The next value.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value below `n` (0 when `n` is 0).
    #[allow(dead_code)] // not every test uses it
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

/// Runs the `ctxlog` binary on the store at `db`; its output.
#[allow(dead_code)] // not every test uses it
pub fn ctxlog_at(db: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ctxlog"))
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .expect("run ctxlog")
}
