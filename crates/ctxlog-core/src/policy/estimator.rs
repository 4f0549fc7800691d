//! [`Estimator`]: the token estimate of a text, counted in UTF-16 units as
//! JavaScript counts them.

use serde::{Deserialize, Serialize};

/// The token estimator used for tool outputs and turn sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Estimator {
    /// `round_half_up(utf16_len / chars_per_token)`, what OpenCode's
    /// `Math.round(text.length / 4)` computes.
    CharsPerToken {
        /// Characters (UTF-16 code units) per token; 4 in OpenCode.
        chars_per_token: u32,
    },
    /// `ceil(utf8_bytes / bytes_per_token)`, and a tool result counts its
    /// call id's bytes with its output's: what Codex 0.169 adds for each
    /// item after the model's last output (measured on its binary: a
    /// 115-byte output of call `call_2` is ceil(121 / 4) = 31; added in
    /// event schema 10). A sealed part keeps only its UTF-16 length, so
    /// its estimate counts units for bytes (the same for ASCII).
    BytesPerToken {
        /// UTF-8 bytes per token; 4 in Codex.
        bytes_per_token: u32,
    },
}

impl Estimator {
    /// Estimated tokens of a text of `units` UTF-16 code units.
    pub fn estimate_units(&self, units: u64) -> u64 {
        match *self {
            Estimator::CharsPerToken { chars_per_token } => {
                estimate_tokens(units, chars_per_token as u64)
            }
            Estimator::BytesPerToken { bytes_per_token } => {
                units.div_ceil(u64::from(bytes_per_token.max(1)))
            }
        }
    }

    /// Estimated tokens of `text`.
    pub fn estimate(&self, text: &str) -> u64 {
        match *self {
            Estimator::CharsPerToken { chars_per_token } => {
                estimate_tokens(utf16_len(text), chars_per_token as u64)
            }
            Estimator::BytesPerToken { bytes_per_token } => {
                (text.len() as u64).div_ceil(u64::from(bytes_per_token.max(1)))
            }
        }
    }

    /// Estimated tokens of a tool result sent as `text` for call `call_id`.
    pub fn estimate_result(&self, call_id: &str, text: &str) -> u64 {
        match *self {
            Estimator::CharsPerToken { .. } => self.estimate(text),
            Estimator::BytesPerToken { bytes_per_token } => {
                ((call_id.len() + text.len()) as u64).div_ceil(u64::from(bytes_per_token.max(1)))
            }
        }
    }

    /// The characters (or bytes) per token, at least 1.
    pub fn per_token(&self) -> u64 {
        match *self {
            Estimator::CharsPerToken { chars_per_token } => u64::from(chars_per_token.max(1)),
            Estimator::BytesPerToken { bytes_per_token } => u64::from(bytes_per_token.max(1)),
        }
    }
}

/// Length in UTF-16 code units: what JavaScript's `String.length` counts.
///
/// Counted on the bytes: every byte that starts a char is one unit, and a
/// 4-byte char (lead byte `0xF0..=0xF4`) is a surrogate pair, one more. The
/// loop has no branches, so it vectorizes; the prune walk and every window
/// estimate run it over whole tool outputs (it was the top user-space symbol
/// of the benchmark's profile when it decoded chars).
pub fn utf16_len(text: &str) -> u64 {
    let bytes = text.as_bytes();
    // Most text an agent sees is ASCII: one unit a byte, checked a word at
    // a time.
    if bytes.is_ascii() {
        return bytes.len() as u64;
    }
    // Counted in `u32` lanes (twice as many per vector as `u64`), a chunk
    // short enough that a lane cannot overflow (at most 2 a byte).
    bytes
        .chunks(1 << 30)
        .map(|chunk| {
            let units: u32 = chunk
                .iter()
                .map(|&b| u32::from(b & 0xC0 != 0x80) + u32::from(b >= 0xF0))
                .sum();
            u64::from(units)
        })
        .sum()
}

/// `round_half_up(units / per_token)` with integer arithmetic; `per_token`
/// of 0 is treated as 1.
pub fn estimate_tokens(units: u64, per_token: u64) -> u64 {
    let d = per_token.max(1);
    // floor((units + d/2) / d) == round-half-up for the exact quotient
    // when d is even; for odd d, (2u + d) / 2d is exact.
    (2 * units + d) / (2 * d)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn utf16_len_counts_like_char_decoding(s in ".*") {
            let by_chars: u64 = s.chars().map(|c| c.len_utf16() as u64).sum();
            proptest::prop_assert_eq!(utf16_len(&s), by_chars);
        }
    }

    #[test]
    fn utf16_len_of_every_width() {
        assert_eq!(utf16_len(""), 0);
        assert_eq!(utf16_len("a"), 1);
        assert_eq!(utf16_len("é"), 1);
        assert_eq!(utf16_len("日本"), 2);
        assert_eq!(utf16_len("😀"), 2);
        assert_eq!(utf16_len("a😀é日"), 5);
    }

    #[test]
    fn codex_counts_utf8_bytes_rounded_up_and_a_results_call_id() {
        let e = Estimator::BytesPerToken { bytes_per_token: 4 };
        assert_eq!(e.estimate(""), 0);
        assert_eq!(e.estimate("a"), 1);
        assert_eq!(e.estimate("abcd"), 1);
        assert_eq!(e.estimate("abcde"), 2);
        assert_eq!(e.estimate("ééé"), 2, "6 bytes");
        // Codex 0.169, measured: 115 bytes of output of `call_2` are 31.
        assert_eq!(e.estimate_result("call_2", &"x".repeat(115)), 31);
        assert_eq!(e.estimate_result("call_2", &"x".repeat(105)), 28);
        assert_eq!(e.estimate_result("c", &"x".repeat(106)), 27);
    }

    #[test]
    fn estimate_rounds_half_up_on_utf16_units() {
        let e = Estimator::CharsPerToken { chars_per_token: 4 };
        let table: &[(&str, u64)] = &[
            ("", 0),
            ("a", 0),          // 0.25
            ("ab", 1),         // 0.5 rounds up
            ("abc", 1),        // 0.75
            ("abcd", 1),       // 1.0
            ("abcde", 1),      // 1.25
            ("abcdef", 2),     // 1.5 rounds up
            ("😀", 1),         // 2 UTF-16 units (surrogate pair) -> 0.5 -> 1
            ("é", 0),          // 1 unit, 2 UTF-8 bytes
            ("😀😀😀", 2),     // 6 units -> 1.5 -> 2
            ("日本語です", 1), // 5 units -> 1.25
        ];
        for (text, want) in table {
            assert_eq!(e.estimate(text), *want, "estimate({text:?})");
        }
        assert_eq!(utf16_len("😀a"), 3);
        // odd divisor: 5 units / 3 = 1.67 -> 2; 4/3 = 1.33 -> 1; 3/2=1.5 -> 2
        assert_eq!(estimate_tokens(5, 3), 2);
        assert_eq!(estimate_tokens(4, 3), 1);
        assert_eq!(estimate_tokens(3, 2), 2);
    }
}
