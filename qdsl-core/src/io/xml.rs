//! The little XML that ILDG and SciDAC records need: the text of a named element.
//!
//! The records qdsl reads (`ildg-format`, `scidac-private-*-xml`, `scidac-checksum`) are
//! flat documents of simple elements without attributes, so a full XML parser is not
//! needed: [`element`] finds `<tag>` … `</tag>` and returns the trimmed text between.

use super::IoError;
use std::path::Path;
use std::str::FromStr;

/// The text of a LIME record as UTF-8, with the trailing NUL bytes C writers append removed.
pub(crate) fn record_text<'a>(
    data: &'a [u8],
    record: &str,
    path: &Path,
) -> Result<&'a str, IoError> {
    let end = data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    std::str::from_utf8(&data[..end]).map_err(|e| IoError::Malformed {
        path: path.to_path_buf(),
        what: format!("record `{record}`"),
        location: format!("byte {} of the record", e.valid_up_to()),
        expected: "UTF-8 text".to_string(),
        found: "an invalid UTF-8 sequence".to_string(),
    })
}

/// The trimmed text of the first `<tag>…</tag>` element of `xml`, `None` if there is no
/// `<tag>`; an opening tag without its closing tag is an error.
pub(crate) fn element<'a>(
    xml: &'a str,
    tag: &str,
    record: &str,
    path: &Path,
) -> Result<Option<&'a str>, IoError> {
    let open = format!("<{tag}>");
    let Some(start) = xml.find(&open) else {
        return Ok(None);
    };
    let body = &xml[start + open.len()..];
    let close = format!("</{tag}>");
    match body.find(&close) {
        Some(end) => Ok(Some(body[..end].trim())),
        None => Err(IoError::Malformed {
            path: path.to_path_buf(),
            what: format!("XML element <{tag}> in record `{record}`"),
            location: format!("byte {start} of the record"),
            expected: close,
            found: body.chars().take(40).collect(),
        }),
    }
}

/// Parses an element's text as a number.
pub(crate) fn parse<T: FromStr>(
    text: &str,
    tag: &str,
    record: &str,
    expected: &str,
    path: &Path,
) -> Result<T, IoError> {
    text.parse().map_err(|_| IoError::Malformed {
        path: path.to_path_buf(),
        what: format!("XML element <{tag}> in record `{record}`"),
        location: format!("<{tag}>"),
        expected: expected.to_string(),
        found: text.to_string(),
    })
}

/// Parses a hexadecimal u32 with or without a `0x` prefix (`scidac-checksum` writers
/// differ: MILC writes `4e252b1`, tmLQCD `0x1c231a18`).
pub(crate) fn parse_hex_u32(
    text: &str,
    tag: &str,
    record: &str,
    path: &Path,
) -> Result<u32, IoError> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    u32::from_str_radix(digits, 16).map_err(|_| IoError::Malformed {
        path: path.to_path_buf(),
        what: format!("XML element <{tag}> in record `{record}`"),
        location: format!("<{tag}>"),
        expected: "a 32-bit hexadecimal number".to_string(),
        found: text.to_string(),
    })
}

/// Escapes text for use inside an XML element.
pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_trimmed_elements_and_reports_unclosed_ones() {
        let p = Path::new("f");
        let x = "<a><lx> 4 </lx><ly>6</ly><open>5";
        assert_eq!(element(x, "lx", "r", p).unwrap(), Some("4"));
        assert_eq!(element(x, "ly", "r", p).unwrap(), Some("6"));
        assert_eq!(element(x, "lz", "r", p).unwrap(), None);
        let e = element(x, "open", "r", p).unwrap_err().to_string();
        assert!(e.contains("</open>") && e.contains("f:"), "{e}");
        assert_eq!(parse::<usize>("12", "lx", "r", "n", p).unwrap(), 12);
        assert!(parse::<usize>("-1", "lx", "r", "n", p).is_err());
    }

    #[test]
    fn hex_with_and_without_prefix() {
        let p = Path::new("f");
        assert_eq!(
            parse_hex_u32("0x1c231a18", "suma", "r", p).unwrap(),
            0x1c23_1a18
        );
        assert_eq!(
            parse_hex_u32("4e252b1", "suma", "r", p).unwrap(),
            0x04e2_52b1
        );
        assert!(parse_hex_u32("xyz", "suma", "r", p).is_err());
        assert_eq!(record_text(b"ab\0\0", "r", p).unwrap(), "ab");
        assert_eq!(escape("a<b&c"), "a&lt;b&amp;c");
    }
}
