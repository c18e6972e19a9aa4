//! Turning answer datagrams into messages: matching the sequence number, spotting the end
//! of a dump, an interrupted dump, and kernel errors with their extended-ack text. Pure,
//! so it is tested on bytes built in memory.

use netlink_packet_core::{
    DecodeError, NetlinkBuffer, NetlinkMessage, NetlinkPayload, NlasIterator, NLMSG_DONE,
    NLMSG_ERROR, NLMSG_NOOP, NLMSG_OVERRUN, NLM_F_ACK_TLVS, NLM_F_CAPPED, NLM_F_DUMP_INTR,
};
use netlink_packet_route::RouteNetlinkMessage;

use super::NetlinkError;

/// `struct nlmsghdr` size.
pub(crate) const HEADER_LEN: usize = 16;
/// `NLMSGERR_ATTR_MSG`: the human-readable extended-ack text.
const NLMSGERR_ATTR_MSG: u16 = 1;

/// Collects the answers to one dump request.
///
/// A message that cannot be decoded does not stop the reading: the kernel keeps the dump
/// running until its `NLMSG_DONE` has been read, and refuses the socket's next dump with
/// `EBUSY` until then. So the first decode error is kept and returned at the end.
///
/// What a data message becomes is the decoder's choice: [`route_message`] (the whole
/// message through netlink-packet-route) by default, or a hand decoder that reads only the
/// attributes a hot path needs (`RTM_GETSTATS` counters). A decoder answering `Ok(None)`
/// skips the message.
#[derive(Debug)]
pub(crate) struct DumpCollector<'a, T = RouteNetlinkMessage> {
    request: &'a str,
    seq: u32,
    decode: Decoder<T>,
    /// The decoded answers, in kernel order.
    pub(crate) messages: Vec<T>,
    /// Whether any answer carried `NLM_F_DUMP_INTR` (the dump is inconsistent).
    pub(crate) interrupted: bool,
    failed: Option<NetlinkError>,
}

/// Turns one whole data message (`nlmsghdr` included) into an answer.
pub(crate) type Decoder<T> = fn(&[u8]) -> Result<Option<T>, DecodeError>;

/// The default decoder: the message as netlink-packet-route parses it.
pub(crate) fn route_message(message: &[u8]) -> Result<Option<RouteNetlinkMessage>, DecodeError> {
    let parsed = NetlinkMessage::<RouteNetlinkMessage>::deserialize(message)?;
    Ok(match parsed.payload {
        NetlinkPayload::InnerMessage(inner) => Some(inner),
        _ => None,
    })
}

impl<'a> DumpCollector<'a> {
    #[cfg(test)]
    pub(crate) fn new(request: &'a str, seq: u32) -> Self {
        Self::with_decoder(request, seq, route_message)
    }
}

impl<'a, T> DumpCollector<'a, T> {
    pub(crate) fn with_decoder(request: &'a str, seq: u32, decode: Decoder<T>) -> Self {
        Self {
            request,
            seq,
            decode,
            messages: Vec::new(),
            interrupted: false,
            failed: None,
        }
    }

    /// Consumes one datagram; `Ok(true)` once the dump is complete, `Err` when it ended
    /// with a kernel error or any of its messages could not be decoded.
    pub(crate) fn feed(&mut self, datagram: &[u8]) -> Result<bool, NetlinkError> {
        let mut rest = datagram;
        while rest.len() >= HEADER_LEN {
            let buffer = match NetlinkBuffer::new_checked(rest) {
                Ok(buffer) => buffer,
                Err(e) => {
                    // The framing is lost: nothing more of this datagram can be read.
                    self.keep(e);
                    break;
                }
            };
            let len = buffer.length() as usize;
            let (message_type, flags) = (buffer.message_type(), buffer.flags());
            let seq = buffer.sequence_number();
            let message = &rest[..len];
            rest = &rest[((len + 3) & !3).min(rest.len())..];
            if seq != self.seq {
                tracing::debug!(seq, expected = self.seq, "stale netlink answer ignored");
                continue;
            }
            if flags & NLM_F_DUMP_INTR != 0 {
                self.interrupted = true;
            }
            let payload = &message[HEADER_LEN..];
            match message_type {
                // A dump that failed half-way reports its errno in NLMSG_DONE.
                NLMSG_DONE => match read_code(payload) {
                    Some(code) if code < 0 => {
                        let tlvs = payload.get(4..).unwrap_or_default();
                        return Err(self.kernel(code, flags, tlvs));
                    }
                    _ => return self.finish(),
                },
                NLMSG_ERROR => match read_code(payload) {
                    Some(0) => return self.finish(),
                    Some(code) => {
                        let tlvs = error_tlvs(payload, flags);
                        return Err(self.kernel(code, flags, tlvs));
                    }
                    None => {
                        self.keep("NLMSG_ERROR without an error code".into());
                        return self.finish();
                    }
                },
                NLMSG_NOOP | NLMSG_OVERRUN => {}
                _ => match (self.decode)(message) {
                    Ok(Some(answer)) => self.messages.push(answer),
                    Ok(None) => {}
                    Err(e) => self.keep(e),
                },
            }
        }
        Ok(false)
    }

