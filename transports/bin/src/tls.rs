//! TLS for the webhook HTTP driver (`https` receivers), with rustls and the Mozilla root
//! store. The domain's driver speaks HTTP/1.1 over any byte stream; this wraps its TCP
//! socket.
//!
//! A webhook with `ssl_verification: false` (the receiver's own choice, for self-signed
//! development endpoints) still gets TLS, but with a verifier that accepts any
//! certificate: encryption without authentication, as the owner asked for.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use dunning_domain::webhooks::{Stream, TlsConnector};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, StreamOwned};

/// Two client configurations: verifying (the default) and not.
pub(crate) struct Rustls {
    verified: Arc<ClientConfig>,
    unverified: Arc<ClientConfig>,
}

impl Rustls {
    pub(crate) fn new() -> Self {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let roots = RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let builder = || {
            ClientConfig::builder_with_provider(provider.clone())
                .with_safe_default_protocol_versions()
                .expect("ring supports the default protocol versions")
        };
        let verified = builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let unverified = builder()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider.clone())))
            .with_no_client_auth();
        Self {
            verified: Arc::new(verified),
            unverified: Arc::new(unverified),
        }
    }
}

impl TlsConnector for Rustls {
    fn connect(&self, host: &str, tcp: TcpStream, verify: bool) -> io::Result<Box<dyn Stream>> {
        let name = ServerName::try_from(host.to_owned())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let config = if verify {
            self.verified.clone()
        } else {
            self.unverified.clone()
        };
        let conn = ClientConnection::new(config, name).map_err(io::Error::other)?;
        let mut stream = StreamOwned::new(conn, tcp);
        // Handshake now, so a bad certificate is reported as such and not as a write error.
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock)?;
        }
        Ok(Box::new(Tls(stream)))
    }
}

/// The TLS stream (a named type keeps `StreamOwned`'s generics out of the driver).
struct Tls(StreamOwned<ClientConnection, TcpStream>);

impl Read for Tls {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for Tls {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// Accepts any certificate, but still checks the handshake signatures.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
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
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
