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

/// How a table's column behaves when the table is wider than the
/// terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// Never cut (an id, a date): it names the row.
    Keep,
    /// A number: right-aligned, never cut.
    Number,
    /// Free text: gives way first, the widest first, to no less than
    /// [`MIN_TEXT_WIDTH`].
    Text,
}

/// One column of a table: its header and how it fits.
#[derive(Debug, Clone, Copy)]
pub struct Column<'a> {
    /// The header.
    pub header: &'a str,
    /// How it fits.
    pub fit: Fit,
    /// The narrowest a free-text column is made.
    pub min: usize,
    /// When the table does not fit even with its text at its narrowest,
    /// columns with a rank are left out, the lowest rank first.
    pub rank: Option<u8>,
    /// A free-text column that, last in its row, goes on over the next
    /// lines rather than being cut (what an audit line says).
    pub wraps: bool,
}

impl<'a> Column<'a> {
    /// The column, left out (lowest `rank` first) when the table cannot
    /// fit otherwise.
    pub const fn optional(self, rank: u8) -> Column<'a> {
        Column {
            rank: Some(rank),
            ..self
        }
    }

    /// The column, made no narrower than `min`.
    pub const fn at_least(self, min: usize) -> Column<'a> {
        Column { min, ..self }
    }

    /// The column, its text going on over the next lines when it is the
    /// last shown and too wide, rather than cut.
    pub const fn wrapped(self) -> Column<'a> {
        Column {
            wraps: true,
            ..self
        }
    }
}

/// A column that is never cut.
pub const fn keep(header: &str) -> Column<'_> {
    Column {
        header,
        fit: Fit::Keep,
        min: MIN_TEXT_WIDTH,
        rank: None,
        wraps: false,
    }
}

/// A right-aligned number column.
pub const fn number(header: &str) -> Column<'_> {
    Column {
        header,
        fit: Fit::Number,
        min: MIN_TEXT_WIDTH,
        rank: None,
        wraps: false,
    }
}

/// A free-text column.
pub const fn text(header: &str) -> Column<'_> {
    Column {
        header,
        fit: Fit::Text,
        min: MIN_TEXT_WIDTH,
        rank: None,
        wraps: false,
    }
}

/// The narrowest a free-text column is made.
pub const MIN_TEXT_WIDTH: usize = 6;
/// Below this width a table's rows are printed in a compact form, each
/// wrapped over lines.
pub const COMPACT_BELOW: usize = 60;

/// The terminal's width: `COLUMNS` when set to a number, else stdout's
/// width when it is a terminal; `None` (no limit) when piped.
pub fn terminal_width() -> Option<usize> {
    if let Some(n) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
    {
        return Some(n);
    }
    if !std::io::stdout().is_terminal() {
        return None;
    }
    console::Term::stdout()
        .size_checked()
        .map(|(_, cols)| usize::from(cols))
}

/// A table: a header and rows with aligned columns (numbers right), the
/// last column free text, fitted to the terminal ([`print_table`]).
pub fn table(header: &[&str], rows: &[Vec<String>]) {
    let mut measured = Measured::with_headers(header);
    for r in rows {
        measured.add(r);
    }
    let columns = plain_columns(header, &measured);
    let mut table = Table::fitted(&columns, &measured, terminal_width());
    table.print_header();
    for r in rows {
        table.print_row(r);
    }
}

/// The columns [`table`] gives the rows `measured` under `header`: a
/// number (right-aligned) where every row's cell reads as one (`-` counts
/// as none) and one does, else the last free text (going on over the next
/// lines rather than cut) and the others kept.
pub fn plain_columns<'a>(header: &[&'a str], measured: &Measured) -> Vec<Column<'a>> {
    let last = header.len().saturating_sub(1);
    header
        .iter()
        .enumerate()
        .map(|(i, h)| match (measured.numeric(i), i == last) {
            (true, _) => number(h),
            (false, true) => text(h).wrapped(),
            (false, false) => keep(h),
        })
        .collect()
}

