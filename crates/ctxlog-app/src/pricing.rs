//! What a step would have cost at list prices: the price table kept as data
//! in the repository (`data/pricing.json`: per model, dollars per million
//! input, output, cache-read and cache-write tokens, with its source,
//! licence and date), which an override file can extend or replace model by
//! model. Used only where a recording gives no cost; such costs are marked
//! as estimated wherever they are shown.

use ctxlog_core::TokenUsage;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The table kept in the repository.
const BUILT_IN: &str = include_str!("../data/pricing.json");

/// A model's prices, US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// Uncached input.
    pub input: f64,
    /// Output (reasoning included).
    pub output: f64,
    /// Input read from the cache.
    pub cache_read: f64,
    /// Input written to the cache.
    pub cache_write: f64,
    /// The prices of a request whose input is above a size, when the
    /// provider bills long requests higher.
    #[serde(default)]
    pub long_context: Option<LongContext>,
}

/// Prices for a whole request whose input is above `above` tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LongContext {
    /// The input size (uncached, cache read and cache write) above which
    /// these prices apply.
    pub above: u64,
    /// Uncached input.
    pub input: f64,
    /// Output.
    pub output: f64,
    /// Cache read.
    pub cache_read: f64,
    /// Cache write.
    pub cache_write: f64,
}

/// A price table: where its prices come from and the prices by model id.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PriceTable {
    /// What the table is.
    #[serde(default)]
    pub about: String,
    /// Where its prices come from.
    #[serde(default)]
    pub source: String,
    /// The source's licence.
    #[serde(default)]
    pub licence: String,
    /// When the prices were taken.
    #[serde(default)]
    pub date: String,
    /// Prices by model id (without provider or date).
    pub models: BTreeMap<String, Prices>,
}

/// A price table that does not read.
#[derive(Debug, thiserror::Error)]
pub enum PricingError {
    /// The override file cannot be read.
    #[error("{path}: cannot read the price table: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// It is not a price table.
    #[error("{path}: not a price table (line {line}, column {column}): {message}")]
    Parse {
        /// The file.
        path: String,
        /// Where.
        line: usize,
        /// Where.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A price is negative or not a number.
    #[error("{path}: model {model:?}: a price must be a non-negative number")]
    Negative {
        /// The file.
        path: String,
        /// The model.
        model: String,
    },
}

impl PriceTable {
    /// The table kept in the repository.
    pub fn built_in() -> PriceTable {
        parse(BUILT_IN, "data/pricing.json").unwrap_or_else(|e| {
            // The built-in table is checked by a test; were it ever broken,
            // costs are not estimated rather than the command failing.
            tracing::error!(error = %e, "the built-in price table does not read");
            PriceTable {
                about: String::new(),
                source: String::new(),
                licence: String::new(),
                date: String::new(),
                models: BTreeMap::new(),
            }
        })
    }

    /// The built-in table with the models of the file at `path` replacing
    /// or adding to its own.
    pub fn with_override(path: &Path) -> Result<PriceTable, PricingError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| PricingError::Read {
            path: name.clone(),
            source,
        })?;
        let over = parse(&text, &name)?;
        let mut table = PriceTable::built_in();
        table.source = format!("{} (overridden by {name}: {})", table.source, over.source);
        table.models.extend(over.models);
        Ok(table)
    }

    /// The prices of `model` (`anthropic/claude-sonnet-4-5-20250929`,
    /// `gpt-5-codex`): by its id without the provider, else without a date
    /// suffix.
    pub fn prices(&self, model: &str) -> Option<&Prices> {
        let id = model.rsplit('/').next().unwrap_or(model);
        self.models
            .get(id)
            .or_else(|| self.models.get(without_date(id)))
    }
}

