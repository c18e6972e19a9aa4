//! Netlink exchanges as a capture records them, and their file format.
//!
//! A recorded exchange is one request the project sent on a kernel netlink socket and
//! every message the kernel answered it with, up to and including the one that ended it
//! (`NLMSG_DONE` of a dump, the ack or error of a single request). Sequence numbers and
//! port ids are zeroed in the request, in every answer and in the request header an
//! `NLMSG_ERROR` quotes, so a replay matches a request by its content alone and stamps
//! the answers with the sequence number of the request it serves.
//!
//! The file (`FORMAT`, one per reading of a bundle) is text so a person can read and edit
//! it: a first line `dpu-netlink/1`, then per exchange a `# NAME` comment (the request as
//! the project names it in errors), `request PROTOCOL HEX` (the netlink protocol number:
//! 0 `NETLINK_ROUTE`, 20 `NETLINK_RDMA`; the whole message in lowercase hex) and one
//! `answer HEX` line per answer message, in the order received. Empty lines and other
//! `#` lines are ignored.

use std::fmt::Write as _;

/// The first line of a netlink recording file.
pub const NETLINK_FORMAT: &str = "dpu-netlink/1";

/// The size of a netlink message header (`struct nlmsghdr`).
const HEADER_LEN: usize = 16;
/// `NLMSG_ERROR`: its payload is an errno and the header of the request it answers.
const NLMSG_ERROR: u16 = 2;

/// One recorded request and its answers, normalised (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetlinkExchange {
    /// The socket's netlink protocol (`NETLINK_ROUTE` 0, `NETLINK_RDMA` 20).
    pub protocol: i32,
    /// What the project calls the request (`RTM_GETLINK dump`): for a person reading it.
    pub name: String,
    /// The request message.
    pub request: Vec<u8>,
    /// Every answer message, in order.
    pub answers: Vec<Vec<u8>>,
}

impl NetlinkExchange {
    /// An exchange from the request sent and the datagrams received, each datagram split
    /// into its messages and every message normalised.
    pub(crate) fn from_wire(
        protocol: i32,
        name: &str,
        request: &[u8],
        datagrams: &[Vec<u8>],
    ) -> Self {
        let mut request = request.to_vec();
        normalise(&mut request);
        Self {
            protocol,
            name: name.to_owned(),
            request,
            answers: datagrams.iter().flat_map(|d| split_messages(d)).collect(),
        }
    }
}

/// The name of a netlink protocol number as the bundle's paths and docs use it.
pub fn family_name(protocol: i32) -> &'static str {
    match protocol {
        0 => "route",
        20 => "rdma",
        16 => "generic",
        _ => "other",
    }
}

/// Zeroes the sequence number and port id of one message (and of the request header an
/// `NLMSG_ERROR` quotes). A message shorter than a header is left as it is.
pub fn normalise(message: &mut [u8]) {
    if message.len() < HEADER_LEN {
        return;
    }
    message[8..16].fill(0);
    let kind = u16::from_ne_bytes([message[4], message[5]]);
    // errno (4 bytes), then the quoted request's header.
    let quoted = HEADER_LEN + 4;
    if kind == NLMSG_ERROR && message.len() >= quoted + HEADER_LEN {
        message[quoted + 8..quoted + 16].fill(0);
    }
}

/// Sets the sequence number of one message (a replayed answer, for the request it serves).
pub fn stamp_sequence(message: &mut [u8], seq: u32) {
    if message.len() >= HEADER_LEN {
        message[8..12].copy_from_slice(&seq.to_ne_bytes());
    }
}

/// The messages of one datagram, each normalised; a truncated tail is kept as it is.
fn split_messages(datagram: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = datagram;
    while rest.len() >= HEADER_LEN {
        let len = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        if len < HEADER_LEN || len > rest.len() {
            out.push(rest.to_vec());
            return out;
        }
        let mut message = rest[..len].to_vec();
        normalise(&mut message);
        out.push(message);
        rest = &rest[((len + 3) & !3).min(rest.len())..];
    }
    out
}

/// The file text of `exchanges`.
pub fn write_netlink_file(exchanges: &[NetlinkExchange]) -> String {
    let mut text = format!("{NETLINK_FORMAT}\n");
    for exchange in exchanges {
        // A name never spans lines in the file.
        let name = exchange.name.replace(['\n', '\r'], " ");
        let _ = writeln!(text, "# {name}");
        let _ = writeln!(
            text,
            "request {} {}",
            exchange.protocol,
            hex(&exchange.request)
        );
        for answer in &exchange.answers {
            let _ = writeln!(text, "answer {}", hex(answer));
        }
    }
    text
}