/// A cell that reads as a number (`12`, `4.5k`, `87.50%`, `1,200`, `-`
/// counts as none): right-aligned.
fn is_number(c: &str) -> bool {
    let c = c.strip_prefix('~').unwrap_or(c);
    let c = c.strip_prefix('$').unwrap_or(c);
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

/// A count with thousands separators: `1,204,311`.
pub fn grouped(n: u64) -> String {
    let text = n.to_string();
    let mut out = String::with_capacity(text.len() + text.len() / 3);
    for (i, c) in text.chars().enumerate() {
        if i > 0 && (text.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A cost in US dollars for tables: `$0.42`, `$12.30`, `$1,204`.
pub fn dollars(usd: f64) -> String {
    if usd >= 1_000.0 {
        format!("${}", grouped(usd.round() as u64))
    } else {
        format!("${usd:.2}")
    }
}

/// How many terminal columns `text` takes (a CJK character or an emoji
/// two, a combining mark none).
pub fn width(text: &str) -> usize {
    console::measure_text_width(text)
}

/// `text` in pieces of at most `max` terminal columns (at least 1), broken
/// after a space where one is near the end of a piece.
pub fn wrap(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut pieces = Vec::new();
    let mut piece = String::new();
    let mut piece_width = 0;
    for ch in text.chars() {
        let w = width(ch.encode_utf8(&mut [0; 4]));
        if piece_width + w > max && !piece.is_empty() {
            // Break after the last space when it leaves most of the piece.
            let at = piece
                .rfind(' ')
                .filter(|&i| width(&piece[..i]) * 2 > max)
                .map(|i| i + 1);
            let rest = match at {
                Some(i) => piece.split_off(i),
                None => String::new(),
            };
            pieces.push(piece.trim_end().to_owned());
            piece_width = width(&rest);
            piece = rest;
        }
        piece.push(ch);
        piece_width += w;
    }
    if !piece.is_empty() || pieces.is_empty() {
        pieces.push(piece);
    }
    pieces
}

/// Prints a heading's parts joined by ` · `, going on to a new line
/// between two parts where the next would pass the terminal's width.
pub fn print_heading(parts: &[String]) {
    let max = terminal_width().unwrap_or(usize::MAX);
    let mut line = String::new();
    for part in parts {
        if !line.is_empty() && width(&line) + 3 + width(part) > max {
            println!("{line}");
            line = format!("  {part}");
            continue;
        }
        if !line.is_empty() {
            line.push_str(" · ");
        }
        line.push_str(part);
    }
    println!("{line}");
}

/// A size in bytes as people read it: `812 B`, `4.2 MB`, `1.3 GB`.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["kB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `text` cut to `max` terminal columns, the last one `…` when it was
/// wider.
pub fn cut(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_owned();
    }
    console::truncate_str(text, max, "…").into_owned()
}

/// Prints `rows` under `columns` within `terminal` columns (`None`:
/// no limit). When the table is wider, the free-text columns give way, the
/// widest first; under [`COMPACT_BELOW`] columns each row is printed
/// compactly instead ([`print_compact`]).
pub fn print_table(columns: &[Column], rows: &[Vec<String>], terminal: Option<usize>) {
    let mut measured = Measured::new(columns);
    for r in rows {
        measured.add(r);
    }
    let mut table = Table::fitted(columns, &measured, terminal);
    table.print_header();
    for r in rows {
        table.print_row(r);
    }
}

/// A cell as one line: a newline or tab in a recorded title would break
/// the columns, an escape would act on the terminal.
fn cell(text: &str) -> std::borrow::Cow<'_, str> {
    ctxlog_core::printable::one_line(text)
}

/// What fitting a table needs to know of its rows, taken a row at a time
/// (the rows need not be held): each column's widest cell, and which
/// columns hold anything but zeros.
#[derive(Debug, Clone)]
pub struct Measured {
    widths: Vec<usize>,
    filled: Vec<bool>,
    rows: usize,
    /// Per column: how many rows have a cell there, how many of those read
    /// as a number or `-`, and whether one reads as a number.
    cells: Vec<(usize, usize, bool)>,
}

impl Measured {
    /// No rows yet: the headers' widths.
    pub fn new(columns: &[Column]) -> Measured {
        let headers: Vec<&str> = columns.iter().map(|c| c.header).collect();
        Measured::with_headers(&headers)
    }

    /// No rows yet under `headers`: their widths.
    pub fn with_headers(headers: &[&str]) -> Measured {
        let columns = headers.len();
        Measured {
            widths: headers.iter().map(|h| width(h)).collect(),
            filled: vec![false; columns],
            rows: 0,
            cells: vec![(0, 0, false); columns],
        }
    }

    /// Whether every row has a cell in column `i` that reads as a number
    /// or `-`, and one reads as a number.
    pub fn numeric(&self, i: usize) -> bool {
        self.cells.get(i).is_some_and(|&(had, numbers, any)| {
            self.rows > 0 && had == self.rows && numbers == had && any
        })
    }

    /// Takes headers chosen after the rows were measured into account.
    pub fn fit_headers(&mut self, headers: &[&str]) {
        for (w, h) in self.widths.iter_mut().zip(headers) {
            *w = (*w).max(width(h));
        }
    }

    /// Takes one row's cells into account.
    pub fn add(&mut self, row: &[String]) {
        self.rows += 1;
        for (i, c) in row.iter().enumerate().take(self.widths.len()) {
            self.widths[i] = self.widths[i].max(width(&cell(c)));
            self.filled[i] |= !(c == "0" || c == "-" || c.is_empty());
            let (had, numbers, any) = &mut self.cells[i];
            *had += 1;
            *numbers += usize::from(c == "-" || is_number(c));
            *any |= is_number(c);
        }
    }
}

/// A table fitted to the terminal, printed a row at a time.
#[derive(Debug)]
pub struct Table<'a> {
    columns: &'a [Column<'a>],
    /// The columns shown, in order.
    shown: Vec<usize>,
    widths: Vec<usize>,
    /// The terminal's width (`usize::MAX`: no limit).
    max: usize,
    /// Each row on its own lines ([`print_compact`]).
    compact: bool,
    printed: usize,
}

