//! The shortcut against the full path: what it takes is written as the
//! parser and the row rules would write it; anything else is left to them.

use super::*;
use crate::json::{parse_row_line, printable_ascii, JsonLimits};
use crate::jsonl::rules::check_row;
use crate::jsonl::{write_row, LIMITS};

/// The full path's output line (or `None` for a refused line) and keys dropped.
fn full(text: &str) -> Option<(String, usize)> {
    let row = check_row(parse_row_line(text, LIMITS.json).ok()?, LIMITS.max_depth).ok()?;
    let mut out = String::new();
    write_row(&row, &mut out);
    Some((out, row.dropped_keys))
}

fn shortcut(text: &str) -> Option<(String, usize)> {
    let mut out = String::new();
    let dropped = write_verbatim_row(text, LIMITS, false, &mut Vec::new(), &mut out);
    let ascii = printable_ascii(text.as_bytes());
    let mut again = String::new();
    let same = write_verbatim_row(text, LIMITS, ascii, &mut Vec::new(), &mut again);
    assert_eq!(
        (dropped, &out),
        (same, &again),
        "{text}: the ASCII hint changed the result"
    );
    if dropped.is_none() {
        assert!(out.is_empty(), "{text}: wrote {out:?} and gave up");
    }
    dropped.map(|dropped| (out, dropped))
}

#[test]
fn the_shortcut_takes_canonical_rows_and_writes_what_the_full_path_writes() {
    let taken = [
        r#"{"prompt":"hi"}"#,
        r#" { "id" : 1 , "prompt" : "hi" , "answer" : "4" } "#,
        r#"{"prompt":"a\"b\\c\nd\u0001\u001f","answer":"x\ty"}"#,
        r#"{"prompt":[{"role":"user","content":"hi"}],"answer":null}"#,
        r#"{"prompt":[{"role":"user","content":"hi"}],"answer":""}"#,
        r#"{"x":[1.5,{"a":NaN_IS_NOT_HERE}],"prompt":"p"}"#,
        r#"{"prompt":[{"content":null,"role":"a","n":-12,"t":[true,false,null,{}],"e":[]}]}"#,
        r#"{"prompt":[{"role":"a","f":[1.0,-0.0,0.5,1e+16,1.5e-07,123.456,1e-05]}]}"#,
        r#"{"prompt":[{"role":"r","o":{"a":{"b":{"c":1}}}}],"extra":{"x":1e400}}"#,
        r#"{"prompt":[{"role":"é","content":"naïve ✓"},{"role":"tool","tool_calls":[{"id":"1","function":{"name":"f","arguments":"{\"x\":1}"}}]}]}"#,
    ];
    for text in taken {
        let text = &text.replace("NaN_IS_NOT_HERE", "2");
        let got = shortcut(text);
        assert!(got.is_some(), "not taken: {text}");
        assert_eq!(got, full(text), "{text}");
    }
}

#[test]
fn plain_only_gives_up_at_the_first_message_that_is_not_plain() {
    let text = r#"{"prompt":[{"role":"user","content":"a\nb"},{"role":"tool","name":"f"}]}"#;
    let mut messages = Vec::new();
    assert!(verbatim_row(text, LIMITS, true, false, &mut messages).is_some());
    let roles: Vec<&str> = messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, ["user", "tool"]);
    assert_eq!(messages[0].content, Some(r"a\nb"));
    assert!(verbatim_row(text, LIMITS, true, true, &mut messages).is_none());
    let text = r#"{"prompt":[{"role":"user","content":null},{"role":"a","content":"c"}]}"#;
    assert!(verbatim_row(text, LIMITS, true, true, &mut messages).is_some());
    assert_eq!(messages.len(), 2);
}

