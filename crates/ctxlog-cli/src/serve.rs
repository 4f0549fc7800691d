//! `serve`: every session of the store in the browser, live, on this
//! machine (`ctxlog-serve`); this file only opens the store and its index
//! and says where to look.

use crate::{Cli, CliError};
use ctxlog_app::pricing::PriceTable;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// `serve`'s arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// The port (default: a free one, printed).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Listen on this address instead of loopback (`0.0.0.0`: every
    /// network this machine is on). Anyone who can reach it and has the
    /// printed address (its token) reads every session.
    #[arg(long)]
    pub listen: Option<IpAddr>,
    /// Open the page in the desktop's browser.
    #[arg(long)]
    pub open: bool,
    /// Show recorded secrets replaced by markers.
    #[arg(long)]
    pub redact: bool,
    /// A JSON file of model prices to estimate costs with (as `usage
    /// --pricing`).
    #[arg(long)]
    pub pricing: Option<std::path::PathBuf>,
}

/// `serve`.
pub(crate) fn serve(cli: &Cli, a: &ServeArgs) -> Result<(), CliError> {
    let ip = a.listen.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
    if !ip.is_loopback() {
        eprintln!(
            "ctxlog serve: warning: listening on {ip}, not only this machine: anyone who reaches it with the printed address reads every session of {}",
            cli.db
        );
    }
    let prices = match &a.pricing {
        Some(path) => {
            PriceTable::with_override(path).map_err(|e| CliError::BadInput(e.to_string()))?
        }
        None => PriceTable::built_in(),
    };
    // It reads sessions in order (their lines, their pages): a small page
    // cache, as `report` has.
    let store = crate::store::open_existing_scanning(&cli.db)?;
    let index = crate::search::open_index(&cli.db, &store, false)?;
    let settings = ctxlog_serve::Settings {
        listen: SocketAddr::new(ip, a.port),
        redact: a.redact,
        zone: cli.zone(),
        prices,
    };
    let server = ctxlog_serve::Server::bind(store, index, settings)
        .map_err(|e| CliError::Failed(e.to_string()))?;
    // The address alone on stdout, for a script to read; the rest to
    // stderr.
    println!("{}", server.url());
    eprintln!(
        "ctxlog serve: every session of {} at the address above (it holds this run's secret token; keep it to yourself). Ctrl-C stops.",
        cli.db
    );
    if a.open {
        open_browser(server.url());
    }
    server.run();
    Ok(())
}

/// Opens `url` in the desktop's browser (`xdg-open`), saying so when it
/// cannot.
fn open_browser(url: &str) {
    let opened = std::process::Command::new("xdg-open")
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = opened {
        eprintln!("ctxlog serve: cannot open a browser (xdg-open: {e}); open the address above");
    }
}
