//! The shape of the code, checked: rooms of one job. Every crate's source
//! (`crates/*/src`, `python/src`) keeps to these limits, and this test
//! names what breaks one:
//!
//! - no source file over [`MAX_FILE_LINES`] lines;
//! - no function over [`MAX_FN_LINES`] lines;
//! - no circle between the files of a crate: what a file uses of its own
//!   crate (`use crate::…`, `use super::…`, and `crate::…` paths in code)
//!   points one way;
//! - every file is on its module's map: the doc of the module that
//!   declares it (`lib.rs`, `main.rs`, `mod.rs`) names it in backticks
//!   (`` `name` ``, `` `name.rs` `` or `` `name/` ``), so the file tables
//!   live in the module docs, where they cannot drift from the files;
//! - `ARCHITECTURE.md` stays a map of at most [`MAX_MAP_LINES`] lines.
//!
//! The parse is lexical (braces, `fn`, `use`), which is all these rules
//! need; comments and string literals are skipped so that braces in them
//! do not count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The most lines a source file may have.
const MAX_FILE_LINES: usize = 600;

/// The most lines a function may have, its signature and braces included.
const MAX_FN_LINES: usize = 80;

/// The most lines `ARCHITECTURE.md` may have: a map, not an inventory.
const MAX_MAP_LINES: usize = 300;

/// The source directory of every crate of the workspace.
fn crate_sources() -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![("ctxlog-python".to_owned(), root.join("python/src"))];
    let crates = std::fs::read_dir(root.join("crates")).expect("crates/ is readable");
    for entry in crates {
        let dir = entry.expect("a crate directory").path();
        if dir.join("src").is_dir() {
            let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
            out.push((name.unwrap_or_default(), dir.join("src")));
        }
    }
    out.sort();
    out
}

/// Every `.rs` file under `dir`, with its module path in the crate
/// (`""` for the crate root, `decide::items` for `decide/items.rs`).
fn rust_files(dir: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("a readable source directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(dir)
                    .expect("under dir")
                    .with_extension("");
                let mut parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if matches!(
                    parts.last().map(String::as_str),
                    Some("mod" | "lib" | "main")
                ) {
                    parts.pop();
                }
                out.insert(parts.join("::"), path);
            }
        }
    }
    out
}

/// `text` with comments and the contents of string and char literals
/// blanked (newlines kept), so that braces and paths in them do not count.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                if b[i] == b'\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 2;
        } else if c == b'r' && matches!(b.get(i + 1), Some(b'"' | b'#')) && raw_start(b, i) {
            let hashes = b[i + 1..].iter().take_while(|&&x| x == b'#').count();
            i += 2 + hashes;
            let end: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            while i < b.len() && !b[i..].starts_with(&end) {
                if b[i] == b'\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += end.len();
            out.push_str("\"\"");
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                } else if b[i] == b'\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == b'\'' && is_char_literal(b, i) {
            i += 1;
            while i < b.len() && b[i] != b'\'' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else {
            let len = utf8_len(c);
            out.push_str(&text[i..i + len]);
            i += len;
        }
    }
    out
}

/// Whether the `r` at `i` starts a raw string (not the end of a name).
fn raw_start(b: &[u8], i: usize) -> bool {
    let after = &b[i + 1..];
    let hashes = after.iter().take_while(|&&x| x == b'#').count();
    after.get(hashes) == Some(&b'"')
        && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
}

/// Whether the `'` at `i` opens a char literal (not a lifetime).
fn is_char_literal(b: &[u8], i: usize) -> bool {
    match (b.get(i + 1), b.get(i + 2)) {
        (Some(b'\\'), _) => true,
        (Some(_), Some(b'\'')) => true,
        (Some(&c), _) if c >= 0x80 => b[i + 1..].iter().skip(1).take(4).any(|&x| x == b'\''),
        _ => false,
    }
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

/// Every function of `code` with its first line (1-based) and its length
/// in lines.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(name) = fn_name(lines[i]) else {
            i += 1;
            continue;
        };
        let (mut depth, mut opened, mut j) = (0i64, false, i);
        'scan: while j < lines.len() {
            for ch in lines[j].chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    ';' if !opened && depth == 0 => break 'scan,
                    _ => {}
                }
                if opened && depth == 0 {
                    break 'scan;
                }
            }
            j += 1;
        }
        if opened {
            out.push((name, i + 1, j - i + 1));
        }
        i += 1;
    }
    out
}

