//! The fast scanners against the byte-at-a-time ones, on every short string over the bytes
//! that matter: the plain-line scanners must give exactly the results of
//! [`super::super::scan_any`] (positions, items and errors), and the one-pass sub-field split
//! exactly those of splitting at top-level commas, then at the first `=` of an item whose
//! name has no `(`.

use super::super::scan::{scan_list, scan_value, split_sub_fields, Item, ListEnd, ScanError};
use super::super::{scan_any, scan_plain};

/// Every string of `alphabet` bytes up to `max_len` long.
fn all_strings(alphabet: &[u8], max_len: usize) -> Vec<Vec<u8>> {
    let mut out = vec![Vec::new()];
    let mut last = vec![Vec::new()];
    for _ in 0..max_len {
        let next: Vec<Vec<u8>> = last
            .iter()
            .flat_map(|s| {
                alphabet.iter().map(move |&c| {
                    let mut t = s.clone();
                    t.push(c);
                    t
                })
            })
            .collect();
        out.extend(next.iter().cloned());
        last = next;
    }
    out
}

type ListResult = (Vec<Item>, Result<ListEnd, ScanError>);

fn list_of(
    scan: impl Fn(&[u8], &mut dyn FnMut(Item)) -> Result<ListEnd, ScanError>,
    b: &[u8],
) -> ListResult {
    let mut items = Vec::new();
    let end = scan(b, &mut |it| items.push(it));
    (items, end)
}

#[test]
fn plain_scanners_agree_with_the_byte_loop() {
    // `a` continues an item after `, ` (as text after an undecodable action does).
    let continues = |b: &[u8], at: usize| b.get(at) == Some(&b'a');
    for s in all_strings(b"a(), ", 8) {
        for from in 0..=s.len().min(2) {
            let what = "an item";
            let plain = list_of(
                |b, emit| scan_plain::list(b, from, what, continues, emit),
                &s,
            );
            let any = list_of(|b, emit| scan_any::list(b, from, what, continues, emit), &s);
            assert_eq!(
                plain,
                any,
                "list {:?} from {from}",
                String::from_utf8_lossy(&s)
            );
            let never = |_: &[u8], _: usize| false;
            let plain = list_of(|b, emit| scan_plain::list(b, from, what, never, emit), &s);
            let any = list_of(|b, emit| scan_any::list(b, from, what, never, emit), &s);
            assert_eq!(
                plain,
                any,
                "list {:?} from {from}",
                String::from_utf8_lossy(&s)
            );
            assert_eq!(
                scan_plain::value(&s, from),
                scan_any::value(&s, from),
                "value {:?} from {from}",
                String::from_utf8_lossy(&s)
            );
        }
    }
}

#[test]
fn lines_pick_the_plain_scanner_only_without_quotes_and_braces() {
    // Quotes and braces change the results, so such lines must take the byte loop.
    assert_eq!(scan_value("a(\"),\"), b", 0), Ok(7));
    assert_eq!(scan_value("a{,}, b", 0), Ok(4));
    let mut items = Vec::new();
    let end = scan_list("x{a,b},y", 0, "an item", |_, _| false, |it| items.push(it));
    assert_eq!((items.len(), end), (2, Ok(ListEnd::End)));
}

/// Splitting as the parser did before the one-pass split: at top-level commas, then at the
/// first `=` unless the name before it holds a `(`.
fn reference_sub_fields(text: &str) -> Vec<(&str, Option<&str>)> {
    let mut out = Vec::new();
    let mut rest = Some(text);
    while let Some(s) = rest {
        let b = s.as_bytes();
        let (mut depth, mut quoted, mut i) = (0usize, false, 0);
        let mut end = None;
        while i < b.len() {
            match b[i] {
                b'\\' if quoted => i += 1,
                b'"' => quoted = !quoted,
                b'(' | b'{' if !quoted => depth += 1,
                b')' | b'}' if !quoted => depth = depth.saturating_sub(1),
                b',' if !quoted && depth == 0 => {
                    end = Some(i);
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        let item = match end {
            Some(i) => {
                rest = s.get(i + 1..);
                &s[..i]
            }
            None => {
                rest = None;
                s
            }
        };
        out.push(match item.split_once('=') {
            Some((k, v)) if !k.contains('(') => (k, Some(v)),
            _ => (item, None),
        });
    }
    out
}

#[test]
fn one_pass_sub_field_split_agrees_with_split_then_find() {
    for s in all_strings(b"a=(){}\",\\", 6) {
        let text = String::from_utf8(s).expect("ASCII");
        let fast: Vec<_> = split_sub_fields(&text)
            .map(|(item, equals)| match equals {
                Some(at) => (&item[..at], Some(&item[at + 1..])),
                None => (item, None),
            })
            .collect();
        assert_eq!(fast, reference_sub_fields(&text), "{text:?}");
    }
}
