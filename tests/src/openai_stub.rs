//! A stand-in for vLLM's OpenAI-compatible server, so `dpuctl demo check-serving` and
//! the local executor's serve step are tested without a GPU: `/health`, `/v1/models`
//! and `/v1/chat/completions` (plain and SSE-streamed) with canned answers.
//!
//! It is a small hand-written HTTP/1.1 server on a tokio `TcpListener` rather than a
//! framework, because the tests need exact control of *when* bytes reach the socket: the
//! streamed answer is sent as one chunked-transfer chunk per SSE event, flushed with a
//! delay in between (a real token stream), or all at once after the same delay (what a
//! buffering ingress makes of it). Every response closes its connection, which keeps the
//! parser to one request per connection. With [`StubConfig::tls`] it serves HTTPS, for
//! the checker's `--ca` path.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::net::TcpListener;
use tokio_rustls::rustls;

/// Largest request head plus body accepted; the checker's requests are far smaller.
const MAX_REQUEST: usize = 1 << 20;

/// The answer to a prompt the stub has no canned answer for.
pub const UNKNOWN_ANSWER: &str = "I do not know.";

/// How the stub behaves.
#[derive(Debug, Clone)]
pub struct StubConfig {
    /// The served model id (`--served-model-name`).
    pub model: String,
    /// Canned answers, prompt → text; other prompts get [`UNKNOWN_ANSWER`].
    pub answers: BTreeMap<String, String>,
    /// Pause before each streamed content chunk.
    pub chunk_delay: Duration,
    /// Hold the whole stream back and send it at once (a buffering proxy).
    pub buffer_stream: bool,
    /// `/health` answers 503 until this long after start (a model still loading).
    pub health_delay: Duration,
    /// `/v1/models` lists another id, and completions for `model` get 404.
    pub wrong_model: bool,
    /// Serve HTTPS with this certificate chain and key (PEM files).
    pub tls: Option<StubTls>,
}

/// The PEM files of an HTTPS stub.
#[derive(Debug, Clone)]
pub struct StubTls {
    /// The server certificate (chain), PEM.
    pub cert: PathBuf,
    /// Its private key (PKCS#8, SEC1 or PKCS#1), PEM.
    pub key: PathBuf,
}

impl StubConfig {
    /// A well-behaved server for `model`: healthy at once, streams 30 ms apart.
    pub fn new(model: &str) -> Self {
        Self {
            model: model.to_owned(),
            answers: BTreeMap::new(),
            chunk_delay: Duration::from_millis(30),
            buffer_stream: false,
            health_delay: Duration::ZERO,
            wrong_model: false,
            tls: None,
        }
    }

    /// Adds a canned answer.
    pub fn answer(mut self, prompt: &str, text: &str) -> Self {
        self.answers.insert(prompt.to_owned(), text.to_owned());
        self
    }

    /// The id `/v1/models` lists.
    fn listed_model(&self) -> String {
        if self.wrong_model {
            format!("{}-other", self.model)
        } else {
            self.model.clone()
        }
    }
}

/// A stub serving on a background thread with its own runtime; stops on drop.
#[derive(Debug)]
pub struct StubServer {
    addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StubServer {
    /// The address it listens on (127.0.0.1, a free port).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://{addr}`, for `--url`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for StubServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Starts a stub on 127.0.0.1 with a free port. Panics if it cannot, or if the TLS
/// files do not load (a test helper).
pub fn start(config: StubConfig) -> StubServer {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("stub runtime");
        runtime.block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind stub");
            let _ = addr_tx.send(listener.local_addr().expect("stub address"));
            tokio::select! {
                () = serve(listener, config) => {}
                _ = stop => {}
            }
        });
    });
    let addr = addr_rx.recv().expect("stub started");
    StubServer {
        addr,
        shutdown: Some(shutdown),
        thread: Some(thread),
    }
}