#[test]
fn anything_else_is_left_to_the_full_path() {
    let left = [
        // Spellings the output changes.
        r#"{"prompt":[ {"role":"user"}]}"#,
        r#"{"prompt":[{"role":"user","n":1.00}]}"#,
        r#"{"prompt":[{"role":"user","n":1e16}]}"#,
        r#"{"prompt":[{"role":"user","n":1E+16}]}"#,
        r#"{"prompt":[{"role":"user","n":0.10000000000000001}]}"#,
        r#"{"prompt":[{"role":"user","n":1e400}]}"#,
        r#"{"prompt":[{"role":"user","n":-0}]}"#,
        r#"{"prompt":[{"role":"user","c":"\/"}]}"#,
        r#"{"prompt":[{"role":"user","c":"\u0041"}]}"#,
        r#"{"prompt":[{"role":"user","c":"\u000a"}]}"#,
        r#"{"prompt":[{"role":"user","c":"\u001F"}]}"#,
        r#"{"prompt":"\u00e9"}"#,
        r#"{"prompt":"p","answer":"\/"}"#,
        r#"{"pr\u006fmpt":"p"}"#,
        r#"{"prompt":[{"role":"user","a":1,"a":2}]}"#,
        r#"{"prompt":[{"role":"user","o":{"a":1,"a":1}}]}"#,
        r#"{"prompt":"p","x":1,"x":2}"#,
        r#"{"prompt":"p","prompt":"q"}"#,
        // Rows the rules refuse, or change.
        r#"{"prompt":""}"#,
        r#"{"prompt":[]}"#,
        r#"{"prompt":null}"#,
        r#"{"answer":"a"}"#,
        r#"{"prompt":"p","answer":1}"#,
        r#"{"prompt":[{"content":"x"}]}"#,
        r#"{"prompt":[{"role":""}]}"#,
        r#"{"prompt":[{"role":1}]}"#,
        r#"{"prompt":["user"]}"#,
        r#"{"prompt":[{"role":"r","o":{"a":{"b":{"c":{}}}}}]}"#,
        r#"{"prompt":[{"role":"r","o":[[[[[]]]]]}]}"#,
        r#"{"prompt":[{"role":"r","n":123456789012345678901}]}"#,
        // Not JSON, or not all of it.
        r#"{"prompt":"p"} x"#,
        r#"{"prompt":"p",}"#,
        r#"{"prompt":"p","x":NaN}"#,
        r#"{"prompt":"p","x":[1,]}"#,
        "\u{feff}{\"prompt\":\"p\"}",
        r#"["prompt"]"#,
    ];
    for text in left {
        assert_eq!(shortcut(text), None, "taken: {text}");
    }
    // A JSON depth limit below the row's own depth is the parser's to report.
    let shallow = LineLimits {
        json: JsonLimits {
            max_depth: 0,
            ..LIMITS.json
        },
        ..LIMITS
    };
    let mut out = String::new();
    let row = r#"{"prompt":"p"}"#;
    assert!(write_verbatim_row(row, shallow, true, &mut Vec::new(), &mut out).is_none());
    // Every key past the sixteenth is not looked at for repeats.
    let many: String = (0..17).map(|i| format!(",\"k{i}\":1")).collect();
    let row = format!(r#"{{"prompt":[{{"role":"r"{many}}}]}}"#);
    assert_eq!(shortcut(&row), None);
    assert!(full(&row).is_some());
}

#[test]
fn every_prefix_and_byte_change_of_a_canonical_row_agrees() {
    // Whatever the shortcut takes, the full path takes and writes alike.
    let base = r#"{"id":"t-1","prompt":[{"role":"system","content":"a\"b\n"},{"role":"user","content":"c","tool_calls":[{"id":"x","n":12,"ok":true}]}],"answer":"42","reward":0.5}"#;
    let mut taken = 0;
    for cut in 0..=base.len() {
        let Some(prefix) = base.get(..cut) else {
            continue;
        };
        if let Some(got) = shortcut(prefix) {
            assert_eq!(Some(got), full(prefix), "{prefix}");
            taken += 1;
        }
    }
    assert_eq!(taken, 1, "only the whole row is a row");
    for at in 0..base.len() {
        for byte in [
            b' ', b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b'0', b'-', b'e', b'\x01', b'u',
        ] {
            let mut bytes = base.as_bytes().to_vec();
            bytes[at] = byte;
            let Ok(text) = String::from_utf8(bytes) else {
                continue;
            };
            if let Some(got) = shortcut(&text) {
                assert_eq!(Some(got), full(&text), "{text}");
                taken += 1;
            }
        }
    }
    assert!(taken > 100, "the shortcut took only {taken} lines");
}
