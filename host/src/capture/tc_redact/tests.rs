use std::path::Path;

use super::*;

fn attr(kind: u16, value: &[u8]) -> Vec<u8> {
    let mut a = u16::try_from(4 + value.len())
        .expect("short")
        .to_ne_bytes()
        .to_vec();
    a.extend_from_slice(&kind.to_ne_bytes());
    a.extend_from_slice(value);
    while a.len() % 4 != 0 {
        a.push(0);
    }
    a
}

/// An `RTM_NEWTFILTER` message of `kind` whose options are `options`.
fn filter(kind: &str, options: &[Vec<u8>]) -> Vec<u8> {
    let mut name = kind.as_bytes().to_vec();
    name.push(0);
    let body = [attr(KIND, &name), attr(OPTIONS, &options.concat())].concat();
    let len = u32::try_from(HEADER_LEN + TCMSG_LEN + body.len()).expect("short");
    let mut m = len.to_ne_bytes().to_vec();
    m.extend_from_slice(&44u16.to_ne_bytes());
    m.extend_from_slice(&[0; 10]);
    m.extend_from_slice(&[0; TCMSG_LEN]);
    m.extend_from_slice(&body);
    m
}

fn action(kind: &str, options: &[Vec<u8>]) -> Vec<u8> {
    let mut name = kind.as_bytes().to_vec();
    name.push(0);
    [attr(KIND, &name), attr(OPTIONS, &options.concat())].concat()
}

const PEER_MAC: [u8; 6] = [0x0c, 0x42, 0xa1, 0x11, 0x22, 0x33];
const MAC_MASK: [u8; 6] = [0xff; 6];
const PEER_IP: [u8; 4] = [10, 20, 0, 1];
const TUNNEL_IP: [u8; 4] = [192, 0, 2, 7];
const PEER_V6: [u8; 16] = [
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x42,
];
/// A counter word that happens to hold an address's bytes: never touched.
const COUNTER: [u8; 8] = [10, 20, 0, 1, 0x0c, 0x42, 0xa1, 0x11];

fn flower_with_everything() -> Vec<u8> {
    filter(
        "flower",
        &[
            attr(4, &PEER_MAC),
            attr(5, &MAC_MASK),
            attr(10, &PEER_IP),
            attr(11, &[255, 255, 255, 0]),
            attr(16, &PEER_V6),
            attr(
                FLOWER_ACT,
                &[
                    attr(1, &action("tunnel_key", &[attr(4, &TUNNEL_IP)])),
                    attr(
                        2,
                        &action("mirred", &[attr(4, &PEER_IP), attr(9, &COUNTER)]),
                    ),
                ]
                .concat(),
            ),
            attr(9, &COUNTER),
        ],
    )
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn flower_keys_and_tunnel_addresses_get_the_placeholders_their_text_gets() {
    let mut redactor = Redactor::default();
    // The text twins first: a sysfs-style file naming the peer's IP and MAC.
    let text = redactor.file(
        Path::new("proc/net/arp"),
        b"10.20.0.1 0x1 0x2 0c:42:a1:11:22:33 * pf0\n",
    );
    let text = String::from_utf8(text).expect("text");
    let mut message = flower_with_everything();
    let before = message.clone();
    redact_filter(&mut message, &mut redactor, "root.netlink");

    assert_eq!(message.len(), before.len());
    assert!(!contains(&message, &PEER_MAC), "the MAC key is mapped");
    assert!(
        !contains(&message, &TUNNEL_IP),
        "the tunnel address is mapped"
    );
    assert!(!contains(&message, &PEER_V6), "the IPv6 key is mapped");
    // The text's placeholders are the bytes now in the message.
    let fields: Vec<&str> = text.split_whitespace().collect();
    let ip: std::net::Ipv4Addr = fields[0].parse().expect("placeholder IP");
    assert_ne!(ip.octets(), PEER_IP);
    assert!(contains(&message, &attr(10, &ip.octets())), "{text}");
    let mac: Vec<u8> = fields[3]
        .split(':')
        .map(|h| u8::from_str_radix(h, 16).expect("hex"))
        .collect();
    assert!(contains(&message, &attr(4, &mac)), "{text}");
    // Masks, the mirred action's options and the counters are byte for byte.
    assert!(contains(&message, &attr(5, &MAC_MASK)));
    assert!(contains(&message, &attr(11, &[255, 255, 255, 0])));
    assert!(
        contains(&message, &attr(4, &PEER_IP)),
        "mirred's option 4 is no address"
    );
    assert_eq!(
        message
            .windows(COUNTER.len())
            .filter(|w| *w == COUNTER)
            .count(),
        2,
        "both counters kept"
    );
    // Only the five mapped values changed.
    let changed = message.iter().zip(&before).filter(|(a, b)| a != b).count();
    assert!(changed <= 6 + 4 + 16 + 4, "{changed} bytes changed");
}

#[test]
fn a_filter_of_another_kind_and_a_short_message_are_left_as_they_are() {
    let mut redactor = Redactor::default();
    // Control: the same options under a u32 filter mean other things; nothing is mapped.
    let mut u32_filter = filter("u32", &[attr(4, &PEER_MAC), attr(10, &PEER_IP)]);
    let before = u32_filter.clone();
    redact_filter(&mut u32_filter, &mut redactor, "root.netlink");
    assert_eq!(u32_filter, before);
    let mut short = vec![0u8; HEADER_LEN + 3];
    redact_filter(&mut short, &mut redactor, "root.netlink");
    assert_eq!(short, vec![0u8; HEADER_LEN + 3]);
    // A truncated attribute stops the walk without a panic.
    let mut truncated = flower_with_everything();
    let cut = truncated.len() - 6;
    truncated.truncate(cut);
    redact_filter(&mut truncated, &mut redactor, "root.netlink");
}
