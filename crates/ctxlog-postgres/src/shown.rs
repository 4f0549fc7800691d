//! Connection strings as they are shown: either form (URL or key/value)
//! with every password replaced by `***`, so no message, log line or
//! `--json` output ever carries one.

/// `text` (either form) with every password replaced by `***`.
pub fn without_password(text: &str) -> String {
    if text.starts_with("postgresql://") || text.starts_with("postgres://") {
        return url_without_password(text);
    }
    // The key/value form: each `password = value` pair's value.
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = find_password_key(rest) {
        out.push_str(&rest[..at]);
        let after_key = &rest[at + "password".len()..];
        let eq = after_key.find('=').map_or(0, |e| e + 1);
        out.push_str("password");
        out.push_str(&after_key[..eq]);
        let value = &after_key[eq..];
        let spaces = value.len() - value.trim_start().len();
        out.push_str(&value[..spaces]);
        out.push_str("***");
        let value = &value[spaces..];
        rest = &value[value_len(value)..];
    }
    out.push_str(rest);
    out
}

/// Where a `password` keyword starts in key/value text (at the start or
/// after whitespace, followed by `=`).
fn find_password_key(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find("password") {
        let at = from + i;
        let before_ok = at == 0 || text[..at].ends_with(char::is_whitespace);
        let after = text[at + "password".len()..].trim_start();
        if before_ok && after.starts_with('=') {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// The length of a key/value value at the start of `value` (quoted or not).
fn value_len(value: &str) -> usize {
    let mut chars = value.char_indices().peekable();
    if value.starts_with('\'') {
        chars.next();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    chars.next();
                }
                '\'' => return i + 1,
                _ => {}
            }
        }
        return value.len();
    }
    let mut escaped = false;
    for (i, c) in value.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        if c == '\\' {
            escaped = true;
        } else if c.is_whitespace() {
            return i;
        }
    }
    value.len()
}

/// The URL form with the password of its user info (and any `password=`
/// parameter) replaced by `***`.
fn url_without_password(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, url),
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((user_info, hosts)) => match user_info.split_once(':') {
            Some((user, _)) => format!("{user}:***@{hosts}"),
            None => format!("{user_info}@{hosts}"),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => p.to_owned(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_owned(),
    };
    match scheme {
        Some(scheme) => format!("{scheme}://{authority}{tail}"),
        None => format!("{authority}{tail}"),
    }
}
