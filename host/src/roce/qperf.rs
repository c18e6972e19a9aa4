//! qperf client output: a `test_name:` line, then indented `name  =  value unit` lines
//! (reference §3.2). Values are converted to base units (bytes/s, seconds, 1/s) because
//! qperf scales units per value (`-uu` turns that off) and may print bits with `-ub`.

use super::{finite, ParseError};

/// What a qperf value measures, after conversion to base units.
#[derive(Debug, Clone, PartialEq)]
pub enum QperfUnit {
    /// Bandwidth in bytes per second (`KB/sec`, `Gb/sec`, ...; decimal steps).
    BytesPerSec,
    /// Time in seconds (`ns`, `us`, `ms`, `sec`).
    Seconds,
    /// A count per second (`msg_rate`: `K/sec`, `M/sec`).
    PerSec,
    /// A size in bytes (`msg_size`: `bytes`, `KB`, `KiB`, ...).
    Bytes,
    /// Anything else (`% cpus`, `ms/GB`, ...), unit text kept and the value unscaled.
    Other(String),
}

/// One `name = value unit` line.
#[derive(Debug, Clone, PartialEq)]
pub struct QperfMetric {
    /// e.g. `bw`, `latency`, `msg_rate`, `send_cost`, `loc_cpus_used`.
    pub name: String,
    /// The value in base units (see `unit`).
    pub value: f64,
    /// What `value` measures.
    pub unit: QperfUnit,
}

/// One test's block (`tcp_bw`, `rc_lat`, ...).
#[derive(Debug, Clone, PartialEq)]
pub struct QperfTest {
    /// The test name without the colon.
    pub name: String,
    /// Its values, in output order.
    pub metrics: Vec<QperfMetric>,
}

impl QperfTest {
    /// The value of metric `name`, if present with unit `unit`.
    pub fn get(&self, name: &str, unit: &QperfUnit) -> Option<f64> {
        self.metrics
            .iter()
            .find(|m| m.name == name && &m.unit == unit)
            .map(|m| m.value)
    }

    /// `bw` in bytes per second (bandwidth tests).
    pub fn bw_bytes_per_sec(&self) -> Option<f64> {
        self.get("bw", &QperfUnit::BytesPerSec)
    }

    /// `latency` in seconds (latency tests).
    pub fn latency_secs(&self) -> Option<f64> {
        self.get("latency", &QperfUnit::Seconds)
    }
}

/// Parses qperf's stdout into its test blocks; any other non-blank line (qperf's own
/// errors such as `qperf: failed to connect`) is an error naming that line.
pub fn parse(text: &str) -> Result<Vec<QperfTest>, ParseError> {
    let mut tests: Vec<QperfTest> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        let indented = line.starts_with(char::is_whitespace);
        if !indented {
            let name = trimmed.strip_suffix(':').filter(|n| is_test_name(n));
            let Some(name) = name else {
                return Err(ParseError::at(
                    i,
                    line,
                    "expected a test name line like `tcp_bw:`",
                ));
            };
            tests.push(QperfTest {
                name: name.to_owned(),
                metrics: Vec::new(),
            });
            continue;
        }
        let Some(test) = tests.last_mut() else {
            return Err(ParseError::at(i, line, "a value before any test name"));
        };
        test.metrics.push(metric(i, line)?);
    }
    if tests.is_empty() {
        return Err(ParseError::whole("no qperf test results"));
    }
    Ok(tests)
}

/// A test name: qperf's are lowercase words joined by `_` (`tcp_bw`, `rc_bi_bw`).
fn is_test_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Parses `name  =  1,234.5 unit` (commified numbers, unit optional).
fn metric(index: usize, line: &str) -> Result<QperfMetric, ParseError> {
    let Some((name, rest)) = line.split_once('=') else {
        return Err(ParseError::at(index, line, "expected `name = value unit`"));
    };
    let name = name.trim();
    if !is_test_name(name) {
        return Err(ParseError::at(
            index,
            line,
            "expected a metric name before `=`",
        ));
    }
    let rest = rest.trim();
    let (number, unit_text) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let Some(raw) = finite(&number.replace(',', "")) else {
        return Err(ParseError::at(index, line, "not a number"));
    };
    let unit_text = unit_text.trim();
    let (scale, unit) = unit(unit_text);
    Ok(QperfMetric {
        name: name.to_owned(),
        value: raw * scale,
        unit,
    })
}

