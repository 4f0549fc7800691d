//! The overflow check: the usable budget a policy derives from the model's
//! limits, the threshold, the count it reads from a call's usage, and
//! [`OverflowCheck`], the outcome.

use super::limits::{ModelLimits, TokenUsage};
use super::overflow_rule::{BudgetRule, Comparison, CountRule};
use super::settings::{Policy, FULL_THRESHOLD};
use serde::{Deserialize, Serialize};

/// The outcome of one overflow check, with the numbers used (for the audit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverflowCheck {
    /// The token count compared.
    pub count: u64,
    /// The usable budget; `None` when the context limit is 0.
    pub usable: Option<u64>,
    /// Whether the step overflowed: the count reached the policy's
    /// threshold, `usable` times its percentage (always false when `auto`
    /// is off).
    pub overflow: bool,
}

impl Policy {
    /// `maxOutputTokens(model) = min(limit.output, OUTPUT_TOKEN_MAX) || OUTPUT_TOKEN_MAX`.
    pub fn max_output_tokens(&self, limits: &ModelLimits) -> u64 {
        let cap = self.overflow.output_token_max;
        match limits.output {
            Some(out) if out > 0 => out.min(cap),
            _ => cap,
        }
    }

    /// The usable input budget for `limits`; `None` when auto-compaction can
    /// never fire (context limit 0).
    pub fn usable(&self, limits: &ModelLimits) -> Option<u64> {
        if limits.context == 0 {
            return None;
        }
        let max_out = self.max_output_tokens(limits);
        let input = limits.input.filter(|&i| i > 0);
        Some(match self.overflow.budget {
            BudgetRule::Seed => input.unwrap_or_else(|| limits.context.saturating_sub(max_out)),
            BudgetRule::Reserved { reserved, buffer } => match input {
                Some(i) => i.saturating_sub(reserved.unwrap_or(buffer.min(max_out))),
                None => limits.context.saturating_sub(max_out),
            },
            BudgetRule::ContextLess { output_cap, buffer } => input
                .unwrap_or(limits.context)
                .saturating_sub(max_out.min(output_cap))
                .saturating_sub(buffer),
        })
    }

    /// Where automatic compaction fires: `usable × threshold_percent / 100`
    /// (the percentage taken as 1–100); `None` without a context limit.
    pub fn threshold(&self, limits: &ModelLimits) -> Option<u64> {
        let percent = self.threshold_percent.clamp(1, FULL_THRESHOLD);
        self.usable(limits)
            .map(|u| (u128::from(u) * u128::from(percent) / 100) as u64)
    }

    /// The number compared with the budget.
    pub fn count(&self, tokens: &TokenUsage) -> u64 {
        match self.overflow.count {
            CountRule::InputCacheReadOutput => tokens
                .input
                .saturating_add(tokens.cache_read)
                .saturating_add(tokens.output),
            CountRule::TotalOrAllFour => match tokens.total {
                Some(t) if t > 0 => t,
                _ => tokens
                    .input
                    .saturating_add(tokens.output)
                    .saturating_add(tokens.cache_read)
                    .saturating_add(tokens.cache_write),
            },
        }
    }

    /// The overflow predicate for one finished step's usage.
    pub fn check_overflow(&self, limits: &ModelLimits, tokens: &TokenUsage) -> OverflowCheck {
        self.check_count(limits, self.count(tokens))
    }

