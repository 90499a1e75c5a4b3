//! The row rules over parsed JSON: what `check_row` takes, refuses or
//! changes in a line's value (the twin applies `_rows`' rules to the value
//! `_json.loads` gives).

use std::borrow::Cow;

use crate::errors::{Code, Rule, Seg};
use crate::json::J;

use super::Row;

type Members<'a> = Vec<(Cow<'a, str>, J<'a>)>;

/// Whether any key occurs twice (small objects: compare pairs; large: hash).
fn has_duplicate_keys(members: &Members<'_>) -> bool {
    if members.len() <= 16 {
        return members
            .iter()
            .enumerate()
            .any(|(i, (k, _))| members[..i].iter().any(|(other, _)| other == k));
    }
    let mut seen = std::collections::HashSet::with_capacity(members.len());
    members.iter().any(|(k, _)| !seen.insert(k.as_ref()))
}

/// Resolve duplicate keys in place the way a Python dict does: the first
/// place, the last value.
fn dedupe(members: &mut Members<'_>) {
    if members.len() < 2 || !has_duplicate_keys(members) {
        return;
    }
    let all = std::mem::take(members);
    // Where each key first stood in the result: one lookup per member, so an object
    // of n keys costs O(n) however many of them repeat.
    let mut first: std::collections::HashMap<Cow<'_, str>, usize> =
        std::collections::HashMap::with_capacity(all.len());
    for (key, value) in all {
        match first.get(&key) {
            Some(&slot) => members[slot].1 = value,
            None => {
                first.insert(key.clone(), members.len());
                members.push((key, value));
            }
        }
    }
}

fn check_depth(level: usize, max_depth: usize) -> Result<(), Rule> {
    if level > max_depth {
        return Err(Rule::new(Code::TooDeep, None));
    }
    Ok(())
}

fn check_value(value: &mut J<'_>, level: usize, max_depth: usize) -> Result<(), Rule> {
    match value {
        J::Num(text, true) => {
            let number: f64 = text.parse().unwrap_or(f64::NAN);
            if !number.is_finite() {
                let shown = if number.is_nan() {
                    "nan"
                } else if number > 0.0 {
                    "inf"
                } else {
                    "-inf"
                };
                return Err(Rule::new(Code::FloatNotFinite, Some(shown.to_string())));
            }
            Ok(())
        }
        J::Arr(items) => {
            check_depth(level, max_depth)?;
            for (i, item) in items.iter_mut().enumerate() {
                check_value(item, level + 1, max_depth).map_err(|bad| bad.within(Seg::Index(i)))?;
            }
            Ok(())
        }
        J::Obj(members) => check_object(members, level, max_depth),
        _ => Ok(()),
    }
}

fn check_object(members: &mut Members<'_>, level: usize, max_depth: usize) -> Result<(), Rule> {
    check_depth(level, max_depth)?;
    dedupe(members);
    for (key, value) in members.iter_mut() {
        check_value(value, level + 1, max_depth)
            .map_err(|bad| bad.within(Seg::Key(key.to_string())))?;
    }
    Ok(())
}

fn check_message(message: &mut J<'_>, max_depth: usize) -> Result<(), Rule> {
    let J::Obj(members) = message else {
        return Err(Rule::new(
            Code::MessageNotMapping,
            Some(message.py_type_name().to_string()),
        ));
    };
    check_object(members, 1, max_depth)?;
    match members.iter().find(|(k, _)| k == "role") {
        None => Err(Rule::new(Code::RoleMissing, None)),
        Some((_, J::Str(role))) if !role.is_empty() => Ok(()),
        Some((_, J::Str(_))) => {
            Err(Rule::new(Code::RoleEmpty, None).within(Seg::Key("role".into())))
        }
        Some((_, other)) => Err(
            Rule::new(Code::RoleType, Some(other.py_type_name().to_string()))
                .within(Seg::Key("role".into())),
        ),
    }
}

/// How many distinct keys other than `prompt` and `answer` a row has.
fn count_other_keys(members: &Members<'_>) -> usize {
    let others = members
        .iter()
        .filter(|(k, _)| k != "prompt" && k != "answer")
        .count();
    if others < 2 || !has_duplicate_keys(members) {
        return others;
    }
    let mut seen = std::collections::HashSet::new();
    members
        .iter()
        .filter(|(k, _)| k != "prompt" && k != "answer" && seen.insert(k.as_ref()))
        .count()
}

/// The row rules for one parsed line.
pub fn check_row(doc: J<'_>, max_depth: usize) -> Result<Row<'_>, Rule> {
    let J::Obj(mut members) = doc else {
        return Err(Rule::new(
            Code::RowNotMapping,
            Some(doc.py_type_name().to_string()),
        ));
    };
    let dropped_keys = count_other_keys(&members);
    // The last occurrence of a key wins, as in a Python dict.
    let mut take = |name: &str| {
        members
            .iter_mut()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| std::mem::replace(v, J::Null))
    };
    let prompt = take("prompt");
    let answer = take("answer");
    let in_prompt = |bad: Rule| bad.within(Seg::Key("prompt".into()));
    let prompt = match prompt {
        None | Some(J::Null) => return Err(in_prompt(Rule::new(Code::PromptMissing, None))),
        Some(J::Str(text)) => {
            if text.is_empty() {
                return Err(in_prompt(Rule::new(Code::PromptEmpty, None)));
            }
            J::Str(text)
        }
        Some(J::Arr(mut messages)) => {
            if messages.is_empty() {
                return Err(in_prompt(Rule::new(Code::PromptEmpty, None)));
            }
            for (i, message) in messages.iter_mut().enumerate() {
                check_message(message, max_depth)
                    .map_err(|bad| in_prompt(bad.within(Seg::Index(i))))?;
            }
            J::Arr(messages)
        }
        Some(other) => {
            return Err(in_prompt(Rule::new(
                Code::PromptType,
                Some(other.py_type_name().to_string()),
            )))
        }
    };
    let answer = match answer {
        None | Some(J::Null) => None,
        Some(J::Str(text)) => (!text.is_empty()).then_some(text),
        Some(other) => {
            return Err(
                Rule::new(Code::AnswerType, Some(other.py_type_name().to_string()))
                    .within(Seg::Key("answer".into())),
            );
        }
    };
    Ok(Row {
        prompt,
        answer,
        dropped_keys,
        members,
    })
}
