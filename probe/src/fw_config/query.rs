//! The text `mstconfig -e -d BDF query` (Debian's mstflint) and `mlxconfig -e -d BDF query`
//! (NVIDIA MFT) print, parsed into typed parameters. Pure: text in, table out. The format
//! (mstflint `mlxconfig/mlxcfg_ui.cpp`, `printOpening`, `printConfHeader`,
//! `printSingleParam`; samples and sources in `docs/reference/firmware-config.md`):
//!
//! ```text
//! Device #1:
//! ----------
//!
//! Device type:        BlueField3
//! ...
//! Configurations:                              Default         Current         Next Boot
//!          INTERNAL_CPU_MODEL                  EMBEDDED_CPU(1) EMBEDDED_CPU(1) EMBEDDED_CPU(1)
//! *        INTERNAL_CPU_OFFLOAD_ENGINE         ENABLED(0)      ENABLED(0)      DISABLED(1)
//! The '*' shows parameters with next value different from default/current value.
//! ```
//!
//! A row is an optional `*` (next differs from default or current), an optional `RO`
//! (read-only, mstflint 4.25 and later), the name, then one value per column. Lines
//! before the table (banners, the device block) and after it (footnotes) are tolerated;
//! `-E-`/`-W-`/`-I-` lines are kept as the tool's messages. A row that does not fit the
//! header is an error naming its line.

use thiserror::Error;

/// Why a query output could not be read: the 1-based line (0: the output as a whole).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("line {line}: {reason}: {text:?}")]
pub struct FwQueryError {
    /// 1-based line number; 0 when the problem is the output as a whole.
    pub line: usize,
    /// The offending line, trimmed and shortened.
    pub text: String,
    /// What was expected there.
    pub reason: String,
}

impl FwQueryError {
    fn at(index: usize, text: &str, reason: impl Into<String>) -> Self {
        Self {
            line: index + 1,
            text: text.trim().chars().take(120).collect(),
            reason: reason.into(),
        }
    }
}

/// One value as the tool printed it, with its enum name and number when it has them:
/// `EMBEDDED_CPU(1)` is name `EMBEDDED_CPU`, number 1; `48` is number 48; `0x00000000`
/// is number 0; `ETH` is a name without a number; `N/A` and `Array[0..7]` neither.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FwValue {
    /// Exactly as printed (`EMBEDDED_CPU(1)`), for messages.
    pub raw: String,
    /// The enum or boolean name (`EMBEDDED_CPU`, `True`), when the value has one.
    pub name: Option<String>,
    /// The number, when the value has one that fits 64 bits.
    pub number: Option<u64>,
}

impl FwValue {
    /// Whether the tool could read it (`N/A` means it could not).
    pub fn is_known(&self) -> bool {
        self.raw != "N/A"
    }

    /// Whether two readings are the same setting: by number when both have one, else by
    /// the printed text.
    pub fn same_setting(&self, other: &FwValue) -> bool {
        match (self.number, other.number) {
            (Some(a), Some(b)) => a == b,
            _ => self.raw == other.raw,
        }
    }
}

impl std::fmt::Display for FwValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.raw)
    }
}

/// One firmware parameter: its values in each column the tool printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FwParam {
    /// Its mlxconfig name (`LINK_TYPE_P1`).
    pub name: String,
    /// The factory default (`Default` column), when shown.
    pub default: Option<FwValue>,
    /// What the running firmware uses (`Current` column), when shown.
    pub current: Option<FwValue>,
    /// What the firmware will use after its next reset (`Next Boot` column).
    pub next_boot: FwValue,
    /// The tool's `*` mark: next boot differs from default or current.
    pub marked: bool,
    /// The tool's `RO` mark: read-only.
    pub read_only: bool,
}

impl FwParam {
    /// Whether the next boot changes what the firmware runs with now (both known).
    pub fn pending(&self) -> bool {
        match &self.current {
            Some(current) if current.is_known() && self.next_boot.is_known() => {
                !current.same_setting(&self.next_boot)
            }
            _ => false,
        }
    }
}

/// The columns a query table can have, in the order the tool prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FwColumn {
    /// Factory default (`-e`, when the firmware reports it).
    Default,
    /// Running configuration (`-e`, when the firmware reports it).
    Current,
    /// Configuration after the next firmware reset (always).
    NextBoot,
}