    /// The overflow predicate for a count already made (the usage's
    /// [`Policy::count`], plus what came after it when checked before a
    /// request).
    pub fn check_count(&self, limits: &ModelLimits, count: u64) -> OverflowCheck {
        let usable = self.usable(limits);
        let overflow = match self.threshold(limits) {
            Some(u) if self.auto => match self.overflow.comparison {
                Comparison::Greater => count > u,
                Comparison::GreaterOrEqual => count >= u,
            },
            _ => false,
        };
        OverflowCheck {
            count,
            usable,
            overflow,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(context: u64, input: Option<u64>, output: Option<u64>) -> ModelLimits {
        ModelLimits {
            context,
            input,
            output,
        }
    }

    fn usage(input: u64, cache_read: u64, output: u64) -> TokenUsage {
        TokenUsage {
            input,
            cache_read,
            output,
            ..TokenUsage::default()
        }
    }

    /// Each agent preset fires where its agent does: (preset, limits,
    /// last count that fits, first count that overflows).
    #[test]
    fn agent_presets_fire_at_their_agents_thresholds() {
        let cases = [
            (
                Policy::claude_code_2_1(),
                limits(200_000, None, Some(64_000)),
                166_999,
                167_000,
            ),
            (
                Policy::claude_code_2_1(),
                limits(200_000, None, Some(8_000)),
                178_999,
                179_000,
            ),
            (
                Policy::codex_0_169(),
                limits(272_000, None, None),
                244_799,
                244_800,
            ),
            (
                Policy::pi_0_73(),
                limits(200_000, None, None),
                183_616,
                183_617,
            ),
            (
                Policy::goose(),
                limits(128_000, None, None),
                102_400,
                102_401,
            ),
        ];
        for (policy, limits, fits, overflows) in cases {
            let at = |n: u64| {
                policy
                    .check_overflow(
                        &limits,
                        &TokenUsage {
                            total: Some(n),
                            ..TokenUsage::default()
                        },
                    )
                    .overflow
            };
            assert!(!at(fits), "{}: {fits} fits", policy.name);
            assert!(at(overflows), "{}: {overflows} overflows", policy.name);
            assert_eq!(Policy::preset(&policy.name), Some(policy.clone()));
        }
    }

    #[test]
    fn the_threshold_percentage_scales_the_usable_budget() {
        let mut p = Policy::opencode_1_17();
        let l = limits(100_000, None, Some(10_000));
        assert_eq!(p.usable(&l), Some(90_000));
        assert_eq!(p.threshold(&l), Some(90_000));
        p.threshold_percent = 50;
        assert_eq!(p.threshold(&l), Some(45_000));
        let check = p.check_overflow(&l, &usage(45_000, 0, 0));
        assert!(check.overflow);
        assert_eq!(
            check.usable,
            Some(90_000),
            "the check keeps the usable budget"
        );
        assert!(!p.check_overflow(&l, &usage(44_999, 0, 0)).overflow);
        // Out of range: taken as 1..=100.
        p.threshold_percent = 0;
        assert_eq!(p.threshold(&l), Some(900));
        p.threshold_percent = 250;
        assert_eq!(p.threshold(&l), Some(90_000));
        assert_eq!(
            Policy::opencode_seed().threshold(&limits(0, None, None)),
            None
        );
    }

    #[test]
    fn seed_overflow_table() {
        let p = Policy::opencode_seed();
        // (limits, usage, expected usable, expected overflow)
        let cases: Vec<(ModelLimits, TokenUsage, Option<u64>, bool)> = vec![
            // 200k context, 64k output: reserve min(64k,32k) = 32k -> usable 168k
            (
                limits(200_000, None, Some(64_000)),
                usage(100_000, 68_000, 0),
                Some(168_000),
                false,
            ), // == usable
            (
                limits(200_000, None, Some(64_000)),
                usage(100_000, 68_000, 1),
                Some(168_000),
                true,
            ), // usable + 1
            // output limit below the cap: reserve = output
            (
                limits(128_000, None, Some(16_384)),
                usage(111_616, 0, 0),
                Some(111_616),
                false,
            ),
            (
                limits(128_000, None, Some(16_384)),
                usage(111_617, 0, 0),
                Some(111_616),
                true,
            ),
            // no output limit: reserve 32k
            (
                limits(100_000, None, None),
                usage(68_001, 0, 0),
                Some(68_000),
                true,
            ),
            // input limit preferred over context - reserve
            (
                limits(400_000, Some(272_000), Some(128_000)),
                usage(272_000, 0, 0),
                Some(272_000),
                false,
            ),
            (
                limits(400_000, Some(272_000), Some(128_000)),
                usage(200_000, 72_000, 1),
                Some(272_000),
                true,
            ),
            // context 0: never
            (
                limits(0, None, Some(4_096)),
                usage(10_000_000, 0, 0),
                None,
                false,
            ),
            // reasoning and cache_write are not counted by the seed rule
            (
                limits(100_000, None, Some(32_000)),
                TokenUsage {
                    input: 60_000,
                    reasoning: 50_000,
                    cache_write: 50_000,
                    ..Default::default()
                },
                Some(68_000),
                false,
            ),
        ];
        for (i, (l, u, usable, overflow)) in cases.iter().enumerate() {
            let c = p.check_overflow(l, u);
            assert_eq!(c.usable, *usable, "case {i}: usable");
            assert_eq!(c.overflow, *overflow, "case {i}: overflow ({c:?})");
        }
    }

    #[test]
    fn no_overflow_without_automatic_compaction() {
        let off = Policy {
            auto: false,
            ..Policy::opencode_seed()
        };
        assert!(
            !off.check_overflow(&limits(1000, None, None), &usage(1_000_000, 0, 0))
                .overflow
        );
    }

    #[test]
    fn opencode_1_17_overflow_table() {
        let p = Policy::opencode_1_17();
        let total = |t: u64| TokenUsage {
            total: Some(t),
            ..Default::default()
        };
        let cases: Vec<(ModelLimits, TokenUsage, Option<u64>, bool)> = vec![
            // no input limit: context - maxOut; >= fires at equality
            (
                limits(200_000, None, Some(64_000)),
                total(168_000),
                Some(168_000),
                true,
            ),
            (
                limits(200_000, None, Some(64_000)),
                total(167_999),
                Some(168_000),
                false,
            ),
            // with input limit: input - min(20k, maxOut)
            (
                limits(400_000, Some(272_000), Some(128_000)),
                total(252_000),
                Some(252_000),
                true,
            ),
            (limits(0, Some(100_000), Some(8_192)), total(1), None, false),
            (
                limits(120_000, Some(100_000), Some(8_192)),
                total(91_808),
                Some(91_808),
                true,
            ),
            // total absent: all four counts
            (
                limits(200_000, None, Some(64_000)),
                TokenUsage {
                    input: 3,
                    output: 1480,
                    cache_write: 15438,
                    cache_read: 151_079,
                    ..Default::default()
                },
                Some(168_000),
                true,
            ),
            // usable clamps at 0: every step overflows (the upstream loop quirk)
            (
                limits(200_000, Some(10_000), Some(64_000)),
                total(0),
                Some(0),
                true,
            ),
        ];
        for (i, (l, u, usable, overflow)) in cases.iter().enumerate() {
            let c = p.check_overflow(l, u);
            assert_eq!(c.usable, *usable, "case {i}: usable");
            assert_eq!(c.overflow, *overflow, "case {i}: overflow ({c:?})");
        }
        // `reserved` applies only with an input limit
        let mut r = Policy::opencode_1_17();
        r.overflow.budget = BudgetRule::Reserved {
            reserved: Some(50_000),
            buffer: 20_000,
        };
        assert_eq!(
            r.usable(&limits(400_000, Some(272_000), Some(128_000))),
            Some(222_000)
        );
        assert_eq!(
            r.usable(&limits(200_000, None, Some(64_000))),
            Some(168_000)
        );
    }
}
