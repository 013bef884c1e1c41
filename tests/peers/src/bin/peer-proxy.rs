//! `dunning-peer-proxy --upstream HOST:PORT [--listen 127.0.0.1:0] [--token TOKEN]`
//!
//! A loopback HTTP/1.1 proxy for peers that cannot send credentials (the official
//! conformance suite has no header option). Each request is forwarded unchanged to the
//! upstream server — method, target, every header including the
//! client's own `Host` (the DNS-rebinding checks send their own) — plus
//! `Authorization: Bearer TOKEN` when the request carries no `Authorization` of its own.
//! Each client connection gets its own upstream connection, so the server sees the
//! client's own pattern of keep-alive connections.
//! Bodies stream both ways frame by frame (an SSE response is relayed as it is produced).
//!
//! The token comes from `--token` or else the `DUNNING_PEER_TOKEN` environment variable.
//! It prints `http://ADDR/` on the first line of stdout once listening. It binds loopback
//! only: it is a test tool that hands out a real token to whoever connects.

use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{AUTHORIZATION, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};

type Body = BoxBody<Bytes, hyper::Error>;

struct Proxy {
    upstream: String,
    bearer: HeaderValue,
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: dunning-peer-proxy --upstream HOST:PORT [--listen 127.0.0.1:0] [--token TOKEN]"
    );
    ExitCode::from(2)
}

fn bad_gateway(why: String) -> Response<Body> {
    eprintln!("dunning-peer-proxy: {why}");
    let mut r = Response::new(
        Full::new(Bytes::from(why))
            .map_err(|never| match never {})
            .boxed(),
    );
    *r.status_mut() = StatusCode::BAD_GATEWAY;
    r
}

/// The upstream connection paired with one client connection (opened on its first
/// request, reopened if the server closed it).
type Upstream = Arc<tokio::sync::Mutex<Option<SendRequest<Incoming>>>>;

async fn connect(upstream: &str) -> Result<SendRequest<Incoming>, String> {
    let stream = TcpStream::connect(upstream)
        .await
        .map_err(|e| format!("connect {upstream}: {e}"))?;
    let _ = stream.set_nodelay(true);
    let (sender, conn) = hyper::client::conn::http1::Builder::new()
        .preserve_header_case(true)
        .handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

async fn forward(
    proxy: Arc<Proxy>,
    upstream: Upstream,
    mut req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    if !req.headers().contains_key(AUTHORIZATION) {
        req.headers_mut()
            .insert(AUTHORIZATION, proxy.bearer.clone());
    }
    // HTTP/1.1 serves one request at a time per connection, so the lock is never contended.
    let mut slot = upstream.lock().await;
    let reusable = match slot.as_mut() {
        Some(s) => s.ready().await.is_ok(),
        None => false,
    };
    if !reusable {
        match connect(&proxy.upstream).await {
            Ok(s) => *slot = Some(s),
            Err(why) => return Ok(bad_gateway(why)),
        }
    }
    let Some(sender) = slot.as_mut() else {
        return Ok(bad_gateway("no upstream connection".into()));
    };
    let what = format!("{} {}", req.method(), req.uri());
    match sender.send_request(req).await {
        Ok(resp) => Ok(resp.map(BodyExt::boxed)),
        Err(e) => {
            *slot = None;
            Ok(bad_gateway(format!("upstream: {e} ({what})")))
        }
    }
}

async fn run(listener: TcpListener, proxy: Arc<Proxy>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let proxy = Arc::clone(&proxy);
        tokio::spawn(async move {
            let upstream: Upstream = Arc::default();
            let service = hyper::service::service_fn(move |req| {
                forward(Arc::clone(&proxy), Arc::clone(&upstream), req)
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .preserve_header_case(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn main() -> ExitCode {
    let mut listen = "127.0.0.1:0".to_owned();
    let mut upstream = None;
    let mut token = std::env::var("DUNNING_PEER_TOKEN").ok();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--listen", Some(v)) => listen = v,
            ("--upstream", Some(v)) => upstream = Some(v),
            ("--token", Some(v)) => token = Some(v),
            _ => return usage(),
        }
    }
    let (Some(upstream), Some(token)) = (upstream, token) else {
        return usage();
    };
    let Ok(bearer) = HeaderValue::from_str(&format!("Bearer {}", token.trim())) else {
        eprintln!("dunning-peer-proxy: the token is not header text");
        return ExitCode::from(2);
    };
    let addr: SocketAddr = match listen.parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("dunning-peer-proxy: --listen {listen}: {e}");
            return ExitCode::from(2);
        }
    };
    if !addr.ip().is_loopback() {
        eprintln!("dunning-peer-proxy: refusing to listen on a non-loopback address");
        return ExitCode::from(2);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("dunning-peer-proxy: {e}");
            return ExitCode::FAILURE;
        }
    };
    rt.block_on(async move {
        let listener = match TcpListener::bind(addr).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("dunning-peer-proxy: cannot listen on {addr}: {e}");
                return ExitCode::FAILURE;
            }
        };
        let local = listener.local_addr().map_or(addr, |a| a);
        println!("http://{local}/");
        let _ = std::io::stdout().flush();
        run(listener, Arc::new(Proxy { upstream, bearer })).await;
        ExitCode::SUCCESS
    })
}
