//! Word-at-a-time search for the bytes the flow grammar acts on.
//!
//! A flow line is about 500 bytes with a bracket or a comma every few bytes, so a byte loop
//! with a branch per byte is what bounded the parser. Testing eight bytes per step with
//! plain integer arithmetic (SWAR) instead keeps the scan near memory speed in safe Rust
//! with no per-architecture code: the same parser runs on x86-64 hosts and on the
//! BlueField's Arm cores.

const ONES: u64 = 0x0101_0101_0101_0101;
const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of every byte of `x` that is zero, and no other bit. Exact (unlike the
/// shorter `(x - ONES) & !x` form, no borrow crosses bytes), so every set bit is a match.
const fn zero_bytes(x: u64) -> u64 {
    !(((x & LOW7) + LOW7) | x) & HIGH
}

/// Matches of `c` in the word `w`.
const fn eq(w: u64, c: u8) -> u64 {
    zero_bytes(w ^ (ONES * c as u64))
}

/// Matches of `(` or `)` (0x28, 0x29: they differ only in the lowest bit).
const fn round_brackets(w: u64) -> u64 {
    zero_bytes((w | ONES) ^ (ONES * 0x29))
}

/// The eight bytes at `at` as a little-endian word (byte `k` in bits `8k..8k+8`), zero-padded
/// past the end of `b`; zero is never a byte these searches look for.
fn word(b: &[u8], at: usize) -> u64 {
    let rest = b.get(at..).unwrap_or_default();
    if let Some(chunk) = rest.first_chunk::<8>() {
        return u64::from_le_bytes(*chunk);
    }
    let mut buf = [0u8; 8];
    buf[..rest.len()].copy_from_slice(rest);
    u64::from_le_bytes(buf)
}

/// The offset of the first byte at or after `at` that is `(` or `)`, or also `,` when
/// `commas`; `b.len()` when there is none.
pub(crate) fn next_bracket_or_comma(b: &[u8], mut at: usize, commas: bool) -> usize {
    while at < b.len() {
        let w = word(b, at);
        let mut found = round_brackets(w);
        if commas {
            found |= eq(w, b',');
        }
        if found != 0 {
            // A match is a real byte of `b`: the padding is zero.
            return at + (found.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte-at-a-time answer the word search must give.
    fn naive(b: &[u8], at: usize, commas: bool) -> usize {
        (at..b.len())
            .find(|&i| matches!(b[i], b'(' | b')') || (commas && b[i] == b','))
            .unwrap_or(b.len())
    }

    #[test]
    fn word_search_agrees_with_a_byte_loop_everywhere() {
        // Every byte value, at every alignment, next to every other and near the end.
        let mut text: Vec<u8> = (0..=255u8).collect();
        text.extend_from_slice(b"a(b)c,d((,)),x\xff(\x00)\x80,\x7f");
        for from in 0..text.len() {
            for end in from..=text.len() {
                let b = &text[..end];
                for commas in [false, true] {
                    assert_eq!(
                        next_bracket_or_comma(b, from, commas),
                        naive(b, from, commas),
                        "from {from} end {end} commas {commas}"
                    );
                }
            }
        }
        assert_eq!(next_bracket_or_comma(b"abc", 7, true), 3);
    }
}
