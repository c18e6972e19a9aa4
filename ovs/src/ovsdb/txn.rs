//! `transact` (RFC 7047 §4.1.3, §5.2): operation builders, and a transaction whose every
//! per-operation result and trailing commit result is checked, so a failed operation is an
//! error carrying OVSDB's own `error`/`details` instead of an `{"error": ..}` buried in a
//! result array.

use std::time::Duration;

use serde_json::{json, Value};

use super::datum::{Row, Uuid};
use super::error::Error;
use super::handle::Ovsdb;

/// One operation of a transaction, already in wire form.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation(Value);

impl Operation {
    /// `insert` a row (`row` is a JSON object of column → encoded value).
    pub fn insert(table: &str, row: Value) -> Self {
        Self(json!({"op": "insert", "table": table, "row": row}))
    }

    /// Names the row an `insert` creates, so later operations of the same transaction can
    /// refer to it as `["named-uuid", name]`.
    pub fn uuid_name(mut self, name: &str) -> Self {
        self.0["uuid-name"] = json!(name);
        self
    }

    /// `select` the given columns of the rows matching every condition.
    pub fn select(table: &str, conditions: Vec<Condition>, columns: &[&str]) -> Self {
        Self(json!({"op": "select", "table": table, "where": conditions, "columns": columns}))
    }

    /// `update` the given columns of the matching rows.
    pub fn update(table: &str, conditions: Vec<Condition>, row: Value) -> Self {
        Self(json!({"op": "update", "table": table, "where": conditions, "row": row}))
    }

    /// `mutate` columns of the matching rows in place (set/map insert and delete, integer
    /// arithmetic), the way to change one key of a map without rewriting it.
    pub fn mutate(table: &str, conditions: Vec<Condition>, mutations: Vec<Mutation>) -> Self {
        Self(json!({"op": "mutate", "table": table, "where": conditions,
            "mutations": mutations}))
    }

    /// `delete` the matching rows.
    pub fn delete(table: &str, conditions: Vec<Condition>) -> Self {
        Self(json!({"op": "delete", "table": table, "where": conditions}))
    }

    /// `wait` until the matching rows, projected on `columns`, compare `until` (`==` or `!=`)
    /// to `rows`; fails with `timed out` after `timeout` (zero: a pure precondition check).
    pub fn wait(
        table: &str,
        conditions: Vec<Condition>,
        columns: &[&str],
        until: &str,
        rows: Vec<Value>,
        timeout: Duration,
    ) -> Self {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        Self(
            json!({"op": "wait", "table": table, "where": conditions, "columns": columns,
            "until": until, "rows": rows, "timeout": ms}),
        )
    }

    /// A `comment` that ovsdb-server writes to its log with the transaction.
    pub fn comment(text: &str) -> Self {
        Self(json!({"op": "comment", "comment": text}))
    }

    /// The operation as sent.
    pub fn as_json(&self) -> &Value {
        &self.0
    }

    fn kind(&self) -> String {
        self.0["op"].as_str().unwrap_or("?").to_owned()
    }
}

/// One `where` clause: `[column, function, value]`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(transparent)]
pub struct Condition(Value);

impl Condition {
    /// Any condition; `function` is one of `==`, `!=`, `<`, `<=`, `>`, `>=`, `includes`,
    /// `excludes`.
    pub fn new(column: &str, function: &str, value: Value) -> Self {
        Self(json!([column, function, value]))
    }

    /// `column == value`.
    pub fn eq(column: &str, value: impl Into<Value>) -> Self {
        Self::new(column, "==", value.into())
    }

    /// The row with this `_uuid`.
    pub fn uuid(uuid: &Uuid) -> Self {
        Self::new("_uuid", "==", uuid.to_json())
    }
}

/// One mutation: `[column, mutator, value]`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(transparent)]
pub struct Mutation(Value);