    /// The end of the dump: complete, or the first decode error seen on the way.
    fn finish(&mut self) -> Result<bool, NetlinkError> {
        match self.failed.take() {
            Some(e) => Err(e),
            None => Ok(true),
        }
    }

    fn keep(&mut self, source: DecodeError) {
        if self.failed.is_none() {
            self.failed = Some(self.decode_error(source));
        }
    }

    fn decode_error(&self, source: DecodeError) -> NetlinkError {
        NetlinkError::Decode {
            request: self.request.to_owned(),
            source,
        }
    }

    fn kernel(&self, code: i32, flags: u16, tlvs: &[u8]) -> NetlinkError {
        let extack = if flags & NLM_F_ACK_TLVS != 0 {
            extack_message(tlvs)
        } else {
            None
        };
        NetlinkError::Kernel {
            request: self.request.to_owned(),
            extack,
            source: std::io::Error::from_raw_os_error(code.saturating_neg()),
        }
    }
}

fn read_code(payload: &[u8]) -> Option<i32> {
    let bytes: [u8; 4] = payload.get(..4)?.try_into().ok()?;
    Some(i32::from_ne_bytes(bytes))
}

/// The TLVs of an `NLMSG_ERROR`: after the code and the echoed request, which is only its
/// header when `NLM_F_CAPPED` is set.
fn error_tlvs(payload: &[u8], flags: u16) -> &[u8] {
    let echoed = if flags & NLM_F_CAPPED != 0 {
        HEADER_LEN
    } else {
        payload
            .get(4..8)
            .and_then(|b| b.try_into().ok())
            .map_or(HEADER_LEN, |b: [u8; 4]| u32::from_ne_bytes(b) as usize)
    };
    payload.get(4 + ((echoed + 3) & !3)..).unwrap_or_default()
}