/// The name of the function a line declares, if it does.
fn fn_name(line: &str) -> Option<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "fn")?;
    let before_ok = words[..at].iter().all(|w| {
        w.starts_with("pub") || matches!(*w, "const" | "async" | "unsafe" | "extern" | "\"\"")
    });
    let name: String = words
        .get(at + 1)?
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (before_ok && !name.is_empty()).then_some(name)
}

/// What `code` (the file of module `module`) uses of the crate's other
/// files (`files`), each by its module path.
fn uses(module: &str, code: &str, files: &BTreeMap<String, PathBuf>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let flat: String = code.split_whitespace().collect::<Vec<_>>().join(" ");
    let own: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
    for (at, _) in flat
        .match_indices("crate::")
        .chain(flat.match_indices("super::"))
    {
        // A `super::` inside a chain is read with the chain's first one.
        if flat[..at].ends_with("super::") {
            continue;
        }
        let (base, tail) = if flat[at..].starts_with("crate::") {
            (Vec::new(), &flat[at + "crate::".len()..])
        } else {
            let mut tail = &flat[at..];
            let mut up = 0;
            while let Some(rest) = tail.strip_prefix("super::") {
                tail = rest;
                up += 1;
            }
            (own[..own.len().saturating_sub(up)].to_vec(), tail)
        };
        for path in expand(tail) {
            let mut segs = base.clone();
            segs.extend(path.split("::").filter(|s| !s.is_empty()));
            // The longest prefix that is a file of the crate.
            for k in (1..=segs.len()).rev() {
                let candidate = segs[..k].join("::");
                if files.contains_key(&candidate) {
                    let inside =
                        candidate == module || module.starts_with(&format!("{candidate}::"));
                    if !inside {
                        out.insert(candidate);
                    }
                    break;
                }
            }
        }
    }
    out
}

/// The paths a use-tree starting at `tail` names: `a::b`, or each of
/// `{a::b, c}` (one level of braces), up to where the tree ends.
fn expand(tail: &str) -> Vec<String> {
    let end = tail
        .find(|c: char| {
            !(c.is_alphanumeric()
                || c == '_'
                || c == ':'
                || c == '{'
                || c == '}'
                || c == ','
                || c == ' ')
        })
        .unwrap_or(tail.len());
    let tree = &tail[..end];
    match tree.find('{') {
        Some(open)
            if tree[..open]
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == ':') =>
        {
            let head = &tree[..open];
            let inner_end = tree[open..].find('}').map_or(tree.len(), |e| open + e);
            tree[open + 1..inner_end]
                .split(',')
                .map(|p| format!("{head}{}", p.trim()))
                .collect()
        }
        _ => {
            let path: String = tree
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            vec![path]
        }
    }
}

/// The circles of `graph` (its strongly connected parts of two or more).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Kosaraju: finish order, then the reversed graph.
    fn visit<'a>(
        v: &'a str,
        g: &'a BTreeMap<String, BTreeSet<String>>,
        seen: &mut BTreeSet<&'a str>,
        order: &mut Vec<&'a str>,
    ) {
        if !seen.insert(v) {
            return;
        }
        for w in g.get(v).into_iter().flatten() {
            visit(w, g, seen, order);
        }
        order.push(v);
    }
    let mut reversed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (v, ws) in graph {
        for w in ws {
            reversed.entry(w.clone()).or_default().insert(v.clone());
        }
    }
    let (mut seen, mut order) = (BTreeSet::new(), Vec::new());
    for v in graph.keys() {
        visit(v, graph, &mut seen, &mut order);
    }
    let mut assigned = BTreeSet::new();
    let mut out = Vec::new();
    for v in order.into_iter().rev() {
        let mut part = Vec::new();
        visit(v, &reversed, &mut assigned, &mut part);
        if part.len() > 1 {
            part.sort();
            out.push(part.into_iter().map(str::to_owned).collect());
        }
    }
    out
}