/// The TLS acceptor for `tls`.
fn acceptor(tls: &StubTls) -> Result<tokio_rustls::TlsAcceptor, String> {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(&tls.cert)
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|e| format!("{}: {e}", tls.cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(&tls.key)
        .map_err(|e| format!("{}: {e}", tls.key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(certs, key))
        .map_err(|e| format!("TLS configuration: {e}"))?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// Serves connections on `listener` until the future is dropped (the binary runs it
/// until killed). Panics if the TLS files do not load.
pub async fn serve(listener: TcpListener, config: StubConfig) {
    let started = Instant::now();
    let acceptor = config
        .tls
        .as_ref()
        .map(|tls| acceptor(tls).unwrap_or_else(|e| panic!("stub TLS: {e}")));
    let config = Arc::new(config);
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        // Each streamed chunk must leave at once, not wait for the next one (Nagle).
        if stream.set_nodelay(true).is_err() {
            continue;
        }
        let config = Arc::clone(&config);
        let acceptor = acceptor.clone();
        // A client that hangs up mid-answer (or fails the handshake) is not the stub's
        // problem.
        tokio::spawn(async move {
            match acceptor {
                Some(acceptor) => {
                    if let Ok(stream) = acceptor.accept(stream).await {
                        let _ = connection(stream, &config, started).await;
                    }
                }
                None => {
                    let _ = connection(stream, &config, started).await;
                }
            }
        });
    }
}

/// A byte stream a connection runs on: plain TCP or TLS.
trait Io: AsyncRead + AsyncWrite + Unpin {}

impl<T: AsyncRead + AsyncWrite + Unpin> Io for T {}

/// One request, one response, then close (with TLS's close_notify, so clients see a
/// clean end).
async fn connection(
    mut stream: impl Io,
    config: &StubConfig,
    started: Instant,
) -> std::io::Result<()> {
    let Some(request) = read_request(&mut stream).await? else {
        return Ok(());
    };
    handle(&mut stream, config, started, &request).await?;
    stream.shutdown().await
}

/// Answers one request.
async fn handle(
    stream: &mut impl Io,
    config: &StubConfig,
    started: Instant,
    request: &Request,
) -> std::io::Result<()> {
    match (request.method.as_str(), request.path.as_str()) {
        ("GET", "/health") => {
            if started.elapsed() >= config.health_delay {
                respond(stream, 200, "text/plain", b"").await
            } else {
                respond(stream, 503, "text/plain", b"loading").await
            }
        }
        ("GET", "/v1/models") => {
            let id = config.listed_model();
            let body = json!({"object": "list", "data": [{
                "id": id, "object": "model", "created": 0, "owned_by": "vllm",
                "root": id, "parent": null, "max_model_len": 4096,
            }]});
            respond_json(stream, 200, &body).await
        }
        ("POST", "/v1/chat/completions") => completion(stream, config, &request.body).await,
        _ => {
            let body = error_body(
                404,
                &format!("no route {} {}", request.method, request.path),
            );
            respond_json(stream, 404, &body).await
        }
    }
}

/// The parts of a request the stub looks at.
struct Request {
    method: String,
    path: String,
    body: Vec<u8>,
}

/// Reads a request head and its `Content-Length` body; `None` when the client closed
/// without sending one.
async fn read_request(stream: &mut impl Io) -> std::io::Result<Option<Request>> {
    let mut buf = Vec::new();
    let mut chunk = [0_u8; 8192];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        if buf.len() > MAX_REQUEST {
            return Err(std::io::Error::other("request head too large"));
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let method = request_line.next().unwrap_or_default().to_owned();
    let path = request_line.next().unwrap_or_default().to_owned();
    let length = lines
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok())
        .unwrap_or(0);
    if length > MAX_REQUEST {
        return Err(std::io::Error::other("request body too large"));
    }
    let mut body = buf.split_off(head_end);
    while body.len() < length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Ok(Some(Request { method, path, body }))
}

/// A complete response with `Content-Length`.
async fn respond(
    stream: &mut impl Io,
    status: u16,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.flush().await
}

/// A JSON response.
async fn respond_json(stream: &mut impl Io, status: u16, body: &Value) -> std::io::Result<()> {
    respond(
        stream,
        status,
        "application/json",
        body.to_string().as_bytes(),
    )
    .await
}

/// The reason phrase of the statuses the stub sends.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

/// vLLM's current error body shape.
fn error_body(code: u16, message: &str) -> Value {
    json!({"error": {"message": message, "type": reason(code), "param": null, "code": code}})
}

/// `POST /v1/chat/completions`: the canned answer to the last user message, whole or
/// streamed.
async fn completion(stream: &mut impl Io, config: &StubConfig, body: &[u8]) -> std::io::Result<()> {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return respond_json(stream, 400, &error_body(400, "the body is not JSON")).await;
    };
    let model = request["model"].as_str().unwrap_or_default();
    if model != config.listed_model() {
        let message = format!("The model `{model}` does not exist.");
        return respond_json(stream, 404, &error_body(404, &message)).await;
    }
    let prompt = request["messages"]
        .as_array()
        .and_then(|messages| messages.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    let text = config
        .answers
        .get(prompt)
        .map_or(UNKNOWN_ANSWER, String::as_str);
    if request["stream"].as_bool() == Some(true) {
        return stream_answer(stream, config, model, text).await;
    }
    let body = json!({
        "id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text, "reasoning": null, "tool_calls": []},
            "logprobs": null, "finish_reason": "stop", "stop_reason": null,
        }],
        "usage": {"prompt_tokens": 8, "completion_tokens": 8, "total_tokens": 16},
    });
    respond_json(stream, 200, &body).await
}

/// The SSE events of a streamed answer: a role chunk, one content chunk per word (with
/// its following space), a finish chunk, `[DONE]`.
fn sse_events(model: &str, text: &str) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        let event = json!({
            "id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        format!("data: {event}\n\n")
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    events.extend(
        text.split_inclusive(' ')
            .map(|word| chunk(json!({"content": word}), Value::Null)),
    );
    events.push(chunk(json!({}), json!("stop")));
    events.push("data: [DONE]\n\n".to_owned());
    events
}

/// Sends the answer as a chunked `text/event-stream`, paced or (with `buffer_stream`)
/// held back and written in one go after the same total delay.
async fn stream_answer(
    stream: &mut impl Io,
    config: &StubConfig,
    model: &str,
    text: &str,
) -> std::io::Result<()> {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\
                Connection: close\r\n\r\n";
    stream.write_all(head.as_bytes()).await?;
    stream.flush().await?;
    let events = sse_events(model, text);
    let chunked = |event: &str| format!("{:x}\r\n{event}\r\n", event.len());
    if config.buffer_stream {
        tokio::time::sleep(config.chunk_delay * events.len().try_into().unwrap_or(u32::MAX)).await;
        let all: String = events.iter().map(|e| chunked(e)).collect();
        stream.write_all(all.as_bytes()).await?;
    } else {
        for (index, event) in events.iter().enumerate() {
            if index > 0 {
                tokio::time::sleep(config.chunk_delay).await;
            }
            stream.write_all(chunked(event).as_bytes()).await?;
            stream.flush().await?;
        }
    }
    stream.write_all(b"0\r\n\r\n").await?;
    stream.flush().await
}
