//! TLS as libpq's `sslmode` means it, on rustls:
//!
//! - `disable`: never; `allow`/`prefer` (libpq's default): when the server
//!   offers it; `require`: always. None of these checks the server's
//!   certificate (libpq's meaning), unless `sslrootcert` names the
//!   authorities to check it against.
//! - `verify-ca`/`verify-full`: always, and the certificate must chain to
//!   `sslrootcert` (else to the Mozilla roots of `webpki-roots`) and name
//!   the host. `verify-ca` is checked as `verify-full` (stricter).

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_postgres_rustls::MakeRustlsConnect;

/// What `sslmode` asks of the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// `disable`.
    Disable,
    /// `allow` or `prefer`: TLS when the server offers it.
    Prefer,
    /// `require`: TLS always.
    Require,
    /// `verify-ca` or `verify-full`: TLS always, the certificate checked.
    Verify,
}

impl SslMode {
    /// The mode `sslmode=value` names.
    pub fn parse(value: &str) -> Result<SslMode, String> {
        Ok(match value {
            "disable" => SslMode::Disable,
            "allow" | "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" | "verify-full" => SslMode::Verify,
            other => {
                return Err(format!(
                    "sslmode={other}: not one of disable, allow, prefer, require, verify-ca, verify-full"
                ))
            }
        })
    }

    /// The client library's mode for it.
    pub(crate) fn client_mode(self) -> postgres::config::SslMode {
        match self {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::Verify => postgres::config::SslMode::Require,
        }
    }
}

/// The connector for `mode`, checking certificates against `root_cert`
/// (PEM) when given.
pub(crate) fn connector(
    mode: SslMode,
    root_cert: Option<&Path>,
) -> Result<MakeRustlsConnect, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let verified = mode == SslMode::Verify || root_cert.is_some();
    let config = if verified {
        let mut roots = RootCertStore::empty();
        match root_cert {
            Some(path) => {
                for cert in CertificateDer::pem_file_iter(path)
                    .map_err(|e| format!("sslrootcert={}: {e}", path.display()))?
                {
                    let cert = cert.map_err(|e| format!("sslrootcert={}: {e}", path.display()))?;
                    roots
                        .add(cert)
                        .map_err(|e| format!("sslrootcert={}: {e}", path.display()))?;
                }
                if roots.is_empty() {
                    return Err(format!(
                        "sslrootcert={}: no certificate in it",
                        path.display()
                    ));
                }
            }
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unchecked(provider)))
            .with_no_client_auth()
    };
    Ok(MakeRustlsConnect::new(config))
}

/// The `sslrootcert` of a connection string, as a path.
pub(crate) fn root_cert_path(value: &str) -> PathBuf {
    PathBuf::from(value)
}

/// A verifier that takes any certificate (libpq's `require`): the
/// connection is encrypted, the server not authenticated. The handshake's
/// signatures are still checked.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