#[test]
fn every_room_keeps_to_its_limits() {
    let mut problems = Vec::new();
    for (krate, src) in crate_sources() {
        let files = rust_files(&src);
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (module, path) in &files {
            let text = std::fs::read_to_string(path).expect("a readable source file");
            let shown = path
                .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                .unwrap_or(path)
                .display();
            let lines = text.lines().count();
            if lines > MAX_FILE_LINES {
                problems.push(format!("{shown}: {lines} lines (at most {MAX_FILE_LINES})"));
            }
            let code = code_only(&text);
            for (name, line, len) in functions(&code) {
                if len > MAX_FN_LINES {
                    problems.push(format!(
                        "{shown}:{line}: fn {name} is {len} lines (at most {MAX_FN_LINES})"
                    ));
                }
            }
            // The crate root declares the modules and re-exports them:
            // what the root uses is not a dependency of one file on another.
            if !module.is_empty() {
                graph.insert(module.clone(), uses(module, &code, &files));
            }
        }
        for part in circles(&graph) {
            problems.push(format!(
                "{krate}: the files {} use each other",
                part.join(", ")
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "rooms that broke a limit:\n{}",
        problems.join("\n")
    );
}

/// The module doc (`//!` lines) of `text`.
fn module_doc(text: &str) -> String {
    text.lines()
        .map(str::trim_start)
        .filter_map(|l| l.strip_prefix("//!"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `doc` names the file of module `name` in backticks: `name`,
/// `name.rs`, `name/`, or a path ending in one of them.
fn names_file(doc: &str, name: &str) -> bool {
    doc.split('`').skip(1).step_by(2).any(|code| {
        code.split([' ', ',', '(', ')'])
            .filter_map(|word| word.trim_end_matches('/').rsplit(['/', ':']).next())
            .any(|last| last == name || last.strip_suffix(".rs") == Some(name))
    })
}

#[test]
fn every_file_is_on_its_modules_map() {
    let mut missing = Vec::new();
    for (_, src) in crate_sources() {
        let files = rust_files(&src);
        for (module, path) in &files {
            let Some((parent, name)) = module
                .rsplit_once("::")
                .or((!module.is_empty()).then_some(("", module.as_str())))
            else {
                continue;
            };
            let Some(parent_path) = files.get(parent) else {
                continue;
            };
            let text = std::fs::read_to_string(parent_path).expect("a readable source file");
            if !names_file(&module_doc(&text), name) {
                let shown = |p: &Path| {
                    p.strip_prefix(env!("CARGO_MANIFEST_DIR"))
                        .unwrap_or(p)
                        .display()
                        .to_string()
                };
                missing.push(format!(
                    "{}: not named in the module doc of {}",
                    shown(path),
                    shown(parent_path)
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "files missing from their module's map ({}):\n{}",
        missing.len(),
        missing.join("\n")
    );
}

#[test]
fn the_architecture_page_is_a_map() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md");
    let lines = std::fs::read_to_string(path)
        .expect("ARCHITECTURE.md is readable")
        .lines()
        .count();
    assert!(
        lines <= MAX_MAP_LINES,
        "ARCHITECTURE.md has {lines} lines (at most {MAX_MAP_LINES}): what a file holds belongs in its module's doc"
    );
}

#[test]
fn the_checks_find_what_they_look_for() {
    // A long function, a circle and text that only looks like code.
    assert!(names_file(
        "files: `log` (the trait), `sled/` and `x.rs`",
        "sled"
    ));
    assert!(names_file(
        "files: `log` (the trait), `sled/` and `x.rs`",
        "x"
    ));
    assert!(!names_file(
        "files: `log` (the trait), sled and `x.rs`",
        "sled"
    ));
    assert!(!names_file("`catalog::captures`", "catalog"));
    let code = code_only("fn a() {\n    let s = \"}\"; // }\n    x('{');\n}\nfn b() -> u8 { 1 }\n");
    let fns = functions(&code);
    assert_eq!(fns, [("a".into(), 1, 4), ("b".into(), 5, 1)]);
    let files: BTreeMap<String, PathBuf> = ["x", "y", "z", "z::inner"]
        .into_iter()
        .map(|m| (m.to_owned(), PathBuf::new()))
        .collect();
    let x = uses("x", &code_only("use crate::{y::T, z::inner::U};"), &files);
    assert_eq!(x, BTreeSet::from(["y".to_owned(), "z::inner".to_owned()]));
    let graph = BTreeMap::from([
        ("x".to_owned(), x),
        (
            "y".to_owned(),
            uses("y", "fn f() { crate::x::g() }", &files),
        ),
        (
            "z::inner".to_owned(),
            uses("z::inner", "use super::super::y;", &files),
        ),
    ]);
    // x → z::inner → y (`super::super::y`) → x.
    assert_eq!(
        circles(&graph),
        [vec!["x".to_owned(), "y".to_owned(), "z::inner".to_owned()]]
    );
}