/// The multiplier to base units and the kind for a qperf unit string.
fn unit(text: &str) -> (f64, QperfUnit) {
    let decimal = |prefix: &str| match prefix {
        "" => Some(1.0),
        "K" | "k" => Some(1e3),
        "M" => Some(1e6),
        "G" => Some(1e9),
        "T" => Some(1e12),
        _ => None,
    };
    let time = match text {
        "ns" => Some(1e-9),
        "us" => Some(1e-6),
        "ms" => Some(1e-3),
        "sec" | "s" => Some(1.0),
        _ => None,
    };
    if let Some(scale) = time {
        return (scale, QperfUnit::Seconds);
    }
    if let Some(prefix) = text.strip_suffix("B/sec") {
        if let Some(scale) = decimal(prefix) {
            return (scale, QperfUnit::BytesPerSec);
        }
    }
    if let Some(prefix) = text.strip_suffix("b/sec") {
        if let Some(scale) = decimal(prefix) {
            return (scale / 8.0, QperfUnit::BytesPerSec);
        }
    }
    match text {
        "bytes/sec" => return (1.0, QperfUnit::BytesPerSec),
        "bits/sec" => return (1.0 / 8.0, QperfUnit::BytesPerSec),
        "bytes" => return (1.0, QperfUnit::Bytes),
        "KiB" => return (1024.0, QperfUnit::Bytes),
        "MiB" => return (1_048_576.0, QperfUnit::Bytes),
        "GiB" => return (1_073_741_824.0, QperfUnit::Bytes),
        _ => {}
    }
    if let Some(prefix) = text.strip_suffix("/sec") {
        if let Some(scale) = decimal(prefix) {
            return (scale, QperfUnit::PerSec);
        }
    }
    if let Some(scale) = text.strip_suffix('B').and_then(decimal) {
        return (scale, QperfUnit::Bytes);
    }
    (1.0, QperfUnit::Other(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// §3.2 `place_show` sample (values illustrative).
    pub(super) const TCP_BW_LAT: &str =
        "tcp_bw:\n    bw  =  1.17 GB/sec\ntcp_lat:\n    latency  =  18.3 us\n";

    /// Verbose RC run (`-v`), bits (`-ub`) and commified values; the verbose names are
    /// from §3.2, their unit strings (`K/sec`, `ms/GB`, `% cpus`) are UNVERIFIED.
    pub(super) const RC_VERBOSE: &str = "\
rc_bw:
    bw              =  97.2 Gb/sec
    msg_rate        =  185 K/sec
    send_cost       =  63.1 ms/GB
    recv_cost       =  60.8 ms/GB
    loc_cpus_used   =  61.5 % cpus
    rem_cpus_used   =  59 % cpus
rc_lat:
    latency  =  1,850 ns
    msg_size  =  64 KiB
";

    #[test]
    fn basic_blocks_convert_to_base_units() {
        let tests = parse(TCP_BW_LAT).expect("parses");
        assert_eq!(tests.len(), 2);
        assert_eq!(tests[0].name, "tcp_bw");
        assert_eq!(tests[0].bw_bytes_per_sec(), Some(1.17e9));
        assert!((tests[1].latency_secs().unwrap_or(0.0) - 18.3e-6).abs() < 1e-12);
    }

    #[test]
    fn verbose_bits_and_commas() {
        let tests = parse(RC_VERBOSE).expect("parses");
        let bw = tests[0].bw_bytes_per_sec().unwrap_or(0.0);
        assert!((bw - 97.2e9 / 8.0).abs() < 1.0, "{bw}");
        assert_eq!(tests[0].get("msg_rate", &QperfUnit::PerSec), Some(185e3));
        let cpus = QperfUnit::Other("% cpus".to_owned());
        assert_eq!(tests[0].get("rem_cpus_used", &cpus), Some(59.0));
        let lat = tests[1].latency_secs().unwrap_or(0.0);
        assert!((lat - 1.85e-6).abs() < 1e-15, "{lat}");
        assert_eq!(tests[1].get("msg_size", &QperfUnit::Bytes), Some(65536.0));
    }

    #[test]
    fn malformed_input_is_an_error_naming_the_line() {
        assert!(parse("").is_err());
        let err = parse("qperf: failed to connect: Connection refused\n").expect_err("error");
        assert_eq!(err.line, 1);
        assert_eq!(parse("    bw = 1 GB/sec\n").map_err(|e| e.line), Err(1));
        assert_eq!(
            parse("tcp_bw:\n    bw = fast\n").map_err(|e| e.line),
            Err(2)
        );
        assert_eq!(parse("tcp_bw:\n    bw 1\n").map_err(|e| e.line), Err(2));
        assert!(parse("tcp_bw:\n    bw = inf GB/sec\n").is_err());
        assert!(parse("tcp_bw:\n     = 1\n").is_err());
        let _ = parse("t:\n \u{e9}=\u{e9} \u{e9}\n");
    }
}
