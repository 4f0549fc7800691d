//! Terminal feel: progress bars only on a terminal (never with `--json` or
//! when piped), tables with aligned columns, colour only when stdout is a
//! terminal and `NO_COLOR` is unset.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// Inputs smaller than this get no progress bar.
pub const PROGRESS_MIN_BYTES: u64 = 4 << 20;
/// Logs shorter than this get no progress bar.
pub const PROGRESS_MIN_EVENTS: u64 = 50_000;

/// A progress bar on stderr when it is a terminal and output is for people;
/// hidden otherwise.
pub fn progress(json: bool, len: u64, min: u64, what: &str, bytes: bool) -> ProgressBar {
    if json || len < min || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let template = if bytes {
        "{msg} [{bar:30}] {bytes}/{total_bytes} ({eta})"
    } else {
        "{msg} [{bar:30}] {pos}/{len} ({eta})"
    };
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    // The templates are constants; were one ever rejected, the default
    // style still shows progress.
    let style = ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(what.to_owned());
    bar
}

/// `n` and `noun`, plural when `n` is not 1: `1 recording`, `2 recordings`.
pub fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Whether to colour stdout.
pub fn color() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

/// The widest a table is printed by [`table_fit`].
pub const MAX_TABLE_WIDTH: usize = 100;

/// A table: a header and rows, printed with aligned columns (numbers right).
pub fn table(header: &[&str], rows: &[Vec<String>]) {
    print_table(header, rows, usize::MAX, &[]);
}

/// [`table`] within `max` columns: the last column is cut (`…`) where a
/// row would be wider.
pub fn table_fit(header: &[&str], rows: &[Vec<String>], max: usize) {
    print_table(header, rows, max, &[]);
}

/// [`table_fit`], first narrowing the `cuttable` columns (the widest first,
/// to no less than [`MIN_CUT_WIDTH`]) while the table is wider than `max`
/// with at least [`MIN_LAST_WIDTH`] for the last column.
pub fn table_fit_cutting(header: &[&str], rows: &[Vec<String>], max: usize, cuttable: &[usize]) {
    print_table(header, rows, max, cuttable);
}

/// The narrowest [`table_fit_cutting`] makes a column.
pub const MIN_CUT_WIDTH: usize = 6;
/// The room [`table_fit_cutting`] leaves the last column.
pub const MIN_LAST_WIDTH: usize = 10;

/// A cell that reads as a number (`12`, `4.5k`, `87.50%`, `1,200`, `-`
/// counts as none): right-aligned.
fn is_number(c: &str) -> bool {
    c.starts_with(|ch: char| ch.is_ascii_digit())
        && c.chars()
            .all(|ch| ch.is_ascii_digit() || matches!(ch, '.' | ',' | '%' | 'k' | 'M'))
}

/// Compact token counts for tables: `950`, `12.3k`, `1.25M`.
pub fn tokens(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.2}M", n as f64 / 1_000_000.0),
    }
}

/// `text` cut to `max` characters, the last one `…` when it was longer.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn print_table(header: &[&str], rows: &[Vec<String>], max: usize, cuttable: &[usize]) {
    // A cell is one line: a newline or tab in a recorded title would break
    // the columns, an escape would act on the terminal.
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|c| ctxlog_core::printable::one_line(c).into_owned())
                .collect()
        })
        .collect();
    let rows = &rows[..];
    let cols = header.len();
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(cols) {
            width[i] = width[i].max(c.chars().count());
        }
    }
    // Narrow the cuttable columns, widest first, until the last one has
    // its room.
    let before_last = |w: &[usize]| {
        w[..cols.saturating_sub(1)]
            .iter()
            .map(|w| w + 2)
            .sum::<usize>()
    };
    while before_last(&width) + MIN_LAST_WIDTH > max {
        let widest = cuttable
            .iter()
            .copied()
            .filter(|&i| i + 1 < cols && width[i] > MIN_CUT_WIDTH)
            .max_by_key(|&i| (width[i], std::cmp::Reverse(i)));
        match widest {
            Some(i) => width[i] -= 1,
            None => break,
        }
    }
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .enumerate()
                .map(|(i, c)| match width.get(i) {
                    Some(&w) if i + 1 < cols => cut(c, w),
                    _ => c.clone(),
                })
                .collect()
        })
        .collect();
    let header: Vec<String> = header
        .iter()
        .enumerate()
        .map(|(i, h)| match width.get(i) {
            Some(&w) if i + 1 < cols => cut(h, w),
            _ => (*h).to_owned(),
        })
        .collect();
    let numeric: Vec<bool> = (0..cols)
        .map(|i| {
            !rows.is_empty()
                && rows
                    .iter()
                    .all(|r| r.get(i).is_some_and(|c| c == "-" || is_number(c)))
                && rows.iter().any(|r| r.get(i).is_some_and(|c| is_number(c)))
        })
        .collect();
    let line = |cells: Vec<String>| {
        let mut out = String::new();
        for (i, c) in cells.iter().enumerate() {
            let w = width.get(i).copied().unwrap_or(0);
            let pad = w.saturating_sub(c.chars().count());
            if i > 0 {
                out.push_str("  ");
            }
            if numeric.get(i).copied().unwrap_or(false) {
                out.push_str(&" ".repeat(pad));
                out.push_str(c);
            } else if i + 1 == cells.len() {
                let room = max.saturating_sub(out.chars().count()).max(1);
                out.push_str(&cut(c, room));
            } else {
                out.push_str(c);
                out.push_str(&" ".repeat(pad));
            }
        }
        out.truncate(out.trim_end().len());
        out
    };
    let head = line(header);
    if color() {
        // The header's words are ctxlog's own; only they are styled.
        crate::write_stdout_raw(&format!("\x1b[1m{head}\x1b[0m\n"));
    } else {
        println!("{head}");
    }
    for r in rows {
        println!("{}", line(r));
    }
}
