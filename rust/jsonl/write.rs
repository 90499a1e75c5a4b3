//! Canonical JSONL output: a row written as one line, as the twin's
//! `_jsonl.write_canonical` writes it.

use std::borrow::Cow;

use crate::json::{py_float_repr, write_json_clean, write_json_str, J};

use super::Row;

pub(crate) fn write_value(value: &J<'_>, out: &mut String) {
    match value {
        J::Null => out.push_str("null"),
        J::Bool(true) => out.push_str("true"),
        J::Bool(false) => out.push_str("false"),
        J::Num(text, false) => out.push_str(if *text == "-0" { "0" } else { text }),
        J::Num(text, true) => py_float_repr(text.parse().unwrap_or(f64::NAN), out),
        J::Str(Cow::Borrowed(text)) => write_json_clean(text, out),
        J::Str(text) => write_json_str(text, out),
        J::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        J::Obj(members) => {
            out.push('{');
            for (i, (key, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                match key {
                    Cow::Borrowed(key) => write_json_clean(key, out),
                    Cow::Owned(key) => write_json_str(key, out),
                }
                out.push(':');
                write_value(item, out);
            }
            out.push('}');
        }
    }
}

/// One output line: `{"prompt":...,"answer":...}` and a newline.
pub fn write_row(row: &Row<'_>, out: &mut String) {
    out.push_str("{\"prompt\":");
    write_value(&row.prompt, out);
    if let Some(answer) = &row.answer {
        out.push_str(",\"answer\":");
        write_json_str(answer, out);
    }
    out.push_str("}\n");
}
