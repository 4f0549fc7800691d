//! A store is private to its owner: made 0700/0600 whatever the umask, an
//! older wider store tightened with a notice, another user (`nobody`)
//! reads nothing, neither from the files nor through the owner's socket
//! when its modes were widened by hand; and the default store is the same
//! from any directory.
//!
//! The tests that switch users run `setpriv` as root (as CI runs); run as
//! another user they skip with a message.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const FIXTURE: &str = "fixtures/sessions/opencode/compacted-and-pruned.json";
const SOURCE_ID: &str = "ses_0a3f9c1e2ffeQk7Zp2LmN8rT4v";

fn workdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ctxlog-private-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// `ctxlog ARGS` under `umask`, as `user` (via setpriv) when given.
fn ctxlog_as(
    user: Option<&str>,
    umask: u32,
    envs: &[(&str, &Path)],
    cwd: &Path,
    args: &[&str],
) -> Output {
    let bin = env!("CARGO_BIN_EXE_ctxlog");
    let mut line = format!("umask {umask:03o}; exec");
    if let Some(u) = user {
        line.push_str(&format!(
            " setpriv --reuid={u} --regid=nogroup --clear-groups"
        ));
    }
    line.push_str(&format!(" '{bin}'"));
    for a in args {
        line.push_str(&format!(" '{a}'"));
    }
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(line)
        .current_dir(cwd)
        .env_remove("CTXLOG_DB")
        .env_remove("XDG_DATA_HOME");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("run ctxlog")
}

fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

/// Every path under `dir` (itself included) whose mode is wider than
/// 0700 for directories or 0600 for anything else.
fn wider_than_private(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let meta = std::fs::symlink_metadata(dir).unwrap();
    let mode = meta.mode() & 0o777;
    let allowed = if meta.is_dir() { 0o700 } else { 0o600 };
    if mode & !allowed != 0 {
        out.push(format!("{} {mode:o}", dir.display()));
    }
    if meta.is_dir() {
        for e in std::fs::read_dir(dir).unwrap() {
            out.extend(wider_than_private(&e.unwrap().path()));
        }
    }
    out
}

fn running_as_root() -> bool {
    let me = std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(1);
    if me != 0 {
        eprintln!("SKIPPED: switching to user nobody needs root (setpriv)");
    }
    me == 0
}