impl Mutation {
    /// Any mutation; `mutator` is one of `+=`, `-=`, `*=`, `/=`, `%=`, `insert`, `delete`.
    pub fn new(column: &str, mutator: &str, value: Value) -> Self {
        Self(json!([column, mutator, value]))
    }

    /// Adds elements to a set or pairs to a map (an existing map key keeps its old value:
    /// delete it first to overwrite).
    pub fn insert(column: &str, value: Value) -> Self {
        Self::new(column, "insert", value)
    }

    /// Removes set elements, or map keys when given a set of keys.
    pub fn delete(column: &str, value: Value) -> Self {
        Self::new(column, "delete", value)
    }

    /// Integer `+=`.
    pub fn add(column: &str, n: i64) -> Self {
        Self::new(column, "+=", json!(n))
    }
}

/// The successful result of one operation.
#[derive(Debug, Clone, PartialEq)]
pub struct OpResult(Value);

impl OpResult {
    /// The new row's UUID (for `insert`).
    pub fn uuid(&self) -> Option<Uuid> {
        self.0.get("uuid").and_then(Uuid::from_json)
    }

    /// How many rows matched (for `update`, `mutate`, `delete`).
    pub fn count(&self) -> Option<u64> {
        self.0.get("count").and_then(Value::as_u64)
    }

    /// The selected rows (for `select`); empty for other operations.
    pub fn rows(&self) -> Vec<Row> {
        self.0
            .get("rows")
            .and_then(Value::as_array)
            .map(|rows| rows.iter().filter_map(|r| r.as_object().cloned()).collect())
            .unwrap_or_default()
    }

    /// The raw result object.
    pub fn as_json(&self) -> &Value {
        &self.0
    }
}

impl Ovsdb {
    /// Starts a raw transaction on the Open_vSwitch database.
    pub fn transact(&self) -> Transaction {
        Transaction::new(self.clone())
    }
}

/// A transaction being built on a database; nothing is sent until
/// [`execute`](Transaction::execute).
#[derive(Debug)]
#[must_use = "a transaction does nothing until it is executed"]
pub struct Transaction {
    ovsdb: Ovsdb,
    ops: Vec<Operation>,
    timeout: Option<Duration>,
}

impl Transaction {
    pub(crate) fn new(ovsdb: Ovsdb) -> Self {
        Self {
            ovsdb,
            ops: Vec::new(),
            timeout: None,
        }
    }

    /// Appends an operation; operations run in order, atomically.
    pub fn op(mut self, op: Operation) -> Self {
        self.ops.push(op);
        self
    }

    /// Appends several operations.
    pub fn ops(mut self, ops: impl IntoIterator<Item = Operation>) -> Self {
        self.ops.extend(ops);
        self
    }

    /// The call deadline (defaults to the client's); a transaction with a `wait` operation
    /// needs one longer than the wait.
    pub fn timeout(mut self, deadline: Duration) -> Self {
        self.timeout = Some(deadline);
        self
    }

    /// Sends the transaction; returns one result per operation, or the first failure.
    pub async fn execute(self) -> Result<Vec<OpResult>, Error> {
        let mut params = vec![json!(self.ovsdb.database())];
        params.extend(self.ops.iter().map(|op| op.0.clone()));
        let mut request = self.ovsdb.client().request("transact").params(params);
        if let Some(deadline) = self.timeout {
            request = request.timeout(deadline);
        }
        let reply = request
            .execute_value()
            .await
            .map_err(|e| Error::rpc("transact", e))?;
        check_results(&self.ops, reply)
    }
}