/// `claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`, `gpt-4.1-2025-04-14`
/// → `gpt-4.1`; `-latest` too.
fn without_date(id: &str) -> &str {
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((name, d)) = id.rsplit_once('-') {
        if digits(d, 8) || d == "latest" {
            return name;
        }
    }
    // A dashed date: the last three components.
    let mut parts = id.rsplitn(4, '-');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(d), Some(m), Some(y), Some(name)) if digits(y, 4) && digits(m, 2) && digits(d, 2) => {
            name
        }
        _ => id,
    }
}

fn parse(text: &str, path: &str) -> Result<PriceTable, PricingError> {
    let table: PriceTable = serde_json::from_str(text).map_err(|e| PricingError::Parse {
        path: path.to_owned(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    for (model, p) in &table.models {
        let mut all = vec![p.input, p.output, p.cache_read, p.cache_write];
        if let Some(l) = &p.long_context {
            all.extend([l.input, l.output, l.cache_read, l.cache_write]);
        }
        if !all.iter().all(|x| x.is_finite() && *x >= 0.0) {
            return Err(PricingError::Negative {
                path: path.to_owned(),
                model: model.clone(),
            });
        }
    }
    Ok(table)
}

impl Prices {
    /// What `tokens` cost at these prices, in US dollars: uncached input,
    /// output and reasoning, cache reads and writes, each at its price (the
    /// long-context prices when the request's input is above their size).
    pub fn cost(&self, tokens: &TokenUsage) -> f64 {
        let input = tokens
            .input
            .saturating_add(tokens.cache_read)
            .saturating_add(tokens.cache_write);
        let (i, o, r, w) = match &self.long_context {
            Some(l) if input > l.above => (l.input, l.output, l.cache_read, l.cache_write),
            _ => (self.input, self.output, self.cache_read, self.cache_write),
        };
        let n = |x: u64| x as f64;
        (n(tokens.input) * i
            + n(tokens.output.saturating_add(tokens.reasoning)) * o
            + n(tokens.cache_read) * r
            + n(tokens.cache_write) * w)
            / 1_000_000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_table_reads_and_finds_models_by_their_ids() {
        let table = parse(BUILT_IN, "data/pricing.json").unwrap();
        assert!(table.source.contains("LiteLLM") && table.licence.contains("MIT"));
        assert!(!table.date.is_empty());
        let sonnet = table
            .prices("anthropic/claude-sonnet-4-5-20250929")
            .unwrap();
        assert_eq!(sonnet.input, 3.0);
        assert_eq!(table.prices("gpt-5-codex").unwrap().output, 10.0);
        assert!(table.prices("gpt-5-codex-mini-unknown").is_none());
        assert_eq!(
            table.prices("openai/gpt-4.1-2025-04-14").unwrap().input,
            2.0
        );
        assert_eq!(without_date("o3-2025-04-16"), "o3");
        assert_eq!(without_date("gpt-5"), "gpt-5");
        let tokens = TokenUsage {
            total: None,
            input: 1_000,
            output: 2_000,
            reasoning: 0,
            cache_read: 10_000,
            cache_write: 4_000,
        };
        // 1k × $3 + 2k × $15 + 10k × $0.30 + 4k × $3.75, per million.
        let cost = sonnet.cost(&tokens);
        assert!((cost - 0.051).abs() < 1e-12, "{cost}");
        let long = TokenUsage {
            cache_read: 250_000,
            ..tokens
        };
        let cost = sonnet.cost(&long);
        assert!(
            (cost - (1_000.0 * 6.0 + 2_000.0 * 22.5 + 250_000.0 * 0.6 + 4_000.0 * 7.5) / 1e6).abs()
                < 1e-12
        );
    }

    #[test]
    fn an_override_that_is_not_a_table_is_named() {
        let e = parse("{\"models\": {\"m\": {\"input\": -1, \"output\": 1, \"cache_read\": 0, \"cache_write\": 0}}}", "p.json").unwrap_err();
        assert!(
            e.to_string().contains("p.json") && e.to_string().contains("\"m\""),
            "{e}"
        );
        let e = parse("{\"models\": 3}", "p.json").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("p.json: not a price table (line 1"),
            "{e}"
        );
    }
}
