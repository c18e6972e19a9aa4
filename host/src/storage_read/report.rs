//! fio-shaped results: JSON with fio's key names and order, and a table for people.

use serde::ser::{Serialize, SerializeMap as _, Serializer};

use super::histogram::Histogram;
use super::size::format_size;

/// fio's default completion-latency percentiles.
pub const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// fio's top level: `{"jobs": [...]}`.
#[derive(Debug, serde::Serialize)]
pub struct FioOutput {
    jobs: Vec<FioJob>,
}

#[derive(Debug, serde::Serialize)]
struct FioJob {
    jobname: &'static str,
    #[serde(rename = "job options")]
    job_options: JobOptions,
    read: ReadSection,
}

/// The equivalent fio options, as strings like fio prints them.
#[derive(Debug, serde::Serialize)]
struct JobOptions {
    name: &'static str,
    filename: String,
    rw: &'static str,
    direct: &'static str,
    ioengine: &'static str,
    bs: String,
    iodepth: String,
}

/// fio's per-direction section; `bw` is KiB/s, `runtime` is ms.
#[derive(Debug, serde::Serialize)]
struct ReadSection {
    io_bytes: u64,
    io_kbytes: u64,
    bw_bytes: u64,
    bw: u64,
    iops: f64,
    runtime: u64,
    total_ios: u64,
    short_ios: u64,
    drop_ios: u64,
    clat_ns: Clat,
}

#[derive(Debug, serde::Serialize)]
struct Clat {
    min: u64,
    max: u64,
    mean: f64,
    stddev: f64,
    #[serde(rename = "N")]
    n: u64,
    percentile: Percentiles,
}

/// `{"1.000000": ns, ...}` in ascending order, as fio writes it.
#[derive(Debug)]
struct Percentiles(Vec<(String, u64)>);

impl Serialize for Percentiles {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// What a finished run measured.
#[derive(Debug)]
pub struct Results {
    /// The file or device read.
    pub path: String,
    /// Block size in bytes.
    pub bs: u64,
    /// Requests kept in flight.
    pub iodepth: u32,
    /// Bytes read.
    pub io_bytes: u64,
    /// Reads completed.
    pub total_ios: u64,
    /// Wall time from the first submission to the last completion.
    pub runtime: std::time::Duration,
    /// Completion latency of every read.
    pub clat: Histogram,
}

impl Results {
    fn bw_bytes(&self) -> u64 {
        let secs = self.runtime.as_secs_f64();
        if secs > 0.0 {
            (self.io_bytes as f64 / secs) as u64
        } else {
            0
        }
    }

    fn iops(&self) -> f64 {
        let secs = self.runtime.as_secs_f64();
        if secs > 0.0 {
            self.total_ios as f64 / secs
        } else {
            0.0
        }
    }

    /// fio's `--output-format=json` shape for one read job, keys in fio's order.
    pub fn fio_json(&self) -> FioOutput {
        let bw_bytes = self.bw_bytes();
        FioOutput {
            jobs: vec![FioJob {
                jobname: "read",
                job_options: JobOptions {
                    name: "read",
                    filename: self.path.clone(),
                    rw: "read",
                    direct: "1",
                    ioengine: "io_uring",
                    bs: format_size(self.bs),
                    iodepth: self.iodepth.to_string(),
                },
                read: ReadSection {
                    io_bytes: self.io_bytes,
                    io_kbytes: self.io_bytes / 1024,
                    bw_bytes,
                    bw: bw_bytes / 1024,
                    iops: self.iops(),
                    runtime: u64::try_from(self.runtime.as_millis()).unwrap_or(u64::MAX),
                    total_ios: self.total_ios,
                    short_ios: 0,
                    drop_ios: 0,
                    clat_ns: Clat {
                        min: self.clat.min(),
                        max: self.clat.max(),
                        mean: self.clat.mean(),
                        stddev: self.clat.stddev(),
                        n: self.clat.count(),
                        percentile: Percentiles(
                            PERCENTILES
                                .iter()
                                .map(|&p| (format!("{p:.6}"), self.clat.percentile(p)))
                                .collect(),
                        ),
                    },
                },
            }],
        }
    }

    /// The results as (what, value) rows for a table for people.
    pub fn rows(&self) -> Vec<[String; 2]> {
        let micros = |nanos: f64| format!("{:.1} µs", nanos / 1000.0);
        let mut table: Vec<[String; 2]> = Vec::new();
        table.push(["file".to_owned(), self.path.clone()]);
        table.push([
            "bs / iodepth".to_owned(),
            format!("{} / {}", format_size(self.bs), self.iodepth),
        ]);
        table.push([
            "read".to_owned(),
            format!("{} bytes in {} I/Os", self.io_bytes, self.total_ios),
        ]);
        table.push([
            "runtime".to_owned(),
            format!("{:.3} s", self.runtime.as_secs_f64()),
        ]);
        table.push([
            "bandwidth".to_owned(),
            format!(
                "{:.1} MiB/s",
                self.bw_bytes() as f64 / f64::from(1u32 << 20)
            ),
        ]);
        table.push(["IOPS".to_owned(), format!("{:.0}", self.iops())]);
        table.push([
            "clat min / mean / max".to_owned(),
            format!(
                "{} / {} / {}",
                micros(self.clat.min() as f64),
                micros(self.clat.mean()),
                micros(self.clat.max() as f64)
            ),
        ]);
        table.push(["clat stddev".to_owned(), micros(self.clat.stddev())]);
        for p in PERCENTILES {
            table.push([format!("clat p{p}"), micros(self.clat.percentile(p) as f64)]);
        }
        table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_json_uses_fio_key_names() {
        let mut clat = Histogram::default();
        clat.record(1000);
        let results = Results {
            path: "/dev/null".to_owned(),
            bs: 4096,
            iodepth: 1,
            io_bytes: 4096,
            total_ios: 1,
            runtime: std::time::Duration::from_secs(1),
            clat,
        };
        let text = serde_json::to_string(&results.fio_json()).expect("serializes");
        let json: serde_json::Value = serde_json::from_str(&text).expect("parses");
        let read = &json["jobs"][0]["read"];
        assert_eq!(read["bw_bytes"], 4096);
        assert_eq!(read["bw"], 4);
        assert_eq!(read["runtime"], 1000);
        assert_eq!(read["clat_ns"]["N"], 1);
        assert_eq!(read["clat_ns"]["percentile"]["99.990000"], 1000);
        assert_eq!(read["clat_ns"]["percentile"]["1.000000"], 1000);
        let order: Vec<usize> = [
            "\"1.000000\"",
            "\"5.000000\"",
            "\"10.000000\"",
            "\"99.990000\"",
        ]
        .iter()
        .map(|key| text.find(key).expect("percentile key"))
        .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "fio's order: {text}");
    }
}