/// One device's query, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FwQuery {
    /// `Device type:` (`BlueField3`, `ConnectX7`).
    pub device_type: Option<String>,
    /// `Name:` (the board part number).
    pub part_name: Option<String>,
    /// `Description:`.
    pub description: Option<String>,
    /// `Device:` as the tool names it (`0000:03:00.0`, `/dev/mst/...`).
    pub device: Option<String>,
    /// The header's columns.
    pub columns: Vec<FwColumn>,
    /// Every row, in the tool's order.
    pub params: Vec<FwParam>,
    /// The tool's `-E-` lines (a partial table: some TLVs could not be read).
    pub errors: Vec<String>,
    /// Its `-W-`/`-I-` lines and notes such as "Device Firmware does not support reading
    /// default and current configurations".
    pub notes: Vec<String>,
}

impl FwQuery {
    /// A parameter by name.
    pub fn param(&self, name: &str) -> Option<&FwParam> {
        self.params.iter().find(|p| p.name == name)
    }

    /// Whether the table has a `Current` column (without it nothing can be pending).
    pub fn shows_current(&self) -> bool {
        self.columns.contains(&FwColumn::Current)
    }
}

#[derive(PartialEq)]
enum Stage {
    Preamble,
    Table,
    After,
}

/// Parses one device's query output.
pub fn parse_fw_query(text: &str) -> Result<FwQuery, FwQueryError> {
    let mut query = FwQuery::default();
    let mut stage = Stage::Preamble;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            if stage == Stage::Table && !query.params.is_empty() {
                stage = Stage::After;
            }
            continue;
        }
        if trimmed.starts_with("-E-") {
            query.errors.push(trimmed.to_owned());
            if stage == Stage::Table {
                stage = Stage::After;
            }
            continue;
        }
        if ["-W-", "-I-", "-D-"].iter().any(|p| trimmed.starts_with(p))
            || trimmed.starts_with("Device Firmware does not support")
        {
            query.notes.push(trimmed.to_owned());
            continue;
        }
        match stage {
            Stage::Preamble => {
                if let Some(rest) = trimmed.strip_prefix("Configurations:") {
                    query.columns = parse_columns(index, line, rest)?;
                    stage = Stage::Table;
                } else {
                    read_device_line(&mut query, trimmed);
                }
            }
            Stage::Table => {
                if trimmed.starts_with("The '") {
                    stage = Stage::After;
                    continue;
                }
                let row = parse_row(index, line, &query.columns)?;
                query.params.push(row);
            }
            Stage::After => {
                if trimmed.starts_with("Device #") {
                    return Err(FwQueryError::at(
                        index,
                        line,
                        "a second device: query one device at a time (-d BDF)",
                    ));
                }
            }
        }
    }
    if query.columns.is_empty() {
        let why = query
            .errors
            .first()
            .map_or(String::new(), |e| format!(" ({e})"));
        return Err(FwQueryError {
            line: 0,
            text: String::new(),
            reason: format!("no \"Configurations:\" table in the output{why}"),
        });
    }
    Ok(query)
}

/// `Device type:`, `Name:`, `Description:`, `Device:`; anything else before the table
/// (a banner, `Device #1:`, the dashes) is ignored.
fn read_device_line(query: &mut FwQuery, trimmed: &str) {
    let Some((key, value)) = trimmed.split_once(':') else {
        return;
    };
    let value = value.trim();
    let value = (!value.is_empty() && value != "N/A").then(|| value.to_owned());
    match key.trim() {
        "Device type" => query.device_type = value,
        "Name" => query.part_name = value,
        "Description" => query.description = value,
        "Device" => query.device = value,
        _ => {}
    }
}

fn parse_columns(index: usize, line: &str, rest: &str) -> Result<Vec<FwColumn>, FwQueryError> {
    let words: Vec<&str> = rest.split_whitespace().collect();
    let mut columns = Vec::new();
    let mut i = 0;
    while let Some(word) = words.get(i) {
        match *word {
            "Default" => columns.push(FwColumn::Default),
            "Current" => columns.push(FwColumn::Current),
            "Next" if words.get(i + 1) == Some(&"Boot") => {
                columns.push(FwColumn::NextBoot);
                i += 1;
            }
            other => {
                return Err(FwQueryError::at(
                    index,
                    line,
                    format!("unknown column {other:?} (expected Default, Current, Next Boot)"),
                ))
            }
        }
        i += 1;
    }
    if columns.last() != Some(&FwColumn::NextBoot) {
        return Err(FwQueryError::at(
            index,
            line,
            "the header does not end with a \"Next Boot\" column",
        ));
    }
    Ok(columns)
}

