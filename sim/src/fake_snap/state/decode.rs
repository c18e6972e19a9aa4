//! SPDK's strict parameter decoding, as `spdk_json_decode_object` does it (SPDK v24.01
//! `lib/json/json_util.c`): params must be an object; every key must have a decoder (an
//! unknown key fails), no required key may be missing, and each value must decode with its
//! field's decoder (`spdk_json_decode_string` takes only a string without NUL,
//! `spdk_json_decode_bool` only `true`/`false`, the number decoders only integers in range,
//! `spdk_json_decode_int32` also negatives). A handler whose fields are all optional treats
//! absent params as "no params" (`if (params && spdk_json_decode_object(...))`); one with a
//! required field decodes absent params and fails.
//!
//! The bdev and bdev_nvme handlers answer a decode failure with -32603
//! (`SPDK_JSONRPC_ERROR_INTERNAL_ERROR`) "spdk_json_decode_object failed" ([`DECODE_FAILED`]);
//! `rpc_get_methods` answers -32602 "Invalid parameters". SNAP is built on SPDK's RPC layer
//! and the fake answers its methods' decode failures like the bdev handlers do (UNVERIFIED:
//! SNAP's handlers are not public).

use serde_json::{Map, Value};

/// A JSON-RPC error the fake answers with: code and message.
pub(crate) type RpcError = (i64, String);

/// The code SPDK's bdev and bdev_nvme handlers answer a decode failure with
/// (`SPDK_JSONRPC_ERROR_INTERNAL_ERROR`).
pub const DECODE_FAILED_CODE: i64 = -32603;

/// The message that goes with [`DECODE_FAILED_CODE`].
pub const DECODE_FAILED_MESSAGE: &str = "spdk_json_decode_object failed";

/// How a field's value is decoded.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ty {
    /// `spdk_json_decode_string`: a JSON string with no embedded NUL.
    Str,
    /// `spdk_json_decode_bool`.
    Bool,
    /// `spdk_json_decode_uint16`.
    U16,
    /// `spdk_json_decode_uint32`.
    U32,
    /// `spdk_json_decode_int32`.
    I32,
    /// `spdk_json_decode_uint64`.
    U64,
    /// An array of strings (`spdk_json_decode_array` of `spdk_json_decode_string`).
    StrArray,
    /// `spdk_json_decode_uuid`: a string `spdk_uuid_parse` accepts.
    Uuid,
    /// A string decoder that accepts only these values (like `bdev_nvme_decode_multipath`).
    OneOf(&'static [&'static str]),
}

/// One entry of a handler's decoder table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field {
    name: &'static str,
    ty: Ty,
    required: bool,
}

/// A required field.
pub(crate) const fn req(name: &'static str, ty: Ty) -> Field {
    Field {
        name,
        ty,
        required: true,
    }
}

/// An optional field.
pub(crate) const fn opt(name: &'static str, ty: Ty) -> Field {
    Field {
        name,
        ty,
        required: false,
    }
}

/// True when `s` is what `spdk_uuid_parse` accepts: 8-4-4-4-12 hex digits.
pub(crate) fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn fits(v: &Value, ty: Ty) -> bool {
    match ty {
        Ty::Str => v.as_str().is_some_and(|s| !s.contains('\0')),
        Ty::Bool => v.is_boolean(),
        Ty::U16 => v.as_u64().is_some_and(|n| n <= u64::from(u16::MAX)),
        Ty::U32 => v.as_u64().is_some_and(|n| n <= u64::from(u32::MAX)),
        Ty::I32 => v.as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
        Ty::U64 => v.as_u64().is_some(),
        Ty::StrArray => v
            .as_array()
            .is_some_and(|a| a.iter().all(|x| fits(x, Ty::Str))),
        Ty::Uuid => v.as_str().is_some_and(is_uuid),
        Ty::OneOf(allowed) => v.as_str().is_some_and(|s| allowed.contains(&s)),
    }
}

/// Decoded params: every key is known and well typed, every required key is there.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Args<'a>(Option<&'a Map<String, Value>>);