#[test]
fn a_store_is_private_whatever_the_umask() {
    let dir = workdir("umask");
    let fixture = common::root().join(FIXTURE);
    for umask in [0o022, 0o000] {
        let db = dir.join(format!("store-{umask:03o}"));
        ok(ctxlog_as(
            None,
            umask,
            &[],
            &dir,
            &[
                "--db",
                db.to_str().unwrap(),
                "import",
                fixture.to_str().unwrap(),
            ],
        ));
        assert!(
            std::fs::read_dir(&db).unwrap().count() >= 3,
            "a store was made"
        );
        assert_eq!(
            wider_than_private(&db),
            Vec::<String>::new(),
            "umask {umask:03o}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_wider_store_is_tightened_with_a_notice() {
    let dir = workdir("tighten");
    let db = dir.join("store");
    let fixture = common::root().join(FIXTURE);
    ok(ctxlog_as(
        None,
        0o022,
        &[],
        &dir,
        &[
            "--db",
            db.to_str().unwrap(),
            "import",
            fixture.to_str().unwrap(),
        ],
    ));
    // What an older ctxlog left under umask 022.
    let widen = Command::new("chmod")
        .args(["-R", "go+rX"])
        .arg(&db)
        .status()
        .unwrap();
    assert!(widen.success());
    assert!(!wider_than_private(&db).is_empty());
    let out = ok(ctxlog_as(
        None,
        0o022,
        &[],
        &dir,
        &["--db", db.to_str().unwrap(), "sessions"],
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("could be read by other users: made private"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("ses_0a3f"));
    assert_eq!(wider_than_private(&db), Vec::<String>::new());
    // Said once: a private store opens without a word.
    let again = ok(ctxlog_as(
        None,
        0o022,
        &[],
        &dir,
        &["--db", db.to_str().unwrap(), "sessions"],
    ));
    assert!(!String::from_utf8_lossy(&again.stderr).contains("made private"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_default_store_is_the_users_from_any_directory() {
    let dir = workdir("default");
    let home = dir.join("home");
    let (a, b) = (dir.join("project-a"), dir.join("project-b"));
    for d in [&home, &a, &b] {
        std::fs::create_dir_all(d).unwrap();
    }
    let fixture = common::root().join(FIXTURE);
    let env = [("HOME", home.as_path())];
    // A new user has no sessions yet, which is said with what to run (it
    // exited 2 with "not a ctxlog store"); nothing is created.
    let fresh = ok(ctxlog_as(None, 0o022, &env, &a, &["sessions"]));
    let said = String::from_utf8_lossy(&fresh.stdout);
    assert!(
        said.contains("no sessions yet") && said.contains("ctxlog import --discover"),
        "{said}"
    );
    let fresh = ok(ctxlog_as(None, 0o022, &env, &a, &["--json", "sessions"]));
    assert!(String::from_utf8_lossy(&fresh.stdout).contains("\"sessions\":[]"));
    assert!(!home.join(".local").exists());
    // `import --discover` that finds nothing says where it looked.
    let none = ctxlog_as(None, 0o022, &env, &a, &["import", "--discover"]);
    let err = String::from_utf8_lossy(&none.stderr);
    assert_eq!(none.status.code(), Some(2), "{err}");
    assert!(err.contains("looked for claude-code in "), "{err}");
    ok(ctxlog_as(
        None,
        0o022,
        &env,
        &a,
        &["import", fixture.to_str().unwrap()],
    ));
    let listed = ok(ctxlog_as(None, 0o022, &env, &b, &["--json", "sessions"]));
    assert!(String::from_utf8_lossy(&listed.stdout).contains(SOURCE_ID));
    let store = home.join(".local/share/ctxlog");
    assert!(
        store.join("db").is_file(),
        "the store is in the data directory"
    );
    assert_eq!(wider_than_private(&store), Vec::<String>::new());
    assert!(!a.join("ctxlog-data").exists() && !b.join("ctxlog-data").exists());
    // $XDG_DATA_HOME, when set, is where it goes.
    let data = dir.join("data");
    let env = [("HOME", home.as_path()), ("XDG_DATA_HOME", data.as_path())];
    ok(ctxlog_as(
        None,
        0o022,
        &env,
        &a,
        &["import", fixture.to_str().unwrap()],
    ));
    assert!(data.join("ctxlog/db").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Starts `import --follow` on a folder holding the fixture: a process that
/// holds the store and serves its readers until killed; waits for its socket.
fn hold(db: &Path, folder: &Path) -> Child {
    let child = Command::new(env!("CARGO_BIN_EXE_ctxlog"))
        .arg("--db")
        .arg(db)
        .args(["import", "--follow", "--interval", "50"])
        .arg(folder)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the holder");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !db.join("owner.sock").exists() {
        assert!(Instant::now() < deadline, "the holder did not serve");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[test]
fn another_user_reads_nothing_from_the_files_or_the_socket() {
    if !running_as_root() {
        return;
    }
    let dir = workdir("nobody");
    let db = dir.join("store");
    let folder = dir.join("recordings");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(common::root().join(FIXTURE), folder.join("session.json")).unwrap();
    let d = db.to_str().unwrap();
    ok(ctxlog_as(
        None,
        0o022,
        &[],
        &dir,
        &[
            "--db",
            d,
            "import",
            folder.join("session.json").to_str().unwrap(),
        ],
    ));
    // At rest: the directory keeps nobody out.
    let out = ctxlog_as(Some("nobody"), 0o022, &[], &dir, &["--db", d, "sessions"]);
    assert!(!out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("ses_0a3f"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("private to the user who made it"), "{err}");
    // Held, with its modes widened by hand (as a umask of 000 did before):
    // the socket is reachable, and the owner still refuses to serve.
    let mut holder = hold(&db, &folder);
    let widen = Command::new("chmod")
        .args(["-R", "a+rwX"])
        .arg(&db)
        .status()
        .unwrap();
    assert!(widen.success());
    let out = ctxlog_as(Some("nobody"), 0o022, &[], &dir, &["--db", d, "sessions"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(!out.status.success(), "nobody was served: {stdout}");
    assert!(!stdout.contains("ses_0a3f"), "{stdout}");
    assert!(
        !stderr.contains("reading what it has made durable"),
        "{stderr}"
    );
    // The owner is served through the same socket.
    let mine = ok(ctxlog_as(None, 0o022, &[], &dir, &["--db", d, "sessions"]));
    assert!(String::from_utf8_lossy(&mine.stderr).contains("through it"));
    assert!(String::from_utf8_lossy(&mine.stdout).contains("ses_0a3f"));
    holder.kill().unwrap();
    holder.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every path under `dir` (itself included) not owned by `uid`.
fn not_owned_by(dir: &Path, uid: u32) -> Vec<String> {
    let mut out = Vec::new();
    let meta = std::fs::symlink_metadata(dir).unwrap();
    if meta.uid() != uid {
        out.push(format!("{} (uid {})", dir.display(), meta.uid()));
    }
    if meta.is_dir() {
        for e in std::fs::read_dir(dir).unwrap() {
            out.extend(not_owned_by(&e.unwrap().path(), uid));
        }
    }
    out
}

/// Root works on another user's store without leaving a file of its own
/// in it (which would lock the owner out): through a process of the
/// owner's that holds it, else reading a copy, and a write with none is
/// refused saying why. A store of another user is never called damaged.
#[test]
fn root_leaves_every_file_of_another_users_store_to_its_owner() {
    if !running_as_root() {
        return;
    }
    let dir = workdir("root-on-nobody");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let nobody = 65534;
    std::os::unix::fs::chown(&home, Some(nobody), Some(nobody)).unwrap();
    let folder = dir.join("recordings");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(common::root().join(FIXTURE), folder.join("session.json")).unwrap();
    let pi = folder.join("pi.jsonl");
    std::fs::copy(
        common::root().join("fixtures/sessions/pi/edge-cases.jsonl"),
        &pi,
    )
    .unwrap();
    let db = home.join("store");
    let d = db.to_str().unwrap();
    let session = folder.join("session.json");
    ok(ctxlog_as(
        Some("nobody"),
        0o022,
        &[],
        &dir,
        &["--db", d, "import", session.to_str().unwrap()],
    ));
    let clean = |what: &str, err: &str| {
        assert!(
            !err.contains("damaged") && !err.contains("backup"),
            "{what}: {err}"
        );
        assert!(
            not_owned_by(&db, nobody).is_empty(),
            "{what}: {:?}",
            not_owned_by(&db, nobody)
        );
    };

    // No process of nobody's holds it: root's write is refused, its read
    // reads a copy.
    let out = ctxlog_as(
        None,
        0o022,
        &[],
        &dir,
        &["--db", d, "import", pi.to_str().unwrap()],
    );
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("belongs to nobody (uid 65534)") && err.contains("run this as its owner"),
        "{err}"
    );
    clean("a refused write", &err);
    let out = ok(ctxlog_as(None, 0o022, &[], &dir, &["--db", d, "sessions"]));
    assert!(String::from_utf8_lossy(&out.stdout).contains("ses_0a3f"));
    clean("a read", &String::from_utf8_lossy(&out.stderr));

    // Held by nobody's `import --follow`: root writes through it.
    let mut holder = Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_ctxlog"))
        .args(["--db", d, "import", "--follow", "--interval", "50"])
        .arg(&session)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while ctxlog_sled::RemoteLog::connect(&db)
        .ok()
        .flatten()
        .is_none()
    {
        assert!(Instant::now() < deadline, "the holder did not serve");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = ok(ctxlog_as(
        None,
        0o022,
        &[],
        &dir,
        &["--db", d, "import", pi.to_str().unwrap()],
    ));
    clean(
        "a write through the holder",
        &String::from_utf8_lossy(&out.stderr),
    );
    holder.kill().unwrap();
    holder.wait().unwrap();
    // The owner reads both, nothing locked out.
    let out = ok(ctxlog_as(
        Some("nobody"),
        0o022,
        &[],
        &dir,
        &["--db", d, "sessions"],
    ));
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed.contains("ses_0a3f") && listed.contains("5e1f0c2a"),
        "{listed}"
    );
    clean("the owner's read", &String::from_utf8_lossy(&out.stderr));

    // Another user's store that others may write (modes widened by hand):
    // reads and writes are refused naming its owner, whatever its modes;
    // nothing of nobody's is left in it, and nothing is called damaged.
    let mine = dir.join("root-store");
    let m = mine.to_str().unwrap();
    ok(ctxlog_as(
        None,
        0o022,
        &[],
        &dir,
        &["--db", m, "import", session.to_str().unwrap()],
    ));
    let widen = Command::new("chmod")
        .args(["-R", "a+rwX"])
        .arg(&mine)
        .status()
        .unwrap();
    assert!(widen.success());
    let out = ctxlog_as(
        Some("nobody"),
        0o022,
        &[],
        &dir,
        &["--db", m, "import", pi.to_str().unwrap()],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("belongs to root (uid 0)") && err.contains("private to the user who made it"),
        "{err}"
    );
    assert!(!err.contains("damaged") && !err.contains("backup"), "{err}");
    for modes in ["a+rwX", "go-w", "go-rwx"] {
        let chmod = Command::new("chmod")
            .args(["-R", modes])
            .arg(&mine)
            .status()
            .unwrap();
        assert!(chmod.success());
        let out = ctxlog_as(Some("nobody"), 0o022, &[], &dir, &["--db", m, "sessions"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{modes}: {err}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("ses_0a3f"));
        assert!(
            err.contains("belongs to root (uid 0)") && !err.contains("damaged"),
            "{modes}: {err}"
        );
    }
    assert!(
        not_owned_by(&mine, 0).is_empty(),
        "{:?}",
        not_owned_by(&mine, 0)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
