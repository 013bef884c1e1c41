//! # dunning-peers: the other MCP servers of `dunning-load versus` (bench only)
//!
//! `dunning-peers serve rmcp|tower-mcp` serves one `echo` tool (argument `note`, answered
//! as text) on 127.0.0.1:0 over Streamable HTTP at `/`, the way each SDK's documentation
//! builds a stateless server: the handler or router built once, JSON responses (no SSE),
//! no sessions (era-2026 requests are stateless in both). Prints `PORT <n>`, then serves
//! until its stdin closes or 10 minutes pass, like the children of `dunning-load`.
//!
//! A workspace of its own (`benches/peers`, excluded from the product's): rmcp and
//! tower-mcp bring axum, schemars and more, which `cargo test --workspace` and CI should
//! not build for a benchmark.

use std::io::{self, Read, Write};
use std::time::Duration;

/// A server lives at most this long.
const LIFETIME: Duration = Duration::from_secs(600);

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kind = match args.as_slice() {
        [serve, kind] if serve == "serve" => kind.clone(),
        _ => {
            return Err(io::Error::other(
                "usage: dunning-peers serve rmcp|tower-mcp",
            ));
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        println!("PORT {}", listener.local_addr()?.port());
        io::stdout().flush()?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = io::stdin().take(1 << 20).read_to_end(&mut sink);
            let _ = tx.send(());
        });
        let stop = async move {
            tokio::select! {
                _ = rx => {}
                () = tokio::time::sleep(LIFETIME) => {}
            }
        };
        let router = match kind.as_str() {
            "rmcp" => rmcp_echo::router(),
            "tower-mcp" => tower_echo::router(),
            other => return Err(io::Error::other(format!("unknown peer {other}"))),
        };
        axum::serve(listener, router)
            .with_graceful_shutdown(stop)
            .await
    })
}

/// The `echo` tool's arguments.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// What to echo.
    note: String,
}

mod rmcp_echo {
    use rmcp::handler::server::router::tool::ToolRouter;
    use rmcp::handler::server::wrapper::Parameters;
    use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    use rmcp::{ServerHandler, tool, tool_handler, tool_router};

    use super::EchoArgs;

    #[derive(Clone)]
    pub(crate) struct Echo {
        // Read by the code `#[tool_handler]` generates, which rustc does not credit.
        #[allow(dead_code)]
        tool_router: ToolRouter<Self>,
    }

    #[tool_router]
    impl Echo {
        fn new() -> Self {
            Self {
                tool_router: Self::tool_router(),
            }
        }

        #[tool(description = "Echo the note")]
        fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> String {
            args.note
        }
    }

    #[tool_handler]
    impl ServerHandler for Echo {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
                .with_server_info(Implementation::new("rmcp-echo", "1.0.0"))
        }
    }

    /// Streamable HTTP at `/`: JSON responses, no sessions, the handler built once.
    pub(crate) fn router() -> axum::Router {
        let echo = Echo::new();
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None);
        let service: StreamableHttpService<Echo, LocalSessionManager> =
            StreamableHttpService::new(move || Ok(echo.clone()), Default::default(), config);
        axum::Router::new().fallback_service(service)
    }
}

mod tower_echo {
    use tower_mcp::transport::http::HttpTransport;
    use tower_mcp::{CallToolResult, McpRouter, ToolBuilder};

    use super::EchoArgs;

    /// Streamable HTTP at `/`: JSON responses (no SSE), the router built once.
    pub(crate) fn router() -> axum::Router {
        let echo = ToolBuilder::new("echo")
            .description("Echo the note")
            .read_only()
            .handler(|args: EchoArgs| async move { Ok(CallToolResult::text(args.note)) })
            .build();
        let router = McpRouter::new()
            .server_info("tower-mcp-echo", "1.0.0")
            .tool(echo);
        HttpTransport::new(router)
            .sse_responses(false)
            .into_router()
    }
}