impl<'a> Args<'a> {
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.0.and_then(|m| m.get(key))
    }

    /// Whether the key was sent.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// A string field.
    pub(crate) fn str(&self, key: &str) -> Option<&'a str> {
        self.get(key).and_then(Value::as_str)
    }

    /// A string field, owned; empty when absent (for required fields, which decoding
    /// guarantees are there).
    pub(crate) fn s(&self, key: &str) -> String {
        self.str(key).unwrap_or_default().to_owned()
    }

    /// An optional string field, owned.
    pub(crate) fn string(&self, key: &str) -> Option<String> {
        self.str(key).map(str::to_owned)
    }

    /// A bool field.
    pub(crate) fn bool(&self, key: &str) -> Option<bool> {
        self.get(key).and_then(Value::as_bool)
    }

    /// An unsigned field (any of the unsigned types).
    pub(crate) fn u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(Value::as_u64)
    }

    /// A `U32` or `U16` field.
    pub(crate) fn u32(&self, key: &str) -> Option<u32> {
        self.u64(key).and_then(|n| u32::try_from(n).ok())
    }

    /// An `I32` field.
    pub(crate) fn i32(&self, key: &str) -> Option<i32> {
        self.get(key)
            .and_then(Value::as_i64)
            .and_then(|n| i32::try_from(n).ok())
    }

    /// A `StrArray` field.
    pub(crate) fn strings(&self, key: &str) -> Option<Vec<String>> {
        self.get(key).and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
    }
}

/// Decodes `params` against `fields` like `spdk_json_decode_object`; `None` when it fails.
/// Absent params decode as empty when no field is required.
pub(crate) fn decode<'a>(params: Option<&'a Value>, fields: &[Field]) -> Option<Args<'a>> {
    let Some(params) = params else {
        return fields.iter().all(|f| !f.required).then_some(Args(None));
    };
    let map = params.as_object()?;
    for (key, value) in map {
        let field = fields.iter().find(|f| f.name == key)?;
        if !fits(value, field.ty) {
            return None;
        }
    }
    fields
        .iter()
        .all(|f| !f.required || map.contains_key(f.name))
        .then_some(Args(Some(map)))
}

/// [`decode`], refusing a failure as SPDK's bdev handlers do: -32603
/// "spdk_json_decode_object failed".
pub(crate) fn spdk_decode<'a>(
    params: Option<&'a Value>,
    fields: &[Field],
) -> Result<Args<'a>, RpcError> {
    decode(params, fields).ok_or_else(decode_failed)
}

/// The decode-failure error.
pub(crate) fn decode_failed() -> RpcError {
    (DECODE_FAILED_CODE, DECODE_FAILED_MESSAGE.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FIELDS: &[Field] = &[
        req("name", Ty::Str),
        opt("flag", Ty::Bool),
        opt("n", Ty::U32),
        opt("t", Ty::I32),
        opt("mode", Ty::OneOf(&["a", "b"])),
        opt("id", Ty::Uuid),
    ];

    #[test]
    fn decodes_like_spdk_json_decode_object() {
        let ok = json!({"name": "x", "flag": true, "n": 7, "t": -1, "mode": "b",
                        "id": "11111111-2222-3333-4444-555555555555"});
        let args = decode(Some(&ok), FIELDS).expect("decodes");
        assert_eq!(args.str("name"), Some("x"));
        assert_eq!(args.i32("t"), Some(-1));
        assert_eq!(args.u32("n"), Some(7));
        for bad in [
            json!({"name": "x", "extra": 1}),
            json!({"name": 5}),
            json!({"name": "a\u{0}b"}),
            json!({"name": "x", "flag": "true"}),
            json!({"name": "x", "n": -1}),
            json!({"name": "x", "n": 4_294_967_296_u64}),
            json!({"name": "x", "n": 1.5}),
            json!({"name": "x", "t": 2_147_483_648_u64}),
            json!({"name": "x", "mode": "c"}),
            json!({"name": "x", "id": "not-a-uuid"}),
            json!({"flag": true}),
            json!(["x"]),
        ] {
            assert!(decode(Some(&bad), FIELDS).is_none(), "{bad} decoded");
        }
        assert!(
            decode(None, FIELDS).is_none(),
            "a required field and no params"
        );
        assert!(decode(None, &[opt("a", Ty::Str)]).is_some());
        assert_eq!(
            spdk_decode(Some(&json!({})), FIELDS).expect_err("refused"),
            (-32603, "spdk_json_decode_object failed".to_owned())
        );
    }
}
