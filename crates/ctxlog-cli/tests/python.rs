//! The Python package's tests (`python/tests`, pytest), run by
//! `python/run-tests` in a virtual environment it creates, with this
//! build's `ctxlog` as the CLI they check Python's sessions with. Skipped
//! with a message when the environment cannot be made (no `venv` module,
//! no PyPI), unless `CTXLOG_REQUIRE_PYTHON=1` (`.ci/run` sets it).

use std::path::Path;
use std::process::Command;

#[test]
fn the_python_package_passes_its_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let status = Command::new(root.join("python/run-tests"))
        .env("CTXLOG_BIN", env!("CARGO_BIN_EXE_ctxlog"))
        .status()
        .expect("python/run-tests starts");
    if status.code() == Some(77) {
        eprintln!("skipped: python/run-tests could not make its environment (see above)");
        return;
    }
    assert!(status.success(), "python/run-tests failed: {status}");
}