impl<'a> Table<'a> {
    /// `columns` fitted within `terminal` columns (`None`: no limit) for
    /// the rows `measured`.
    pub fn fitted(
        columns: &'a [Column<'a>],
        measured: &Measured,
        terminal: Option<usize>,
    ) -> Table<'a> {
        let compact = terminal.is_some_and(|w| w < COMPACT_BELOW);
        let max = terminal.unwrap_or(usize::MAX);
        let mut widths = measured.widths.clone();
        let shown = shown_columns(columns, &measured.filled, &widths, max);
        let total = |w: &[usize]| {
            let w: Vec<usize> = shown.iter().map(|&i| w[i]).collect();
            w.iter().sum::<usize>() + 2 * w.len().saturating_sub(1)
        };
        while total(&widths) > max {
            let widest = shown
                .iter()
                .copied()
                .filter(|&i| columns[i].fit == Fit::Text && widths[i] > columns[i].min)
                .max_by_key(|&i| (widths[i], std::cmp::Reverse(i)));
            match widest {
                Some(i) => widths[i] -= 1,
                None => break,
            }
        }
        Table {
            columns,
            shown,
            widths,
            max,
            compact,
            printed: 0,
        }
    }

    /// Prints the header (none in the compact form).
    pub fn print_header(&self) {
        if self.compact {
            return;
        }
        let head = self.line(self.columns.iter().map(|c| c.header));
        if color() {
            // The header's words are ctxlog's own; only they are styled.
            crate::write_stdout_raw(&format!("\x1b[1m{head}\x1b[0m\n"));
        } else {
            println!("{head}");
        }
    }

    /// Prints one row.
    pub fn print_row(&mut self, row: &[String]) {
        let row: Vec<String> = row.iter().map(|c| cell(c).into_owned()).collect();
        if self.compact {
            print_compact(self.columns, &row, self.max, self.printed == 0);
        } else if let Some((last, rest)) = self.wrapped_last(&row) {
            let mut cells: Vec<&str> = row.iter().map(String::as_str).collect();
            cells[last] = &rest[0];
            println!("{}", self.line(cells.into_iter()));
            let indent = self.offset_of(last);
            for more in &rest[1..] {
                println!("{}{more}", " ".repeat(indent));
            }
        } else {
            println!("{}", self.line(row.iter().map(String::as_str)));
        }
        self.printed += 1;
    }

    /// When `row`'s last shown cell is of a wrapping column and wider than
    /// it: that column, and the cell in pieces that fit it.
    fn wrapped_last(&self, row: &[String]) -> Option<(usize, Vec<String>)> {
        let &last = self.shown.last()?;
        let c = row.get(last)?;
        let w = self.widths[last];
        (self.columns[last].wraps && width(c) > w).then(|| (last, wrap(c, w)))
    }

    /// Where column `i` starts on a line of the table.
    fn offset_of(&self, i: usize) -> usize {
        self.shown
            .iter()
            .take_while(|&&j| j != i)
            .map(|&j| self.widths[j] + 2)
            .sum()
    }

    /// The cells as a line of the table.
    fn line<'c>(&self, cells: impl Iterator<Item = &'c str>) -> String {
        let cells: Vec<&str> = cells.collect();
        let mut out = String::new();
        for (n, &i) in self.shown.iter().enumerate() {
            let Some(c) = cells.get(i) else { break };
            let w = self.widths[i];
            let c = cut(c, w);
            let pad = w.saturating_sub(width(&c));
            if n > 0 {
                out.push_str("  ");
            }
            if self.columns[i].fit == Fit::Number {
                out.push_str(&" ".repeat(pad));
                out.push_str(&c);
            } else {
                out.push_str(&c);
                out.push_str(&" ".repeat(pad));
            }
        }
        // A table whose kept columns alone are wider is cut at the edge.
        let out = cut(out.trim_end(), self.max);
        out.trim_end().to_owned()
    }
}