/// Checks a `transact` result array: any element with `error` fails the transaction (one
/// past the last operation: the commit failed); otherwise one result per operation.
pub(crate) fn check_results(ops: &[Operation], reply: Value) -> Result<Vec<OpResult>, Error> {
    let Value::Array(results) = reply else {
        return Err(Error::malformed(
            "transact",
            format!("expected an array, got {reply}"),
        ));
    };
    for (index, result) in results.iter().enumerate() {
        let Some(error) = result.get("error") else {
            continue;
        };
        let error = error
            .as_str()
            .map_or_else(|| error.to_string(), str::to_owned);
        let details = result
            .get("details")
            .and_then(Value::as_str)
            .map(str::to_owned);
        return Err(match ops.get(index) {
            Some(op) => Error::Operation {
                index,
                op: op.kind(),
                error,
                details,
            },
            None => Error::Commit { error, details },
        });
    }
    if results.len() < ops.len() {
        return Err(Error::malformed(
            "transact",
            format!("{} results for {} operations", results.len(), ops.len()),
        ));
    }
    Ok(results.into_iter().take(ops.len()).map(OpResult).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops() -> Vec<Operation> {
        vec![
            Operation::insert("Bridge", json!({"name": "br0"})).uuid_name("br"),
            Operation::mutate(
                "Open_vSwitch",
                vec![],
                vec![Mutation::insert("bridges", json!(["named-uuid", "br"]))],
            ),
        ]
    }

    #[test]
    fn operations_have_the_rfc_shape() {
        let ops = ops();
        assert_eq!(
            ops[0].as_json(),
            &json!({"op":"insert","table":"Bridge","row":{"name":"br0"},"uuid-name":"br"})
        );
        assert_eq!(
            ops[1].as_json(),
            &json!({"op":"mutate","table":"Open_vSwitch","where":[],
                "mutations":[["bridges","insert",["named-uuid","br"]]]})
        );
        let wait = Operation::wait(
            "Open_vSwitch",
            vec![Condition::new("cur_cfg", ">=", json!(3))],
            &["_uuid"],
            "!=",
            vec![],
            Duration::from_secs(2),
        );
        assert_eq!(
            wait.as_json(),
            &json!({"op":"wait","table":"Open_vSwitch","where":[["cur_cfg",">=",3]],
                "columns":["_uuid"],"until":"!=","rows":[],"timeout":2000})
        );
    }

    #[test]
    fn results_are_returned_per_operation() {
        let uuid = "5c19c029-05d9-4884-a54f-c85832b679e6";
        let results = check_results(&ops(), json!([{"uuid": ["uuid", uuid]}, {"count": 1}]))
            .expect("success");
        assert_eq!(
            results[0].uuid().map(|u| u.to_string()).as_deref(),
            Some(uuid)
        );
        assert_eq!(results[1].count(), Some(1));
    }

    #[test]
    fn failed_operation_names_its_index_and_keeps_ovsdb_text() {
        // As ovsdb-server answers: the failing op carries the error, later ones are null.
        let reply = json!([{"uuid": ["uuid", "5c19c029-05d9-4884-a54f-c85832b679e6"]},
            {"error": "constraint violation", "details": "no row"}]);
        let err = check_results(&ops(), reply).expect_err("op 1 failed");
        assert!(
            matches!(&err, Error::Operation { index: 1, op, error, details: Some(d) }
                if op == "mutate" && error == "constraint violation" && d == "no row"),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "OVSDB transaction failed at operation 1 (mutate): constraint violation: no row"
        );
    }

    #[test]
    fn trailing_error_is_a_commit_failure() {
        let reply = json!([{"uuid": ["uuid", "5c19c029-05d9-4884-a54f-c85832b679e6"]},
            {"count": 1},
            {"error": "referential integrity violation", "details": "cannot delete"}]);
        let err = check_results(&ops(), reply).expect_err("commit failed");
        assert!(
            matches!(&err, Error::Commit { error, .. } if error == "referential integrity violation"),
            "{err:?}"
        );
    }

    #[test]
    fn short_or_non_array_reply_is_malformed() {
        assert!(matches!(
            check_results(&ops(), json!([{}])),
            Err(Error::Malformed { .. })
        ));
        assert!(matches!(
            check_results(&ops(), json!({"x": 1})),
            Err(Error::Malformed { .. })
        ));
    }
}
