//! `usage`: tokens, steps and cost summed by day, week, month, session,
//! project, model or agent, from `ctxlog_app::usage`.

use crate::selection::Selection;
use crate::ui;
use crate::CliError;
use ctxlog_app::dates::Zone;
use ctxlog_app::logs::Location;
use ctxlog_app::pricing::PriceTable;
use ctxlog_app::usage::{GroupBy, Usage, UsageFilter};
use std::path::PathBuf;

/// `usage`'s grouping and filters.
#[derive(clap::Args, Debug, Clone)]
pub struct UsageArgs {
    /// What a row is.
    #[arg(long, value_enum, default_value_t = GroupBy::Day)]
    pub by: GroupBy,
    #[command(flatten)]
    pub select: Selection,
    /// A price table whose models replace or add to the built-in ones (the
    /// shape of the repository's `crates/ctxlog-app/data/pricing.json`).
    #[arg(long, env = "CTXLOG_PRICING")]
    pub pricing: Option<PathBuf>,
}

/// The columns of `usage`.
fn columns(by: GroupBy) -> [ui::Column<'static>; 11] {
    let key = match by {
        GroupBy::Day => "DAY",
        GroupBy::Week => "WEEK",
        GroupBy::Month => "MONTH",
        GroupBy::Session => "SESSION",
        GroupBy::Project => "PROJECT",
        GroupBy::Model => "MODEL",
        GroupBy::Agent => "AGENT",
    };
    [
        ui::keep(key),
        ui::number("INPUT"),
        ui::number("OUTPUT"),
        ui::number("REASONING").optional(3),
        ui::number("CACHE READ").optional(5),
        ui::number("CACHE WRITE").optional(4),
        ui::number("TOTAL"),
        ui::number("STEPS").optional(2),
        ui::number("COMP").optional(1),
        ui::number("PRUNES").optional(0),
        ui::number("COST"),
    ]
}

/// `usage`.
pub fn usage(
    json: bool,
    zone: &Zone,
    utc: bool,
    db: &Location,
    a: &UsageArgs,
) -> Result<(), CliError> {
    let (since, until) = a.select.span(zone)?;
    let filter = UsageFilter {
        since,
        until,
        agent: a.select.agent.clone(),
        project: a.select.project.clone(),
    };
    let prices = match &a.pricing {
        Some(path) => {
            PriceTable::with_override(path).map_err(|e| CliError::BadInput(e.to_string()))?
        }
        None => PriceTable::built_in(),
    };
    let store = crate::store::open_existing(db)?;
    let rollup = ctxlog_app::usage::usage(&store, a.by, &filter, zone, &prices)
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let outcome = if rollup.unreadable.is_empty() {
        Ok(())
    } else {
        Err(CliError::Reported(rollup.unreadable.len()))
    };
    if json {
        let mut doc = serde_json::to_value(&rollup)
            .map_err(|e| CliError::Failed(format!("cannot serialize the usage: {e}")))?;
        doc["ok"] = serde_json::json!(rollup.unreadable.is_empty());
        doc["prices"] = serde_json::json!({"source": prices.source, "date": prices.date});
        // The zone days, weeks and months are of: `UTC` or an offset.
        doc["zone"] = serde_json::json!(zone.offset(crate::now_ms()));
        println!("{doc}");
        return outcome;
    }
    print_usage(&rollup, zone, &prices, utc);
    for u in &rollup.unreadable {
        println!("error: {u}");
    }
    outcome
}

fn print_usage(rollup: &Usage, zone: &Zone, prices: &PriceTable, utc: bool) {
    if rollup.groups.is_empty() {
        println!("no model calls recorded in the sessions that match");
        return;
    }
    let row = |key: &str, f: &ctxlog_app::usage::Figures| {
        vec![
            key.to_owned(),
            ui::grouped(f.input),
            ui::grouped(f.output),
            ui::grouped(f.reasoning),
            ui::grouped(f.cache_read),
            ui::grouped(f.cache_write),
            ui::grouped(f.total),
            ui::grouped(f.steps),
            ui::grouped(f.compactions),
            ui::grouped(f.prunes),
            match f.cost_usd {
                Some(c) if f.cost_estimated => format!("~{}", ui::dollars(c)),
                Some(c) => ui::dollars(c),
                None => "-".into(),
            },
        ]
    };
    let mut rows: Vec<Vec<String>> = rollup
        .groups
        .iter()
        .map(|g| row(&g.key, &g.figures))
        .collect();
    rows.push(row("TOTAL", &rollup.total));
    ui::print_table(&columns(rollup.by), &rows, ui::terminal_width());
    if matches!(rollup.by, GroupBy::Day | GroupBy::Week | GroupBy::Month) {
        if utc {
            println!("days in UTC");
        } else {
            let offset = zone.offset(crate::now_ms());
            println!("days in local time ({offset} now); --utc for UTC");
        }
    }
    if rollup.total.cost_estimated {
        println!(
            "~ estimated from list prices of {} where the recording gives no cost (`--json` names the table's source)",
            prices.date
        );
    }
    if rollup.total.unpriced_calls > 0 {
        println!(
            "{} with neither a recorded cost nor a price for its model (add it with --pricing FILE)",
            ui::counted(rollup.total.unpriced_calls as usize, "call")
        );
    }
}
