//! OVSDB's JSON encodings of values (RFC 7047 §5.1): atoms, `["uuid", ..]`,
//! `["named-uuid", ..]`, `["set", [..]]` (a 1-element set may be sent bare) and
//! `["map", [[k, v], ..]]`; encoders for what we send, tolerant decoders for what we read.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{json, Map, Value};

/// One row as OVSDB sends it: column name → encoded value.
pub type Row = Map<String, Value>;

/// The identity of an OVSDB row (`_uuid`). Kept as text: OVSDB never needs arithmetic on it,
/// only equality and the wire form.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Uuid(String);

impl Uuid {
    /// Accepts the canonical 8-4-4-4-12 hex form OVSDB uses; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let groups: Vec<&str> = text.split('-').collect();
        let lens = [8, 4, 4, 4, 12];
        let ok = groups.len() == lens.len()
            && groups
                .iter()
                .zip(lens)
                .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()));
        ok.then(|| Self(text.to_ascii_lowercase()))
    }

    /// The canonical text form.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The wire form `["uuid", "<uuid>"]`, for conditions and mutations.
    pub fn to_json(&self) -> Value {
        json!(["uuid", self.0])
    }

    /// Reads `["uuid", "<uuid>"]`.
    pub fn from_json(value: &Value) -> Option<Self> {
        match value.as_array().map(Vec::as_slice) {
            Some([tag, Value::String(text)]) if tag == "uuid" => Self::parse(text),
            _ => None,
        }
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `["named-uuid", name]`: a row inserted earlier in the same transaction.
pub fn named_uuid(name: &str) -> Value {
    json!(["named-uuid", name])
}

/// `["set", [...]]`.
pub fn set(values: impl IntoIterator<Item = Value>) -> Value {
    json!(["set", values.into_iter().collect::<Vec<_>>()])
}

/// `["map", [[k, v], ...]]` of strings, the type of every `other_config`, `options` and
/// `external_ids` column.
pub fn string_map<'a>(pairs: impl IntoIterator<Item = (&'a String, &'a String)>) -> Value {
    let pairs: Vec<Value> = pairs.into_iter().map(|(k, v)| json!([k, v])).collect();
    json!(["map", pairs])
}

/// The elements of a set column: `["set", [..]]`, or a bare atom meaning a 1-element set.
pub(crate) fn set_elements(value: &Value) -> Vec<&Value> {
    match value.as_array().map(Vec::as_slice) {
        Some([tag, Value::Array(items)]) if tag == "set" => items.iter().collect(),
        _ => vec![value],
    }
}

/// The UUIDs of a reference-set column (`Bridge.ports`, `Port.interfaces`).
pub(crate) fn uuid_set(value: Option<&Value>) -> Vec<Uuid> {
    value
        .map(set_elements)
        .unwrap_or_default()
        .into_iter()
        .filter_map(Uuid::from_json)
        .collect()
}

/// A string→string map column; non-string pairs (none exist in the Open_vSwitch schema)
/// are skipped.
pub(crate) fn str_map(value: Option<&Value>) -> BTreeMap<String, String> {
    let pairs = match value.and_then(Value::as_array).map(Vec::as_slice) {
        Some([tag, Value::Array(pairs)]) if tag == "map" => pairs.as_slice(),
        _ => &[],
    };
    pairs
        .iter()
        .filter_map(|pair| match pair.as_array().map(Vec::as_slice) {
            Some([Value::String(k), Value::String(v)]) => Some((k.clone(), v.clone())),
            _ => None,
        })
        .collect()
}

/// A string column, or an optional one (a set of 0 or 1 strings).
pub(crate) fn opt_string(value: Option<&Value>) -> Option<String> {
    value
        .map(set_elements)
        .and_then(|items| items.first().and_then(|v| v.as_str()).map(str::to_owned))
}

/// An integer column, or an optional one (a set of 0 or 1 integers).
pub(crate) fn opt_int(value: Option<&Value>) -> Option<i64> {
    value
        .map(set_elements)
        .and_then(|items| items.first().and_then(|v| v.as_i64()))
}

/// A set of strings (`datapath_types`, `iface_types`).
pub(crate) fn string_set(value: Option<&Value>) -> Vec<String> {
    value
        .map(set_elements)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const U: &str = "5c19c029-05d9-4884-a54f-c85832b679e6";

    #[test]
    fn uuid_round_trip_and_rejects() {
        let uuid = Uuid::parse(U).expect("valid");
        assert_eq!(Uuid::from_json(&uuid.to_json()), Some(uuid));
        for bad in [
            "",
            "5c19c029",
            "5c19c029-05d9-4884-a54f-c85832b679eg",
            "x-y-z-w-v",
        ] {
            assert_eq!(Uuid::parse(bad), None, "{bad}");
        }
        assert_eq!(Uuid::from_json(&json!(["named-uuid", U])), None);
    }

    #[test]
    fn bare_atom_is_a_one_element_set() {
        // As ovsdb-server sends `Bridge.ports` with a single port.
        assert_eq!(uuid_set(Some(&json!(["uuid", U]))).len(), 1);
        assert_eq!(
            uuid_set(Some(&json!(["set", [["uuid", U], ["uuid", U]]]))).len(),
            2
        );
        assert!(uuid_set(Some(&json!(["set", []]))).is_empty());
        assert_eq!(opt_string(Some(&json!(["set", []]))), None);
        assert_eq!(opt_string(Some(&json!("up"))), Some("up".to_owned()));
        assert_eq!(opt_int(Some(&json!(["set", [3]]))), Some(3));
        assert_eq!(opt_int(Some(&json!(7))), Some(7));
    }

    #[test]
    fn maps_decode_and_encode() {
        let v = json!(["map", [["hw-offload", "true"], ["max-idle", "5000"]]]);
        let m = str_map(Some(&v));
        assert_eq!(m.get("hw-offload").map(String::as_str), Some("true"));
        assert_eq!(string_map(&m), v);
        assert!(str_map(Some(&json!(["map", []]))).is_empty());
    }
}