fn extack_message(tlvs: &[u8]) -> Option<String> {
    NlasIterator::new(tlvs)
        .filter_map(Result::ok)
        .find(|nla| nla.kind() == NLMSGERR_ATTR_MSG)
        .map(|nla| {
            String::from_utf8_lossy(nla.value())
                .trim_end_matches('\0')
                .to_owned()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::{Emitable, NetlinkHeader, NLM_F_MULTIPART};
    use netlink_packet_route::link::{LinkAttribute, LinkMessage};

    fn raw(message_type: u16, flags: u16, seq: u32, payload: &[u8]) -> Vec<u8> {
        let len = HEADER_LEN + payload.len();
        let mut out = Vec::new();
        out.extend_from_slice(&(len as u32).to_ne_bytes());
        out.extend_from_slice(&message_type.to_ne_bytes());
        out.extend_from_slice(&flags.to_ne_bytes());
        out.extend_from_slice(&seq.to_ne_bytes());
        out.extend_from_slice(&0u32.to_ne_bytes());
        out.extend_from_slice(payload);
        out.resize((len + 3) & !3, 0);
        out
    }

    fn link(seq: u32, flags: u16, name: &str) -> Vec<u8> {
        let mut m = LinkMessage::default();
        m.attributes = vec![LinkAttribute::IfName(name.into())];
        let mut header = NetlinkHeader::default();
        header.sequence_number = seq;
        header.flags = flags;
        let mut packet = NetlinkMessage::new(
            header,
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(m)),
        );
        packet.finalize();
        let mut bytes = vec![0; packet.buffer_len()];
        packet.emit(&mut bytes);
        bytes
    }

    fn extack(text: &str) -> Vec<u8> {
        let mut value = text.as_bytes().to_vec();
        value.push(0);
        let mut tlv = Vec::new();
        tlv.extend_from_slice(&((4 + value.len()) as u16).to_ne_bytes());
        tlv.extend_from_slice(&NLMSGERR_ATTR_MSG.to_ne_bytes());
        tlv.extend_from_slice(&value);
        tlv.resize((tlv.len() + 3) & !3, 0);
        tlv
    }

    #[test]
    fn collects_a_multipart_dump_until_done_and_skips_stale_answers() {
        let mut first = link(7, NLM_F_MULTIPART, "lo");
        first.extend(link(6, NLM_F_MULTIPART, "stale"));
        first.extend(link(7, NLM_F_MULTIPART, "eth0"));
        let done = raw(NLMSG_DONE, NLM_F_MULTIPART, 7, &0i32.to_ne_bytes());
        let mut c = DumpCollector::new("RTM_GETLINK dump", 7);
        assert!(!c.feed(&first).expect("first datagram"));
        assert!(c.feed(&done).expect("done"));
        assert_eq!(c.messages.len(), 2);
        assert!(!c.interrupted);
    }

    #[test]
    fn an_interrupted_dump_is_flagged() {
        let mut c = DumpCollector::new("RTM_GETLINK dump", 1);
        let mut datagram = link(1, NLM_F_MULTIPART | NLM_F_DUMP_INTR, "lo");
        datagram.extend(raw(NLMSG_DONE, NLM_F_MULTIPART, 1, &0i32.to_ne_bytes()));
        assert!(c.feed(&datagram).expect("datagram"));
        assert!(c.interrupted);
    }

    #[test]
    fn nlmsg_error_names_request_errno_and_extack() {
        let request_echo = raw(94, 0x301, 3, &[0; 12]);
        let mut payload = (-22i32).to_ne_bytes().to_vec();
        payload.extend_from_slice(&request_echo[..HEADER_LEN]);
        payload.extend(extack("Filter mask must be set for stats get/dump"));
        let error = raw(NLMSG_ERROR, NLM_F_CAPPED | NLM_F_ACK_TLVS, 3, &payload);
        let err = DumpCollector::new("RTM_GETSTATS dump", 3)
            .feed(&error)
            .expect_err("EINVAL");
        assert_eq!(err.raw_os_error(), Some(22));
        let text = err.to_string();
        assert!(text.contains("RTM_GETSTATS dump"), "{text}");
        assert!(
            text.ends_with(": Filter mask must be set for stats get/dump"),
            "{text}"
        );
    }

    #[test]
    fn uncapped_error_echo_is_skipped_before_the_tlvs() {
        let request_echo = raw(94, 0x301, 3, &[0; 12]);
        let mut payload = (-95i32).to_ne_bytes().to_vec();
        payload.extend_from_slice(&request_echo);
        payload.extend(extack("not supported"));
        let error = raw(NLMSG_ERROR, NLM_F_ACK_TLVS, 3, &payload);
        let err = DumpCollector::new("x", 3)
            .feed(&error)
            .expect_err("EOPNOTSUPP");
        assert_eq!(err.raw_os_error(), Some(95));
        assert!(err.to_string().ends_with(": not supported"), "{err}");
    }

    #[test]
    fn a_dump_failing_half_way_reports_the_errno_from_done() {
        let mut payload = (-19i32).to_ne_bytes().to_vec();
        payload.extend(extack("no device"));
        let done = raw(NLMSG_DONE, NLM_F_MULTIPART | NLM_F_ACK_TLVS, 9, &payload);
        let err = DumpCollector::new("RTM_GETTFILTER dump", 9)
            .feed(&done)
            .expect_err("ENODEV");
        assert_eq!(err.raw_os_error(), Some(19));
        assert!(err.to_string().contains("no device"), "{err}");
        let plain = raw(NLMSG_ERROR, 0, 9, &(-1i32).to_ne_bytes());
        let err = DumpCollector::new("q", 9).feed(&plain).expect_err("EPERM");
        assert_eq!(err.to_string(), "kernel refused q");
    }

    #[test]
    fn garbage_is_a_decode_error_naming_the_request_after_the_dump_ends() {
        let mut bogus = raw(16, 0, 1, &[1, 2, 3, 4]);
        bogus[0..4].copy_from_slice(&400u32.to_ne_bytes());
        let mut c = DumpCollector::new("RTM_GETLINK dump", 1);
        assert!(!c.feed(&bogus).expect("kept until NLMSG_DONE"));
        assert!(!c
            .feed(&link(1, NLM_F_MULTIPART, "eth0"))
            .expect("still reading"));
        let done = raw(NLMSG_DONE, NLM_F_MULTIPART, 1, &0i32.to_ne_bytes());
        let err = c.feed(&done).expect_err("length beyond datagram");
        assert!(matches!(err, NetlinkError::Decode { .. }), "{err}");
        assert!(err.to_string().contains("RTM_GETLINK dump"));
    }
}
