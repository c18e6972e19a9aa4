//! Redaction of JSON values (the JSON-RPC transcripts of a capture) with the same mapping
//! as the captured files: a MAC, GUID, IP address, hostname or serial in a SNAP answer
//! becomes the placeholder it became in sysfs, so the bundle stays consistent.
//!
//! In every string: what [`Redactor::file`] finds in text (link-layer addresses, GUIDs,
//! GIDs, IPv4/IPv6 addresses), UUIDs (`8-4-4-4-12` hex, as DMI's `product_uuid`: NVMe
//! namespace UUIDs, bdev UUIDs, the `uuid:` host NQNs carry), and host names this capture
//! has already met (in `/proc/sys/kernel/hostname`) wherever they stand as a word (an NQN
//! like `nqn.2014-08.com.example:myhost`). Whole values of keys that hold serial numbers
//! (`serial_number`, `serial`, `sn`) become `REDACTED-SERIAL-N`. Keys, numbers and
//! booleans stay.

use serde_json::{Map, Value};

use super::{RedactedKind, Redactor};

/// Keys whose string value is a serial number whatever it looks like.
const SERIAL_KEYS: [&str; 3] = ["serial_number", "serial", "sn"];

impl Redactor {
    /// `value` with every identifier in its strings replaced; `file` (bundle-relative) is
    /// where the manifest says the replacement was made.
    pub fn json(&mut self, value: &Value, file: &str) -> Value {
        match value {
            Value::String(text) => Value::String(self.json_text(text, file)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.json(v, file)).collect()),
            Value::Object(members) => {
                let mut out = Map::with_capacity(members.len());
                for (key, member) in members {
                    let redacted = match member {
                        Value::String(text)
                            if SERIAL_KEYS.contains(&key.as_str()) && !text.trim().is_empty() =>
                        {
                            Value::String(self.placeholder(RedactedKind::Serial, text, file))
                        }
                        other => self.json(other, file),
                    };
                    out.insert(key.clone(), redacted);
                }
                Value::Object(out)
            }
            other => other.clone(),
        }
    }

    /// One string: UUIDs first (the text scanner would see their groups as plain words),
    /// then known host names, then what [`Redactor::file`]'s text pass finds.
    fn json_text(&mut self, text: &str, file: &str) -> String {
        let text = self.uuids(text, file);
        let text = self.known_hostnames(&text, file);
        self.text(&text, file)
    }

    fn uuids(&mut self, text: &str, file: &str) -> String {
        let bytes = text.as_bytes();
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        let mut copied = 0;
        while i + UUID_LEN <= bytes.len() {
            let boundary_before = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
            let end = i + UUID_LEN;
            let boundary_after = end == bytes.len() || !bytes[end].is_ascii_alphanumeric();
            if boundary_before && boundary_after && is_uuid(&bytes[i..end]) {
                let found = &text[i..end];
                out.push_str(&text[copied..i]);
                if found.bytes().all(|b| b == b'0' || b == b'-') {
                    out.push_str(found);
                } else {
                    out.push_str(&self.uuid(found, file));
                }
                i = end;
                copied = end;
            } else {
                i += 1;
            }
        }
        out.push_str(&text[copied..]);
        out
    }

    /// Host names already redacted in this capture, replaced where they stand as a word.
    fn known_hostnames(&mut self, text: &str, file: &str) -> String {
        let names: Vec<String> = self
            .seen
            .keys()
            .filter(|(kind, name)| *kind == RedactedKind::Hostname && name != "localhost")
            .map(|(_, name)| name.clone())
            .collect();
        let mut text = text.to_owned();
        for name in names {
            let mut out = String::with_capacity(text.len());
            let lower = text.to_ascii_lowercase();
            let mut copied = 0;
            let mut from = 0;
            while let Some(at) = lower[from..].find(&name).map(|p| p + from) {
                let end = at + name.len();
                let word =
                    |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'-');
                if word(lower.as_bytes().get(end)) || (at > 0 && word(lower.as_bytes().get(at - 1)))
                {
                    from = at + 1;
                    continue;
                }
                out.push_str(&text[copied..at]);
                out.push_str(&self.placeholder(RedactedKind::Hostname, &name, file));
                copied = end;
                from = end;
            }
            out.push_str(&text[copied..]);
            text = out;
        }
        text
    }
}

const UUID_LEN: usize = 36;

fn is_uuid(bytes: &[u8]) -> bool {
    bytes.iter().enumerate().all(|(i, b)| match i {
        8 | 13 | 18 | 23 => *b == b'-',
        _ => b.is_ascii_hexdigit(),
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;

    const FILE: &str = "jsonrpc/spdk.sock.jsonl";

    #[test]
    fn uuids_are_mapped_consistently_and_the_nil_uuid_stays() {
        let mut redactor = Redactor::default();
        let uuid = "677c61d6-e9e5-46f8-94b3-13584b068b83";
        let value = json!({"uuid": uuid, "hostnqn": format!("nqn.2014-08.org.nvmexpress:uuid:{uuid}"),
            "nil": "00000000-0000-0000-0000-000000000000", "longer": format!("{uuid}0")});
        let out = redactor.json(&value, FILE);
        let placeholder = out["uuid"].as_str().expect("uuid");
        assert_ne!(placeholder, uuid);
        assert_eq!(placeholder.len(), uuid.len());
        assert_eq!(
            out["hostnqn"],
            format!("nqn.2014-08.org.nvmexpress:uuid:{placeholder}")
        );
        assert_eq!(out["nil"], value["nil"]);
        // Not a UUID on its own (a longer hex run): left as it is.
        assert_eq!(out["longer"], value["longer"]);
    }

    #[test]
    fn the_captured_host_name_is_replaced_as_a_word_only() {
        let mut redactor = Redactor::default();
        let file = redactor.file(Path::new("proc/sys/kernel/hostname"), b"myhost\n");
        let placeholder = String::from_utf8(file).expect("text").trim().to_owned();
        let value = json!([
            "nqn.2014-08.com.example:myhost",
            "myhost-2",
            "localhost",
            "MYHOST"
        ]);
        let out = redactor.json(&value, FILE);
        assert_eq!(out[0], format!("nqn.2014-08.com.example:{placeholder}"));
        assert_eq!(out[1], "myhost-2");
        assert_eq!(out[2], "localhost");
        assert_eq!(out[3], placeholder.as_str());
    }

    #[test]
    fn serial_keys_addresses_and_nothing_else() {
        let mut redactor = Redactor::default();
        let text = redactor.file(Path::new("sys/x/addr"), b"192.0.2.10\n");
        let address = String::from_utf8(text).expect("text").trim().to_owned();
        let value = json!({"sn": "SN1", "serial_number": "SN1", "model_number": "SN1",
            "traddr": "192.0.2.10", "trsvcid": "4420", "num_blocks": 8});
        let out = redactor.json(&value, FILE);
        assert_eq!(out["sn"], out["serial_number"]);
        assert_ne!(out["sn"], "SN1");
        assert_eq!(out["model_number"], "SN1");
        assert_eq!(out["traddr"], address.as_str());
        assert_eq!(out["trsvcid"], "4420");
        assert_eq!(out["num_blocks"], 8);
        let listed = redactor
            .redactions()
            .iter()
            .find(|r| r.placeholder == address)
            .expect("listed");
        assert!(listed.files.iter().any(|f| f == FILE), "{listed:?}");
    }
}