fn parse_row(index: usize, line: &str, columns: &[FwColumn]) -> Result<FwParam, FwQueryError> {
    let mut words = line.split_whitespace().peekable();
    let mut marked = false;
    let mut read_only = false;
    while let Some(mark) = words.next_if(|w| matches!(*w, "*" | "RO" | "*RO")) {
        marked |= mark.starts_with('*');
        read_only |= mark.ends_with("RO");
    }
    let name = words
        .next()
        .ok_or_else(|| FwQueryError::at(index, line, "a row without a parameter name"))?;
    if !is_param_name(name) {
        return Err(FwQueryError::at(
            index,
            line,
            format!("{name:?} is not a parameter name (capitals, digits, '_', '[..]')"),
        ));
    }
    let values: Vec<&str> = words.collect();
    if values.len() != columns.len() {
        return Err(FwQueryError::at(
            index,
            line,
            format!(
                "{name}: {} values for {} columns",
                values.len(),
                columns.len()
            ),
        ));
    }
    let mut param = FwParam {
        name: name.to_owned(),
        default: None,
        current: None,
        next_boot: FwValue {
            raw: String::new(),
            name: None,
            number: None,
        },
        marked,
        read_only,
    };
    for (column, raw) in columns.iter().zip(values) {
        let value = parse_value(raw)
            .map_err(|reason| FwQueryError::at(index, line, format!("{name}: {reason}")))?;
        match column {
            FwColumn::Default => param.default = Some(value),
            FwColumn::Current => param.current = Some(value),
            FwColumn::NextBoot => param.next_boot = value,
        }
    }
    Ok(param)
}

/// `LINK_TYPE_P1`, `MODULE_SPLIT_M0[1..4]`, `ESWITCH_HAIRPIN_TOT_BUFFER_SIZE`.
fn is_param_name(word: &str) -> bool {
    word.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_[].".contains(c))
}

/// One printed value (see [`FwValue`]).
pub fn parse_value(raw: &str) -> Result<FwValue, String> {
    let plain = |name: Option<&str>, number| FwValue {
        raw: raw.to_owned(),
        name: name.map(str::to_owned),
        number,
    };
    if raw == "N/A" || (raw.starts_with("Array[") && raw.ends_with(']')) {
        return Ok(plain(None, None));
    }
    if let Some(open) = raw.find('(') {
        let name = &raw[..open];
        let number = raw[open + 1..]
            .strip_suffix(')')
            .and_then(|n| n.parse::<u64>().ok());
        return match number {
            Some(number) if is_value_name(name) => Ok(plain(Some(name), Some(number))),
            _ => Err(format!("{raw:?} is not NAME(NUMBER)")),
        };
    }
    if raw.bytes().all(|b| b.is_ascii_digit()) {
        return raw
            .parse::<u64>()
            .map(|n| plain(None, Some(n)))
            .map_err(|_| format!("{raw:?} does not fit 64 bits"));
    }
    if let Some(hex) = raw.strip_prefix("0x").or_else(|| raw.strip_prefix("0X")) {
        if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            // Long byte strings (keys, GUID lists) are kept as text only.
            return Ok(plain(None, u64::from_str_radix(hex, 16).ok()));
        }
        return Err(format!("{raw:?} is not a hexadecimal number"));
    }
    if is_value_name(raw) {
        return Ok(plain(Some(raw), None));
    }
    Err(format!("{raw:?} is not a value (NAME(N), N, 0xHEX, N/A)"))
}

/// An enum name as mlxconfig prints it: `EMBEDDED_CPU`, `True`, `_256KB`, `PCI_GEN_1`.
fn is_value_name(word: &str) -> bool {
    !word.is_empty()
        && !word.starts_with(|c: char| c.is_ascii_digit())
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
}
