//! `openai-stub`: the test stand-in for vLLM as a process, for the local executor's
//! serve step in CI (`[local] serve = ["openai-stub", "--port", "8000", ...]`). Prints
//! `listening on ADDR` once it accepts connections, then serves until killed.
//!
//! Flags: `--port N` (default 8000, 0 for any), `--model NAME` (default `demo-qlora`),
//! `--answer PROMPT=TEXT` (repeatable; split at the first `=`), `--buffer-stream`,
//! `--health-delay-ms N`, `--chunk-delay-ms N`, `--wrong-model`, `--tls-cert PEM
//! --tls-key PEM` (HTTPS).

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use dpu_tests::openai_stub::{serve, StubConfig, StubTls};

/// Parses the flags; the message says which one is wrong.
fn parse(args: impl Iterator<Item = String>) -> Result<(u16, StubConfig), String> {
    let mut port = 8000_u16;
    let mut config = StubConfig::new("demo-qlora");
    let mut args = args.peekable();
    let (mut cert, mut key) = (None, None);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        let millis = |v: String| {
            v.parse::<u64>()
                .map(Duration::from_millis)
                .map_err(|e| format!("{flag} {v:?}: {e}"))
        };
        match flag.as_str() {
            "--port" => {
                let v = value()?;
                port = v.parse().map_err(|e| format!("--port {v:?}: {e}"))?;
            }
            "--model" => config.model = value()?,
            "--answer" => {
                let v = value()?;
                let (prompt, text) = v
                    .split_once('=')
                    .ok_or_else(|| format!("--answer {v:?}: expected PROMPT=TEXT"))?;
                config.answers.insert(prompt.to_owned(), text.to_owned());
            }
            "--buffer-stream" => config.buffer_stream = true,
            "--wrong-model" => config.wrong_model = true,
            "--health-delay-ms" => config.health_delay = millis(value()?)?,
            "--chunk-delay-ms" => config.chunk_delay = millis(value()?)?,
            "--tls-cert" => cert = Some(value()?.into()),
            "--tls-key" => key = Some(value()?.into()),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown flag {other:?}")),
        }
    }
    config.tls = match (cert, key) {
        (Some(cert), Some(key)) => Some(StubTls { cert, key }),
        (None, None) => None,
        _ => return Err("--tls-cert and --tls-key go together".to_owned()),
    };
    Ok((port, config))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let (port, config) = match parse(std::env::args().skip(1)) {
        Ok(parsed) => parsed,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("openai-stub: {message}");
            }
            eprintln!(
                "usage: openai-stub [--port N] [--model NAME] [--answer PROMPT=TEXT]... \
                 [--buffer-stream] [--health-delay-ms N] [--chunk-delay-ms N] [--wrong-model] \
                 [--tls-cert PEM --tls-key PEM]"
            );
            return ExitCode::from(2);
        }
    };
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("openai-stub: cannot listen on 127.0.0.1:{port}: {e}");
            return ExitCode::from(1);
        }
    };
    let addr = match listener.local_addr() {
        Ok(addr) => addr.to_string(),
        Err(e) => {
            eprintln!("openai-stub: {e}");
            return ExitCode::from(1);
        }
    };
    let mut out = std::io::stdout();
    // Whoever started us waits for this line; a closed stdout must not stop the server.
    let _ = writeln!(out, "listening on {addr}").and_then(|()| out.flush());
    serve(listener, config).await;
    ExitCode::SUCCESS
}
