//! Connection strings read as libpq reads them (`conninfo.rs`): both
//! forms, the service file, the environment and the password file, and
//! passwords left out of what is shown. No server needed.

use ctxlog_postgres::conninfo::{is_conninfo, without_password, Conninfo, Env};
use std::collections::BTreeMap;

/// An environment of the test's own.
struct Vars(Vec<(&'static str, String)>);

impl Env for Vars {
    fn var(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.clone())
    }
    fn user_name(&self) -> Option<String> {
        Some("me".into())
    }
}

#[test]
fn both_forms_say_the_same() {
    let none = Vars(vec![]);
    let url = Conninfo::resolve("postgresql://u:p%40ss@h:6000/db?sslmode=require", &none).unwrap();
    let kv = Conninfo::resolve(
        "host=h port=6000 user=u password='p@ss' dbname=db sslmode=require",
        &none,
    )
    .unwrap();
    let all = |c: &Conninfo| -> BTreeMap<String, String> {
        c.settings()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    };
    assert_eq!(all(&url), all(&kv));
    assert_eq!(url.get("password"), Some("p@ss"));
    let v6 = Conninfo::resolve("postgresql://[::1]:5433,h2/db", &none).unwrap();
    assert_eq!(
        (v6.get("host"), v6.get("port")),
        (Some("::1,h2"), Some("5433,"))
    );
    assert!(Conninfo::resolve("host=h bogus=1", &none)
        .unwrap_err()
        .contains("bogus"));
    assert!(Conninfo::resolve("host='h", &none).is_err());
}

#[test]
fn left_out_settings_come_from_the_service_the_environment_and_the_password_file() {
    let dir = std::env::temp_dir().join(format!("ctxlog-conninfo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(".pg_service.conf"),
        "[other]\nhost=x\n[logs]\n# a comment\nhost = db.example\nport=6432\ndbname=ctxlog\n",
    )
    .unwrap();
    let pgpass = dir.join(".pgpass");
    std::fs::write(
        &pgpass,
        "# hosts\nother:*:*:*:no\ndb.example:6432:*:alice:s3cr\\:t\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let home = dir.display().to_string();
    let env = Vars(vec![
        ("HOME", home.clone()),
        ("PGUSER", "alice".into()),
        ("PGSERVICE", "logs".into()),
    ]);
    let c = Conninfo::resolve("postgresql://", &env).unwrap();
    assert_eq!(c.get("host"), Some("db.example"));
    assert_eq!(c.get("port"), Some("6432"));
    assert_eq!(c.get("dbname"), Some("ctxlog"));
    assert_eq!(c.get("user"), Some("alice"));
    assert_eq!(c.get("password"), Some("s3cr:t"));
    assert!(c.password_from.as_deref().unwrap().ends_with(".pgpass"));
    // The string wins over the service, the service over the
    // environment; PGPASSWORD over the password file.
    let env = Vars(vec![
        ("HOME", home.clone()),
        ("PGHOST", "envhost".into()),
        ("PGPASSWORD", "fromenv".into()),
        ("PGUSER", "alice".into()),
    ]);
    let c = Conninfo::resolve("service=logs port=7000", &env).unwrap();
    assert_eq!(
        (c.get("host"), c.get("port")),
        (Some("db.example"), Some("7000"))
    );
    assert_eq!(c.get("password"), Some("fromenv"));
    assert_eq!(c.password_from.as_deref(), Some("PGPASSWORD"));
    // A password file others may read is passed over.
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    let env = Vars(vec![("HOME", home), ("PGUSER", "alice".into())]);
    let c = Conninfo::resolve("service=logs", &env).unwrap();
    assert_eq!(c.get("password"), None);
    assert!(Conninfo::resolve("service=nope", &env)
        .unwrap_err()
        .contains("nope"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn connection_strings_are_told_from_directories() {
    for yes in [
        "postgresql://h/db",
        "postgres://",
        "host=127.0.0.1 port=5432",
        " dbname=x",
        "service=logs",
    ] {
        assert!(is_conninfo(yes), "{yes}");
    }
    for no in ["/home/me/store", "store", "a=b", "./host=x", "my store=old"] {
        assert!(!is_conninfo(no), "{no}");
    }
}

#[test]
fn passwords_are_left_out() {
    for (text, shown) in [
        (
            "host=127.0.0.1 port=54329 user=me password=secret dbname=ctxlog",
            "host=127.0.0.1 port=54329 user=me password=*** dbname=ctxlog",
        ),
        ("password = 'a b\\'c' host=h", "password = *** host=h"),
        ("host=h password=x", "host=h password=***"),
        ("host=h mypassword=x", "host=h mypassword=x"),
        (
            "postgres://u:p@h1,h2/db?sslmode=require&password=xyz",
            "postgres://u:***@h1,h2/db?sslmode=require&password=***",
        ),
    ] {
        assert_eq!(without_password(text), shown);
    }
}