/// The exchanges of a file's text; the error names the line and what is wrong with it.
pub fn parse_netlink_file(text: &str) -> Result<Vec<NetlinkExchange>, String> {
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, first)) if first.trim() == NETLINK_FORMAT => {}
        Some((_, first)) => {
            return Err(format!(
                "line 1: expected the format line {NETLINK_FORMAT:?}, found {first:?}"
            ))
        }
        None => return Err("empty file".to_owned()),
    }
    let mut exchanges: Vec<NetlinkExchange> = Vec::new();
    let mut name = String::new();
    for (index, line) in lines {
        let number = index + 1;
        let line = line.trim();
        if let Some(comment) = line.strip_prefix('#') {
            name = comment.trim().to_owned();
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_ascii_whitespace();
        match (words.next(), words.next(), words.next(), words.next()) {
            (Some("request"), Some(protocol), Some(bytes), None) => {
                let protocol = protocol
                    .parse()
                    .map_err(|_| format!("line {number}: bad protocol number {protocol:?}"))?;
                let request = unhex(bytes).map_err(|e| format!("line {number}: {e}"))?;
                exchanges.push(NetlinkExchange {
                    protocol,
                    name: std::mem::take(&mut name),
                    request,
                    answers: Vec::new(),
                });
            }
            (Some("answer"), Some(bytes), None, None) => {
                let answer = unhex(bytes).map_err(|e| format!("line {number}: {e}"))?;
                exchanges
                    .last_mut()
                    .ok_or_else(|| format!("line {number}: an answer before any request"))?
                    .answers
                    .push(answer);
            }
            _ => {
                return Err(format!(
                    "line {number}: expected `request PROTOCOL HEX` or `answer HEX`"
                ))
            }
        }
    }
    Ok(exchanges)
}

fn hex(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(text, "{byte:02x}");
    }
    text
}

fn unhex(text: &str) -> Result<Vec<u8>, String> {
    if !text.len().is_multiple_of(2) {
        return Err("odd number of hex digits".to_owned());
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| format!("not hex at offset {i}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: u16, seq: u32, pid: u32, payload: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&((HEADER_LEN + payload.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&0u16.to_ne_bytes());
        m.extend_from_slice(&seq.to_ne_bytes());
        m.extend_from_slice(&pid.to_ne_bytes());
        m.extend_from_slice(payload);
        m
    }

    #[test]
    fn exchanges_are_normalised_split_and_round_trip_through_the_file() {
        let request = message(18, 7, 4242, &[1, 2, 3, 4]);
        let answer = message(16, 7, 4242, &[9; 8]);
        let quoted = message(18, 7, 4242, &[]);
        let mut error_payload = (-95i32).to_ne_bytes().to_vec();
        error_payload.extend_from_slice(&quoted);
        let error = message(NLMSG_ERROR, 7, 4242, &error_payload);
        let datagram = [answer.clone(), error.clone()].concat();
        let exchange = NetlinkExchange::from_wire(0, "RTM_GETLINK\ndump", &request, &[datagram]);

        assert_eq!(exchange.request, message(18, 0, 0, &[1, 2, 3, 4]));
        assert_eq!(exchange.answers.len(), 2, "{:?}", exchange.answers);
        assert_eq!(exchange.answers[0], message(16, 0, 0, &[9; 8]));
        let mut quoted_zero = (-95i32).to_ne_bytes().to_vec();
        quoted_zero.extend_from_slice(&message(18, 0, 0, &[]));
        assert_eq!(
            exchange.answers[1],
            message(NLMSG_ERROR, 0, 0, &quoted_zero)
        );

        let text = write_netlink_file(std::slice::from_ref(&exchange));
        assert!(text.starts_with("dpu-netlink/1\n# RTM_GETLINK dump\nrequest 0 "));
        let parsed = parse_netlink_file(&text).expect("parses");
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0].request, exchange.request);
        assert_eq!(parsed[0].answers, exchange.answers);
        assert_eq!(parsed[0].name, "RTM_GETLINK dump");

        let mut stamped = parsed[0].answers[0].clone();
        stamp_sequence(&mut stamped, 99);
        assert_eq!(stamped, message(16, 99, 0, &[9; 8]));
    }

    #[test]
    fn a_bad_file_is_refused_naming_the_line() {
        assert!(parse_netlink_file("")
            .expect_err("refused")
            .contains("empty"));
        assert!(parse_netlink_file("dpu-netlink/9\n")
            .expect_err("refused")
            .contains("line 1"));
        let err = parse_netlink_file("dpu-netlink/1\nanswer 00\n").expect_err("refused");
        assert!(
            err.contains("line 2") && err.contains("before any request"),
            "{err}"
        );
        let err = parse_netlink_file("dpu-netlink/1\nrequest 0 0g\n").expect_err("refused");
        assert!(err.contains("line 2") && err.contains("hex"), "{err}");
        let err = parse_netlink_file("dpu-netlink/1\nrequest x 00\n").expect_err("refused");
        assert!(err.contains("protocol"), "{err}");
    }
}
