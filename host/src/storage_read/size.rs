//! Sizes on the command line: `4096`, `4k`, `128K`, `1m`, `1g`, `2t` (binary: 4k = 4096).

/// Parses a byte count with an optional binary suffix (k, m, g, t; an optional trailing
/// `b` or `ib` is accepted, so `4KiB` and `4kb` mean 4096 too).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let lower = trimmed.to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (digits, suffix) = lower.split_at(digits_end);
    if digits.is_empty() {
        return Err(format!(
            "{trimmed:?} is not a size (expected a number with an optional k/m/g/t suffix)"
        ));
    }
    let shift = match suffix.trim_end_matches("ib").trim_end_matches('b') {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => {
            return Err(format!(
                "{trimmed:?} has an unknown suffix {suffix:?} (use k, m, g or t)"
            ))
        }
    };
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("{trimmed:?} is too large"))?;
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{trimmed:?} is too large"))
}

/// Parses a positive size (`--size`).
pub fn parse_positive_size(text: &str) -> Result<u64, String> {
    match parse_size(text)? {
        0 => Err("must be greater than zero".to_owned()),
        n => Ok(n),
    }
}

/// Parses a block size: a power of two, at least 512 bytes and at most 64 MiB.
pub fn parse_block_size(text: &str) -> Result<u64, String> {
    let bs = parse_size(text)?;
    if bs < 512 || !bs.is_power_of_two() {
        return Err(format!(
            "{bs} bytes is not a power of two of at least 512 (e.g. 4k, 128k, 1m)"
        ));
    }
    if bs > 64 << 20 {
        return Err(format!("{bs} bytes is larger than the 64m maximum"));
    }
    Ok(bs)
}

/// Formats a byte count with the largest binary suffix that divides it (4096 -> "4k").
pub fn format_size(bytes: u64) -> String {
    for (shift, suffix) in [(40, "t"), (30, "g"), (20, "m"), (10, "k")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{suffix}", bytes >> shift);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_numbers_and_binary_suffixes() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("4kb"), Ok(4096));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("2t"), Ok(2 << 40));
        assert_eq!(parse_size(" 128k "), Ok(128 << 10));
    }

    #[test]
    fn rejects_garbage_and_overflow() {
        for bad in [
            "",
            "k",
            "-1",
            "1.5k",
            "4x",
            "4kk",
            "1 k",
            "99999999999999999999",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?} should be rejected");
        }
        assert!(parse_size("17179869184g").is_err(), "overflows u64");
        assert!(parse_positive_size("0").is_err());
    }

    #[test]
    fn block_size_is_a_power_of_two_of_at_least_512() {
        assert_eq!(parse_block_size("512"), Ok(512));
        assert_eq!(parse_block_size("4k"), Ok(4096));
        assert_eq!(parse_block_size("1m"), Ok(1 << 20));
        for bad in ["3k", "256", "0", "1000", "128m"] {
            assert!(parse_block_size(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn formats_with_the_largest_exact_suffix() {
        assert_eq!(format_size(4096), "4k");
        assert_eq!(format_size(1 << 20), "1m");
        assert_eq!(format_size(3 << 30), "3g");
        assert_eq!(format_size(1536), "1536");
        assert_eq!(format_size(100), "100");
    }
}
