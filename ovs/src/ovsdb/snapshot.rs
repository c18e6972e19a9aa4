//! Whole-database reads: [`Ovsdb::snapshot`] (the four tables in one transaction) and
//! [`Ovsdb::open_vswitch`] (the root row). Apart from `handle.rs` because they are built on
//! [`Ovsdb::transact`] and the table model, which themselves name the handle.

use super::database::not_initialized;
use super::error::Error;
use super::handle::Ovsdb;
use super::model::{OpenVswitch, Tables, COLUMNS};
use super::txn::Operation;

impl Ovsdb {
    /// Reads the four tables in one transaction: a consistent snapshot.
    pub async fn snapshot(&self) -> Result<Tables, Error> {
        let ops: Vec<Operation> = COLUMNS
            .iter()
            .map(|(table, columns)| {
                let mut columns = columns.to_vec();
                columns.push("_uuid");
                Operation::select(table, vec![], &columns)
            })
            .collect();
        let results = self.transact().ops(ops).execute().await?;
        let mut tables = Tables::default();
        for ((table, _), result) in COLUMNS.iter().zip(results) {
            tables.insert_selected(table, result.rows());
        }
        Ok(tables)
    }

    /// The root row (`ovs_version`, `other_config`, `next_cfg`/`cur_cfg`, ...).
    pub async fn open_vswitch(&self) -> Result<OpenVswitch, Error> {
        self.snapshot()
            .await?
            .open_vswitch()
            .ok_or_else(not_initialized)
    }
}
