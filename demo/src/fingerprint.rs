//! Comparing the merged model's weight fingerprint with the archived one, the rule of
//! examples/demo/README.md: names, shapes and the parameter count exactly; each tensor's
//! `l2`, `mean` and `proj` within `tol · max(|a|, |b|, rms_a, rms_b)` where
//! `rms = l2 / sqrt(numel)` (a mean near zero must not demand an impossible relative match,
//! and merged QLoRA weights are not bit-identical between runs).

use std::collections::BTreeMap;

use serde::Deserialize;

/// `fingerprint.json` (`demo-fingerprint/1`).
#[derive(Debug, Clone, Deserialize)]
pub struct Fingerprint {
    /// Total parameters.
    pub param_count: u64,
    /// Per tensor statistics.
    pub tensors: BTreeMap<String, TensorStats>,
}

/// One tensor's statistics.
#[derive(Debug, Clone, Deserialize)]
pub struct TensorStats {
    /// Shape.
    pub shape: Vec<u64>,
    /// Element count.
    pub numel: u64,
    /// Euclidean norm.
    pub l2: f64,
    /// Mean.
    pub mean: f64,
    /// Cosine-weighted projection (moves with any weight change).
    pub proj: f64,
}

/// Reads a fingerprint from `fingerprint.json`, or from a JSON object with a
/// `fingerprint` key (the merge step's DEMO-RESULT payload).
pub fn parse(text: &str) -> Result<Fingerprint, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let inner = value.get("fingerprint").cloned().unwrap_or(value);
    serde_json::from_value(inner).map_err(|e| format!("not a demo fingerprint: {e}"))
}

/// Every difference beyond the tolerance, as readable lines; empty means a match.
pub fn compare(archived: &Fingerprint, merged: &Fingerprint, tol: f64) -> Vec<String> {
    let mut out = Vec::new();
    if archived.param_count != merged.param_count {
        out.push(format!(
            "parameter count {} differs from the archive's {}",
            merged.param_count, archived.param_count
        ));
    }
    for name in archived
        .tensors
        .keys()
        .filter(|n| !merged.tensors.contains_key(*n))
    {
        out.push(format!("{name}: missing from the merged model"));
    }
    for name in merged
        .tensors
        .keys()
        .filter(|n| !archived.tensors.contains_key(*n))
    {
        out.push(format!("{name}: not in the archive"));
    }
    for (name, a) in &archived.tensors {
        let Some(b) = merged.tensors.get(name) else {
            continue;
        };
        if a.shape != b.shape {
            out.push(format!(
                "{name}: shape {:?} vs archived {:?}",
                b.shape, a.shape
            ));
            continue;
        }
        let rms = |t: &TensorStats| t.l2 / (t.numel.max(1) as f64).sqrt();
        for (stat, x, y) in [
            ("l2", a.l2, b.l2),
            ("mean", a.mean, b.mean),
            ("proj", a.proj, b.proj),
        ] {
            let scale = x.abs().max(y.abs()).max(rms(a)).max(rms(b));
            if (x - y).abs() > tol * scale || !y.is_finite() {
                out.push(format!(
                    "{name}.{stat}: {y} vs archived {x} (tolerance {tol} of {scale:.3e})"
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = r#"{"format":"demo-fingerprint/1","param_count":10,"tensor_count":1,
        "tensors":{"w":{"shape":[2,5],"numel":10,"l2":3.0,"mean":0.0001,"proj":0.5}}}"#;

    #[test]
    fn equal_within_tolerance_and_different_beyond_it() {
        let a = parse(A).expect("a");
        let near = parse(&A.replace("\"l2\":3.0", "\"l2\":3.002")).expect("near");
        assert!(compare(&a, &near, 1e-3).is_empty());
        let far = parse(&A.replace("\"proj\":0.5", "\"proj\":0.9")).expect("far");
        let diff = compare(&a, &far, 1e-3);
        assert_eq!(diff.len(), 1, "{diff:?}");
        assert!(diff[0].starts_with("w.proj"), "{diff:?}");
        // A mean near zero is judged against the tensor's rms, not itself.
        let mean = parse(&A.replace("\"mean\":0.0001", "\"mean\":0.0002")).expect("mean");
        assert!(compare(&a, &mean, 1e-3).is_empty());
    }

    #[test]
    fn structure_must_match_exactly_and_the_merge_line_form_is_read() {
        let a = parse(A).expect("a");
        let other = parse(
            &A.replace("\"w\"", "\"v\"")
                .replace("\"param_count\":10", "\"param_count\":11"),
        )
        .expect("other");
        let diff = compare(&a, &other, 0.5);
        assert_eq!(diff.len(), 3, "{diff:?}");
        let wrapped = format!("{{\"step\":\"merge\",\"fingerprint\":{A}}}");
        assert_eq!(parse(&wrapped).expect("wrapped").param_count, 10);
        assert!(parse("{}").is_err());
    }
}
