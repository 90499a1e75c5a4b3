//! The shortcut for rows already canonical: a row whose kept parts are
//! spelled as the output spells them is copied without building its values.
//! It has no twin: it decides nothing (any other line goes to the parser and
//! the row rules), it only skips work.

use crate::json::{Canon, Keys};

use super::LineLimits;

/// A row `verbatim_row` took, as it stands in its line.
pub struct Verbatim<'a> {
    /// The prompt's JSON text.
    pub prompt: &'a str,
    /// A str prompt: its text between the quotes (escapes as they stand);
    /// `None` for a list of messages.
    pub text: Option<&'a str>,
    /// The answer between its quotes, if it is a non-empty str.
    pub answer: Option<&'a str>,
    pub dropped_keys: usize,
}

/// One message of a row `verbatim_row` took.
pub struct VerbatimMessage<'a> {
    /// Between its quotes, escapes as they stand.
    pub role: &'a str,
    /// A str content between its quotes; `None` when it is null, absent or
    /// another value.
    pub content: Option<&'a str>,
}

/// Take a row whose kept parts are already spelled the way `write_row`
/// spells them, without building its values. The row must pass the row
/// rules as they stand in `check_row` and `check_message`, recognised here on
/// the text: a non-empty str prompt, or a non-empty list of messages, each a
/// mapping with a non-empty str `role` and nothing nested past `max_depth`;
/// an `answer` that is a str or null; no key twice in the row. The prompt
/// must be spelled canonically (`Canon::canonical_value`: no whitespace,
/// `-0` or repeated key, floats as `repr` spells them, no escape
/// `write_json_str` would not write),
/// and so must the row's keys and the answer. Any other line gives `None`
/// and goes through `parse_row_line` and `check_row`, which decide it and
/// word any error: a shortcut to the same result, never a second set of
/// rules. `messages` is cleared, then holds the prompt's messages; with
/// `plain_only`, every message must be plain (only `role` and a str or null
/// `content`), and one that is not gives `None` as soon as it is seen.
pub fn verbatim_row<'a>(
    text: &'a str,
    limits: LineLimits,
    no_controls: bool,
    plain_only: bool,
    messages: &mut Vec<VerbatimMessage<'a>>,
) -> Option<Verbatim<'a>> {
    verbatim_row_naming(text, limits, no_controls, plain_only, messages, |_| {})
}

/// `verbatim_row`, handing `dropped` each dropped key as it is stepped over,
/// in order, between its quotes (escapes as they stand), even in a row it
/// then gives `None` for.
pub fn verbatim_row_naming<'a>(
    text: &'a str,
    limits: LineLimits,
    no_controls: bool,
    plain_only: bool,
    messages: &mut Vec<VerbatimMessage<'a>>,
    mut dropped: impl FnMut(&'a str),
) -> Option<Verbatim<'a>> {
    messages.clear();
    let mut line = Canon::new(text, limits.json, no_controls);
    line.skip_ws();
    // The row object is at JSON depth 1.
    if limits.json.max_depth < 1 || !line.eat(b'{') {
        return None;
    }
    let mut keys = Keys::default();
    let (mut prompt, mut prompt_text, mut answer, mut dropped_keys) = (None, None, None, 0);
    loop {
        line.skip_ws();
        let key = line.canonical_string()?;
        if !keys.add(key) {
            return None;
        }
        line.skip_ws();
        if !line.eat(b':') {
            return None;
        }
        line.skip_ws();
        match key {
            "prompt" => {
                let start = line.pos();
                match line.peek() {
                    Some(b'"') => {
                        prompt_text = Some(line.canonical_string().filter(|t| !t.is_empty())?)
                    }
                    Some(b'[') => verbatim_messages(&mut line, limits, plain_only, messages)?,
                    _ => return None,
                }
                prompt = Some(line.text(start, line.pos()));
            }
            "answer" => match line.peek() {
                Some(b'"') => answer = Some(line.canonical_string()?).filter(|a| !a.is_empty()),
                Some(b'n') if line.skip_value(1) => {}
                _ => return None,
            },
            _ => {
                if !line.step_over(1) {
                    return None;
                }
                dropped(key);
                dropped_keys += 1;
            }
        }
        line.skip_ws();
        if line.eat(b'}') {
            break;
        }
        if !line.eat(b',') {
            return None;
        }
    }
    line.skip_ws();
    Some(Verbatim {
        prompt: prompt.filter(|_| line.at_end())?,
        text: prompt_text,
        answer,
        dropped_keys,
    })
}

/// A prompt's list of messages, from `[` to `]`, canonical and within the
/// rules (see `verbatim_row`). The row is at JSON depth 1, the list at 2,
/// each message at 3; a message is at the row rules' level 1.
fn verbatim_messages<'a>(
    line: &mut Canon<'a>,
    limits: LineLimits,
    plain_only: bool,
    messages: &mut Vec<VerbatimMessage<'a>>,
) -> Option<()> {
    if limits.json.max_depth < 3 || limits.max_depth < 1 || !line.eat(b'[') {
        return None;
    }
    loop {
        if !line.eat(b'{') {
            return None;
        }
        let (mut role, mut content) = (None, None);
        let taken = line.members(|line, key| match key {
            "role" => {
                role = line.canonical_string().filter(|r| !r.is_empty());
                role.is_some()
            }
            "content" if line.peek() == Some(b'"') => {
                content = line.canonical_string();
                content.is_some()
            }
            _ => {
                let plain = key == "content" && line.peek() == Some(b'n');
                (plain || !plain_only) && line.canonical_value(3, 2, limits.max_depth)
            }
        });
        if !taken {
            return None;
        }
        messages.push(VerbatimMessage {
            role: role?,
            content,
        });
        if !line.eat(b',') {
            return line.eat(b']').then_some(());
        }
    }
}

/// Write the output line of a row `verbatim_row` takes (its prompt's text
/// copied); gives the number of keys dropped, or `None` with nothing written.
pub fn write_verbatim_row<'a>(
    text: &'a str,
    limits: LineLimits,
    no_controls: bool,
    messages: &mut Vec<VerbatimMessage<'a>>,
    out: &mut String,
) -> Option<usize> {
    let row = verbatim_row(text, limits, no_controls, false, messages)?;
    out.push_str("{\"prompt\":");
    out.push_str(row.prompt);
    if let Some(answer) = row.answer {
        out.push_str(",\"answer\":\"");
        out.push_str(answer);
        out.push('"');
    }
    out.push_str("}\n");
    Some(row.dropped_keys)
}

#[cfg(test)]
mod tests;