/// The columns shown within `max`: all, or without the ranked ones (those
/// of only zeros first, then the lowest rank) while the table would not fit
/// with every free-text column at its narrowest.
fn shown_columns(columns: &[Column], filled: &[bool], widths: &[usize], max: usize) -> Vec<usize> {
    let mut shown: Vec<usize> = (0..columns.len()).collect();
    let narrowest = |shown: &[usize]| {
        shown
            .iter()
            .map(|&i| match columns[i].fit {
                Fit::Text => widths[i].min(columns[i].min),
                _ => widths[i],
            })
            .sum::<usize>()
            + 2 * shown.len().saturating_sub(1)
    };
    // A ranked number column that holds only zeros says nothing: it goes
    // first.
    let empty = |i: usize| columns[i].fit == Fit::Number && !filled[i];
    while narrowest(&shown) > max {
        let lowest = shown
            .iter()
            .enumerate()
            .filter_map(|(at, &i)| columns[i].rank.map(|r| ((!empty(i), r), at)))
            .min();
        match lowest {
            Some((_, at)) => {
                shown.remove(at);
            }
            None => break,
        }
    }
    shown
}

/// A row on its own lines for a narrow terminal: the kept columns and
/// the free-text ones but the last on the first, then `HEADER value` of
/// the numbers, then the last free-text cell, all within `terminal` columns; a blank
/// line before every row but the `first`.
fn print_compact(columns: &[Column], r: &[String], terminal: usize, first: bool) {
    let room = terminal.saturating_sub(2).max(1);
    if !first {
        println!();
    }
    let cells = || columns.iter().zip(r);
    let last_text = columns.iter().rposition(|c| c.fit == Fit::Text);
    let named: Vec<&str> = cells()
        .enumerate()
        .filter(|(i, (c, v))| c.fit != Fit::Number && Some(*i) != last_text && *v != "-")
        .map(|(_, (_, v))| v.as_str())
        .collect();
    println!("{}", cut(&named.join("  "), terminal));
    let mut line = String::new();
    for (c, v) in cells().filter(|(c, v)| c.fit == Fit::Number && *v != "-") {
        let item = format!("{} {v}", c.header);
        if !line.is_empty() && width(&line) + 2 + width(&item) > room {
            println!("  {line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push_str("  ");
        }
        line.push_str(&item);
    }
    if !line.is_empty() {
        println!("  {}", cut(&line, room));
    }
    if let Some(v) = last_text.and_then(|i| r.get(i)).filter(|v| *v != "-") {
        println!("  {}", cut(v, room));
    }
}
