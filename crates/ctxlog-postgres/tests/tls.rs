//! TLS as `sslmode` asks: encrypted or not as the server sees it, the
//! server's certificate checked against `sslrootcert` for `verify-full`,
//! and refused when it does not chain to the roots. Needs a server with
//! TLS (`.ci/postgres start` makes one; `CTXLOG_TEST_POSTGRES_CA` names its
//! authority).

use ctxlog_postgres::{PgLog, PgOptions};
use ctxlog_store::conformance::session_events;
use ctxlog_store::{EventLog, Expected};

fn with(url: &str, params: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{params}")
}

fn open(url: &str) -> Result<PgLog, String> {
    PgLog::open_with(
        url,
        PgOptions {
            schema: Some(format!("tls_{}", std::process::id())),
        },
    )
    .map_err(|e| e.to_string())
}

#[test]
fn sslmode_is_kept_as_libpq_means_it() {
    let Some(url) = ctxlog_testkit::postgres_url("sslmode_is_kept_as_libpq_means_it") else {
        return;
    };
    let password = url
        .split_once("://")
        .and_then(|(_, r)| r.split_once('@'))
        .and_then(|(u, _)| u.split_once(':'))
        .map(|(_, p)| p.to_owned())
        .unwrap();
    // prefer (the default) and require encrypt; disable does not.
    for (params, encrypted) in [
        ("", true),
        ("sslmode=require", true),
        ("sslmode=disable", false),
    ] {
        let log = open(&with(&url, params)).unwrap_or_else(|e| panic!("{params}: {e}"));
        assert_eq!(log.encrypted().unwrap(), encrypted, "{params}");
    }
    // verify-full against the test authority: encrypted, and it works.
    match std::env::var("CTXLOG_TEST_POSTGRES_CA") {
        Ok(ca) => {
            let log = open(&with(
                &url,
                &format!("sslmode=verify-full&sslrootcert={ca}"),
            ))
            .unwrap();
            assert!(log.encrypted().unwrap());
            let (s, events) = session_events(77, 30);
            let _ = log.append(s, Expected::Any, events);
            assert!(log.head(s).unwrap() > 0);
        }
        Err(_) if std::env::var_os("CTXLOG_REQUIRE_POSTGRES").is_some() => {
            panic!("CTXLOG_TEST_POSTGRES_CA names no authority")
        }
        Err(_) => {
            eprintln!("verify-full with the test authority skipped: no CTXLOG_TEST_POSTGRES_CA")
        }
    }
    // verify-full against the public roots: the test certificate is
    // refused, and the error says so without the password.
    let e = open(&with(&url, "sslmode=verify-full")).unwrap_err();
    assert!(e.contains("cannot connect"), "{e}");
    assert!(!e.contains(&password), "{e}");
    let e = open(&with(&url, "sslmode=sometimes")).unwrap_err();
    assert!(e.contains("sslmode=sometimes"), "{e}");
    let e = open(&with(
        &url,
        "sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
    ))
    .unwrap_err();
    assert!(e.contains("/nonexistent/ca.pem"), "{e}");

    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS \"tls_{}\" CASCADE",
            std::process::id()
        ))
        .unwrap();
}
