//! A strict JSON parser for one JSONL line, with our own error texts.
//!
//! The grammar is RFC 8259 exactly, plus three limits that make both engines
//! agree with what Python's `json` module can hold: no NaN/Infinity literals,
//! no lone UTF-16 surrogates in `\u` escapes, no integer longer than
//! `max_int_digits` (CPython's int-from-string limit), and no nesting deeper
//! than `max_depth` (`MAX_JSON_DEPTH`). The pure-Python twin
//! (`agent_rollout/_json.py`) walks the same grammar when `json.loads` refuses
//! a line, so both report the same `Reason` at the same column.

use std::borrow::Cow;

use crate::errors::Reason;

/// Limits handed over from Python (`_native.FileLimits`: `json_depth`,
/// `max_int_digits`).
#[derive(Clone, Copy)]
pub struct JsonLimits {
    /// How deeply arrays and objects may nest in one line (the row object is 1).
    pub max_depth: usize,
    /// CPython refuses to turn longer digit strings into an int.
    pub max_int_digits: usize,
}

/// A parsed JSON value borrowing from the line where it can. A borrowed
/// string (a `Str`, or an `Obj` key) is the text between its quotes in the
/// line, which had no escape and no control character (the parser's fast
/// path): JSON as it stands (`write_json_clean`).
#[derive(Debug, Clone)]
pub enum J<'a> {
    Null,
    Bool(bool),
    /// The number's text, and whether it is a float (has `.`, `e` or `E`).
    Num(Cow<'a, str>, bool),
    Str(Cow<'a, str>),
    Arr(Vec<J<'a>>),
    /// Members in document order; duplicate keys are kept here and resolved
    /// by the row rules the way a Python dict would (first place, last value).
    Obj(Vec<(Cow<'a, str>, J<'a>)>),
}

/// A syntax error: a reason code and the byte offset in the line it points at.
#[derive(Debug)]
pub struct SyntaxError {
    pub reason: Reason,
    pub offset: usize,
}

type Res<T> = Result<T, SyntaxError>;

fn fail<T>(reason: Reason, offset: usize) -> Res<T> {
    Err(SyntaxError { reason, offset })
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    limits: JsonLimits,
    /// Row mode: in the outermost object, members other than `prompt` and
    /// `answer` are checked but not built (their value becomes `Null`).
    skip_extras: bool,
}

/// Parse one whole line (already known to be valid UTF-8 and not blank).
#[cfg(test)]
pub fn parse_line(text: &str, limits: JsonLimits) -> Result<J<'_>, SyntaxError> {
    parse(text, limits, false)
}

/// Parse a JSONL row: like `parse_line`, but the values of top-level keys
/// other than `prompt` and `answer` are only checked, never built.
pub fn parse_row_line(text: &str, limits: JsonLimits) -> Result<J<'_>, SyntaxError> {
    parse(text, limits, true)
}

fn parse(text: &str, limits: JsonLimits, skip_extras: bool) -> Result<J<'_>, SyntaxError> {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        limits,
        skip_extras,
    };
    if text.starts_with('\u{feff}') {
        return fail(Reason::Bom, 0);
    }
    parser.skip_ws();
    let value = parser
        .value(0)
        .map_err(|err| cut_short(text.as_bytes(), err))?;
    parser.skip_ws();
    if parser.pos != parser.bytes.len() {
        return fail(Reason::Trailing, parser.pos);
    }
    Ok(value)
}

/// An error at the end of the line, where the line ends inside an object or an
/// array (a line cut short): that is its reason, not what the grammar expected
/// next (`',' or '}'`). Which one is open: the reason says it, or, for a value
/// expected, the byte before (`:` in an object; `[` or `,` in an array, since
/// an object expects a key after `,`). The twin does the same (`_json.py`).
fn cut_short(bytes: &[u8], err: SyntaxError) -> SyntaxError {
    if err.offset != bytes.len() {
        return err;
    }
    let before = bytes[..err.offset]
        .iter()
        .rev()
        .copied()
        .find(|b| !matches!(*b, b' ' | b'\t' | b'\n' | b'\r'));
    let reason = match (err.reason, before) {
        (Reason::ExpectedObjectSep | Reason::ExpectedColon | Reason::ExpectedKey, _)
        | (Reason::ExpectedValue, Some(b':')) => Reason::EndsInObject,
        (Reason::ExpectedArraySep, _) | (Reason::ExpectedValue, Some(b'[' | b',')) => {
            Reason::EndsInArray
        }
        _ => return err,
    };
    SyntaxError {
        reason,
        offset: err.offset,
    }
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn starts_with(&self, word: &str) -> bool {
        self.bytes[self.pos..].starts_with(word.as_bytes())
    }

    fn value(&mut self, depth: usize) -> Res<J<'a>> {
        self.any(depth, true)
    }

    /// A value; with `build` false it is checked exactly as when built (same
    /// grammar, same errors) but containers allocate nothing and give `Null`.
    fn any(&mut self, depth: usize, build: bool) -> Res<J<'a>> {
        match self.peek() {
            Some(b'{') => self.object(depth + 1, build),
            Some(b'[') => self.array(depth + 1, build),
            Some(b'"') => Ok(J::Str(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') if self.starts_with("true") => {
                self.pos += 4;
                Ok(J::Bool(true))
            }
            Some(b'f') if self.starts_with("false") => {
                self.pos += 5;
                Ok(J::Bool(false))
            }
            Some(b'n') if self.starts_with("null") => {
                self.pos += 4;
                Ok(J::Null)
            }
            Some(b'N') if self.starts_with("NaN") => fail(Reason::NanInfinity, self.pos),
            Some(b'I') if self.starts_with("Infinity") => fail(Reason::NanInfinity, self.pos),
            _ => fail(Reason::ExpectedValue, self.pos),
        }
    }

    /// After a member or item: `,` (then more) or the closing bracket.
    /// Returns true when the container is complete.
    fn separator(&mut self, close: u8, expected: Reason) -> Res<bool> {
        self.skip_ws();
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                self.skip_ws();
                Ok(false)
            }
            Some(b) if b == close => {
                self.pos += 1;
                Ok(true)
            }
            _ => fail(expected, self.pos),
        }
    }

    /// Past the opening bracket; true when the container is empty (and closed).
    fn open(&mut self, depth: usize, close: u8) -> Res<bool> {
        if depth > self.limits.max_depth {
            return fail(Reason::TooDeep, self.pos);
        }
        self.pos += 1;
        self.skip_ws();
        if self.peek() == Some(close) {
            self.pos += 1;
            return Ok(true);
        }
        Ok(false)
    }

    fn object(&mut self, depth: usize, build: bool) -> Res<J<'a>> {
        let mut members = Vec::new();
        if self.open(depth, b'}')? {
            return Ok(if build { J::Obj(members) } else { J::Null });
        }
        loop {
            if self.peek() != Some(b'"') {
                return fail(Reason::ExpectedKey, self.pos);
            }
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return fail(Reason::ExpectedColon, self.pos);
            }
            self.pos += 1;
            self.skip_ws();
            // In row mode only `prompt` and `answer` of the row are built.
            let extra = self.skip_extras && depth == 1 && key != "prompt" && key != "answer";
            let value = self.any(depth, build && !extra)?;
            if build {
                members.push((key, value));
            }
            if self.separator(b'}', Reason::ExpectedObjectSep)? {
                return Ok(if build { J::Obj(members) } else { J::Null });
            }
        }
    }

    fn array(&mut self, depth: usize, build: bool) -> Res<J<'a>> {
        let mut items = Vec::new();
        if self.open(depth, b']')? {
            return Ok(if build { J::Arr(items) } else { J::Null });
        }
        loop {
            let item = self.any(depth, build)?;
            if build {
                items.push(item);
            }
            if self.separator(b']', Reason::ExpectedArraySep)? {
                return Ok(if build { J::Arr(items) } else { J::Null });
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Res<J<'a>> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
            if self.starts_with("Infinity") {
                return fail(Reason::NanInfinity, start);
            }
        }
        let int_digits = match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                1
            }
            Some(b'1'..=b'9') => self.digits(),
            _ => return fail(Reason::BadNumber, start),
        };
        let mut is_float = false;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return fail(Reason::BadNumber, start);
            }
            is_float = true;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return fail(Reason::BadNumber, start);
            }
            is_float = true;
        }
        if !is_float && int_digits > self.limits.max_int_digits {
            return fail(Reason::LongInt, start);
        }
        Ok(J::Num(Cow::Borrowed(&self.text[start..self.pos]), is_float))
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.bytes.get(at..at + 4)?;
        let mut value = 0u32;
        for &b in digits {
            value = value * 16 + (b as char).to_digit(16)?;
        }
        Some(value)
    }

    /// A string starting at the opening quote; borrowed when it has no escapes.
    fn string(&mut self) -> Res<Cow<'a, str>> {
        let open = self.pos;
        self.pos += 1;
        let start = self.pos;
        // Fast scan: most strings have no escapes.
        let rest = &self.bytes[self.pos..];
        let Some(stop) = memchr::memchr2(b'"', b'\\', rest) else {
            return match rest.iter().position(|&b| b < 0x20) {
                Some(i) => fail(Reason::ControlChar, self.pos + i),
                None => fail(Reason::Unterminated, open),
            };
        };
        if let Some(i) = first_control(&rest[..stop]) {
            return fail(Reason::ControlChar, self.pos + i);
        }
        self.pos += stop;
        if rest[stop] == b'"' {
            let text = &self.text[start..self.pos];
            self.pos += 1;
            return Ok(Cow::Borrowed(text));
        }
        let mut out = String::from(&self.text[start..self.pos]);
        loop {
            match self.peek() {
                None => return fail(Reason::Unterminated, open),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(Cow::Owned(out));
                }
                Some(b'\\') => {
                    let slash = self.pos;
                    let Some(kind) = self.bytes.get(slash + 1).copied() else {
                        return fail(Reason::BadEscape, slash);
                    };
                    self.pos += 2;
                    let ch = match kind {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape(slash)?,
                        _ => return fail(Reason::BadEscape, slash),
                    };
                    out.push(ch);
                }
                Some(b) if b < 0x20 => return fail(Reason::ControlChar, self.pos),
                Some(_) => {
                    // Copy the run up to the next quote, backslash or control byte.
                    let run = self.pos;
                    while let Some(b) = self.peek() {
                        if b == b'"' || b == b'\\' || b < 0x20 {
                            break;
                        }
                        self.pos += 1;
                    }
                    out.push_str(&self.text[run..self.pos]);
                }
            }
        }
    }

    /// After `\u` (the backslash at `slash`, `pos` past the `u`).
    fn unicode_escape(&mut self, slash: usize) -> Res<char> {
        let Some(first) = self.hex4(self.pos) else {
            return fail(Reason::BadUnicode, slash);
        };
        self.pos += 4;
        let code = match first {
            0xD800..=0xDBFF => {
                let low = if self.bytes.get(self.pos..self.pos + 2) == Some(b"\\u") {
                    self.hex4(self.pos + 2)
                } else {
                    None
                };
                match low {
                    Some(low @ 0xDC00..=0xDFFF) => {
                        self.pos += 6;
                        0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00)
                    }
                    _ => return fail(Reason::LoneSurrogate, slash),
                }
            }
            0xDC00..=0xDFFF => return fail(Reason::LoneSurrogate, slash),
            other => other,
        };
        match char::from_u32(code) {
            Some(ch) => Ok(ch),
            None => fail(Reason::BadUnicode, slash),
        }
    }
}

impl J<'_> {
    /// A copy that owns all its text (to send it to another thread).
    pub fn into_owned(self) -> J<'static> {
        match self {
            J::Null => J::Null,
            J::Bool(b) => J::Bool(b),
            J::Num(text, is_float) => J::Num(Cow::Owned(text.into_owned()), is_float),
            J::Str(text) => J::Str(Cow::Owned(text.into_owned())),
            J::Arr(items) => J::Arr(items.into_iter().map(J::into_owned).collect()),
            J::Obj(members) => J::Obj(
                members
                    .into_iter()
                    .map(|(k, v)| (Cow::Owned(k.into_owned()), v.into_owned()))
                    .collect(),
            ),
        }
    }

    /// The name of the Python type `json.loads` would give this value.
    pub fn py_type_name(&self) -> &'static str {
        match self {
            J::Null => "NoneType",
            J::Bool(_) => "bool",
            J::Num(_, true) => "float",
            J::Num(_, false) => "int",
            J::Str(_) => "str",
            J::Arr(_) => "list",
            J::Obj(_) => "dict",
        }
    }
}

/// Python's `repr(float)` (what `json.dumps` writes for a finite float): the
/// shortest digits that round-trip, ties between two shortest candidates
/// broken to the even digit as CPython's `dtoa` does, in fixed notation for
/// decimal exponents -4..16 (always with a `.0` when integral) and scientific
/// otherwise (`1e+16`, `1e-05`, `1.5e-07`). The digits come from Ryū, which
/// picks the same shortest, closest, even-on-tie digits; only the layout
/// differs, so it is rebuilt here from Ryū's digits and exponent.
pub fn py_float_repr(value: f64, out: &mut String) {
    if value == 0.0 {
        out.push_str(if value.is_sign_negative() {
            "-0.0"
        } else {
            "0.0"
        });
        return;
    }
    if value.is_sign_negative() {
        out.push('-');
    }
    let mut buffer = ryu::Buffer::new();
    let Decimal { digits, exp } = decimal_digits(buffer.format_finite(value.abs()));
    let digits = digits.as_slice();
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let int_len = exp.unsigned_abs() as usize + 1;
            if digits.len() <= int_len {
                push_ascii(out, digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
                out.push_str(".0");
            } else {
                push_ascii(out, &digits[..int_len]);
                out.push('.');
                push_ascii(out, &digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', exp.unsigned_abs() as usize - 1));
            push_ascii(out, digits);
        }
    } else {
        push_ascii(out, &digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            push_ascii(out, &digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let magnitude = exp.unsigned_abs();
        if magnitude < 10 {
            out.push('0');
        }
        out.push_str(&magnitude.to_string());
    }
}

/// A positive number as significant digits and a decimal exponent.
struct Decimal {
    /// ASCII digits, no leading or trailing zeros, at least one.
    digits: Vec<u8>,
    /// The decimal exponent of the first digit.
    exp: i32,
}

/// The significant digits of a positive number Ryū printed (`123.45`,
/// `0.0001`, `1.5e-7`, `1e16`), and the decimal exponent of the first digit:
/// `1.5e-7` gives (`15`, -7).
fn decimal_digits(text: &str) -> Decimal {
    let (mantissa, exp) = match text.split_once(['e', 'E']) {
        Some((mantissa, exp)) => (mantissa, exp.parse::<i32>().unwrap_or(0)),
        None => (text, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // The number is 0.DDDD x 10^point, DDDD being all the digits shown.
    let mut point = int_part.len() as i32 + exp;
    let mut digits: Vec<u8> = int_part.bytes().chain(frac_part.bytes()).collect();
    let leading = digits.iter().take_while(|&&d| d == b'0').count();
    digits.drain(..leading);
    point -= leading as i32;
    while digits.len() > 1 && digits.last() == Some(&b'0') {
        digits.pop();
    }
    if digits.is_empty() {
        digits.push(b'0');
    }
    Decimal {
        digits,
        exp: point - 1,
    }
}

fn push_ascii(out: &mut String, digits: &[u8]) {
    out.extend(digits.iter().map(|&d| char::from(d)));
}

/// Whether every byte is printable ASCII or a space (0x20 to 0x7f): such
/// bytes are UTF-8, and hold no control character.
pub fn printable_ascii(bytes: &[u8]) -> bool {
    !any_byte(bytes, |b| !(0x20..0x80).contains(&b))
}

/// Whether any byte is `bad`, tested 32 bytes at a time with no branch per
/// byte (the inner loop vectorises; `Iterator::any` stops at each byte).
fn any_byte(bytes: &[u8], bad: impl Fn(u8) -> bool) -> bool {
    let mut chunks = bytes.chunks_exact(32);
    for chunk in &mut chunks {
        if chunk.iter().fold(false, |found, &b| found | bad(b)) {
            return true;
        }
    }
    chunks.remainder().iter().any(|&b| bad(b))
}

/// The first control character (below 0x20) in `bytes`, if any.
fn first_control(bytes: &[u8]) -> Option<usize> {
    if !any_byte(bytes, |b| b < 0x20) {
        return None;
    }
    bytes.iter().position(|&b| b < 0x20)
}

/// Whether `text` holds a byte that JSON text escapes (`"`, `\\`, controls).
fn needs_escape(text: &str) -> bool {
    any_byte(text.as_bytes(), |b| b < 0x20 || b == b'"' || b == b'\\')
}

/// Append `text`, which needs no escape (a borrowed string of a parsed line,
/// see `J`), as a JSON string: as it stands, between quotes.
pub fn write_json_clean(text: &str, out: &mut String) {
    debug_assert!(
        !needs_escape(text),
        "a borrowed string with an escape: {text:?}"
    );
    out.push('"');
    out.push_str(text);
    out.push('"');
}

/// Append `text` as a JSON string the way Python's `json.dumps(...,
/// ensure_ascii=False)` writes it.
pub fn write_json_str(text: &str, out: &mut String) {
    out.push('"');
    if !needs_escape(text) {
        out.push_str(text);
        out.push('"');
        return;
    }
    let mut run = 0;
    for (i, b) in text.bytes().enumerate() {
        let escape: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0x08 => Some("\\b"),
            0x0c => Some("\\f"),
            0..=0x1f => None,
            _ => continue,
        };
        out.push_str(&text[run..i]);
        match escape {
            Some(esc) => out.push_str(esc),
            None => {
                out.push_str("\\u00");
                out.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
                out.push(char::from_digit(u32::from(b & 0xf), 16).unwrap_or('0'));
            }
        }
        run = i + 1;
    }
    out.push_str(&text[run..]);
    out.push('"');
}

// ---- text that is already canonical --------------------------------------------------------

/// The most keys an object may have for `Canon` to check it for repeats
/// (more, and the caller takes the full parser).
const CANON_MAX_KEYS: usize = 16;

/// A cursor that recognises JSON already spelled the way the canonical output
/// (`jsonl::write_value`) spells it, so that a caller can copy the text instead
/// of building values and writing them again. It recognises, it never
/// decides: every method answers `None` or `false` at the first thing it does
/// not recognise, be it an error or only another spelling (whitespace, an
/// escape, a float `repr` spells otherwise, `-0`, a repeated key, a nesting
/// past a limit), and the caller then hands the whole line to
/// `parse_row_line`, which decides and words any error. Numbers and values
/// skipped are read by `Parser`; strings by `canonical_string`, which takes
/// only strings `Parser::string` takes; values stepped over (`step_over`) by
/// `plain_string`, which likewise takes only what `Parser::string` takes, and
/// by `Parser` itself for the rest.
pub struct Canon<'a> {
    parser: Parser<'a>,
    /// The line has no control character (so no string in it has one).
    no_controls: bool,
}

impl<'a> Canon<'a> {
    /// `no_controls` may say that `text` has no byte below 0x20 (then
    /// strings are not looked at for one again); false is always right.
    pub fn new(text: &'a str, limits: JsonLimits, no_controls: bool) -> Self {
        Canon {
            parser: Parser {
                text,
                bytes: text.as_bytes(),
                pos: 0,
                limits,
                skip_extras: false,
            },
            no_controls,
        }
    }

    /// Where the cursor is (a byte offset in the text).
    pub fn pos(&self) -> usize {
        self.parser.pos
    }

    /// The text between two offsets the cursor has passed.
    pub fn text(&self, from: usize, to: usize) -> &'a str {
        &self.parser.text[from..to]
    }

    pub fn peek(&self) -> Option<u8> {
        self.parser.peek()
    }

    pub fn at_end(&self) -> bool {
        self.parser.pos == self.parser.bytes.len()
    }

    pub fn skip_ws(&mut self) {
        self.parser.skip_ws();
    }

    /// Step over `byte` if it is next.
    pub fn eat(&mut self, byte: u8) -> bool {
        let next = self.parser.peek() == Some(byte);
        self.parser.pos += usize::from(next);
        next
    }

    /// A string spelled as `write_json_str` spells it: no control character,
    /// and only the escapes it writes (`\"`, `\\`, `\n`, `\r`, `\t`, `\b`,
    /// `\f`, and `\u00xx` in lowercase for the other control characters).
    /// Gives the text between its quotes, escapes as they stand. Each string
    /// has one such spelling, so two are the same string exactly when their
    /// texts are equal, and a non-empty text is a non-empty string.
    pub fn canonical_string(&mut self) -> Option<&'a str> {
        let bytes = self.parser.bytes;
        if bytes.get(self.parser.pos) != Some(&b'"') {
            return None;
        }
        let start = self.parser.pos + 1;
        let mut at = start;
        loop {
            let rest = bytes.get(at..)?;
            let stop = memchr::memchr2(b'"', b'\\', rest)?;
            if !self.no_controls && first_control(&rest[..stop]).is_some() {
                return None;
            }
            at += stop;
            if bytes[at] == b'"' {
                self.parser.pos = at + 1;
                return Some(&self.parser.text[start..at]);
            }
            at += canonical_escape(bytes.get(at..)?)?;
        }
    }

    /// Any value, as valid as the parser wants it (same grammar, same
    /// limits); its spelling does not matter. `depth` is the nesting of the
    /// container it is in (the row object is 1).
    pub fn skip_value(&mut self, depth: usize) -> bool {
        self.parser.any(depth, false).is_ok()
    }

    /// `skip_value`, sooner where the value is plain: strings, numbers,
    /// literals, and arrays and objects of those within the depth limit,
    /// whitespace anywhere the grammar allows it. Plain text is stepped over
    /// here, taking only what the parser takes (no value is built, no
    /// `Result` passed up; a string with an escape is read by the parser's
    /// own string reader); anything else, valid or not, goes back to the
    /// value's start and to `skip_value`, which decides.
    pub fn step_over(&mut self, depth: usize) -> bool {
        let start = self.parser.pos;
        if self.plain_value(depth) {
            return true;
        }
        self.parser.pos = start;
        self.skip_value(depth)
    }

    /// A plain value (see `step_over`) in a container at `depth`; false
    /// where it is not plain, the cursor left anywhere.
    fn plain_value(&mut self, depth: usize) -> bool {
        match self.parser.peek() {
            Some(b'"') => self.plain_string(),
            Some(b'-' | b'0'..=b'9') => self.parser.number().is_ok(),
            Some(b't' | b'f' | b'n') => self.parser.any(depth, false).is_ok(),
            Some(b'[') => self.plain_container(depth + 1, b']'),
            Some(b'{') => self.plain_container(depth + 1, b'}'),
            _ => false,
        }
    }

    /// At the opening quote: a string as `Parser::string` takes it, found
    /// here where it has no escape (and no control character), else read by
    /// `Parser::string` (a long value with a late escape is read once).
    fn plain_string(&mut self) -> bool {
        let bytes = self.parser.bytes;
        if bytes.get(self.parser.pos) != Some(&b'"') {
            return false;
        }
        let start = self.parser.pos + 1;
        let rest = &bytes[start..];
        match memchr::memchr2(b'"', b'\\', rest) {
            Some(stop) if rest[stop] == b'"' => {
                if !self.no_controls && first_control(&rest[..stop]).is_some() {
                    return false;
                }
                self.parser.pos = start + stop + 1;
                true
            }
            Some(_) => self.parser.string().is_ok(),
            None => false,
        }
    }

    /// At the opening bracket of a container at `depth`, closed by `close`:
    /// its plain members (`}`) or items (`]`), separated as the parser wants.
    fn plain_container(&mut self, depth: usize, close: u8) -> bool {
        if depth > self.parser.limits.max_depth {
            return false;
        }
        self.parser.pos += 1;
        self.parser.skip_ws();
        if self.eat(close) {
            return true;
        }
        loop {
            if close == b'}' {
                if !self.plain_string() {
                    return false;
                }
                self.parser.skip_ws();
                if !self.eat(b':') {
                    return false;
                }
                self.parser.skip_ws();
            }
            if !self.plain_value(depth) {
                return false;
            }
            self.parser.skip_ws();
            if !self.eat(b',') {
                return self.eat(close);
            }
            self.parser.skip_ws();
        }
    }

    /// A value spelled canonically: strings as `canonical_string` takes
    /// them, integers other than `-0`, finite floats spelled as Python's
    /// `repr` spells them (`canonical_float`), `true`, `false`, `null`, and arrays and objects of those
    /// with no whitespace and no key twice in one object. `depth` is the JSON
    /// nesting of the container it is in; `level` is the row rules' level of
    /// the value itself, and a container past `max_level` is not taken.
    pub fn canonical_value(&mut self, depth: usize, level: usize, max_level: usize) -> bool {
        match self.parser.peek() {
            Some(b'"') => self.canonical_string().is_some(),
            Some(b'-' | b'0'..=b'9') => match self.parser.number() {
                Ok(J::Num(text, false)) => text != "-0",
                Ok(J::Num(text, true)) => canonical_float(&text),
                _ => false,
            },
            Some(b't' | b'f' | b'n') => self.parser.any(depth, false).is_ok(),
            Some(open @ (b'[' | b'{')) => {
                if level > max_level || depth + 1 > self.parser.limits.max_depth {
                    return false;
                }
                self.parser.pos += 1;
                if open == b'[' {
                    self.canonical_items(depth + 1, level, max_level)
                } else {
                    self.canonical_members(depth + 1, level, max_level)
                }
            }
            _ => false,
        }
    }

    /// Past `[`: the items and the `]`.
    fn canonical_items(&mut self, depth: usize, level: usize, max_level: usize) -> bool {
        if self.eat(b']') {
            return true;
        }
        loop {
            if !self.canonical_value(depth, level + 1, max_level) {
                return false;
            }
            if !self.eat(b',') {
                return self.eat(b']');
            }
        }
    }

    /// Past `{`: the members and the `}`.
    fn canonical_members(&mut self, depth: usize, level: usize, max_level: usize) -> bool {
        self.members(|canon, _| canon.canonical_value(depth, level + 1, max_level))
    }

    /// Past `{`: the members and the `}`, with no whitespace and no key
    /// twice (keys as `canonical_string` takes them). `member` reads each
    /// value (the cursor is past the colon) and answers whether it took it.
    pub fn members(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> bool) -> bool {
        if self.eat(b'}') {
            return true;
        }
        let mut keys = Keys::default();
        loop {
            let Some(key) = self.canonical_string() else {
                return false;
            };
            if !keys.add(key) || !self.eat(b':') || !member(self, key) {
                return false;
            }
            if !self.eat(b',') {
                return self.eat(b'}');
            }
        }
    }
}

/// Append the string a canonical spelling stands for: `raw` is what
/// `Canon::canonical_string` gave (the text between the quotes).
pub fn push_unescaped(raw: &str, out: &mut String) {
    let mut rest = raw;
    while let Some(at) = memchr::memchr(b'\\', rest.as_bytes()) {
        out.push_str(&rest[..at]);
        let bytes = rest.as_bytes();
        let (ch, len) = match bytes.get(at + 1) {
            Some(b'n') => ('\n', 2),
            Some(b'r') => ('\r', 2),
            Some(b't') => ('\t', 2),
            Some(b'b') => ('\u{8}', 2),
            Some(b'f') => ('\u{c}', 2),
            Some(b'u') => {
                let code = rest
                    .get(at + 2..at + 6)
                    .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                    .and_then(char::from_u32)
                    .unwrap_or('\u{fffd}');
                (code, 6)
            }
            Some(&other) => (char::from(other), 2),
            None => ('\\', 1),
        };
        out.push(ch);
        rest = rest.get(at + len..).unwrap_or("");
    }
    out.push_str(rest);
}

/// Whether a JSON float's text is a finite number spelled as `py_float_repr`
/// spells it (what the output writes for it).
fn canonical_float(text: &str) -> bool {
    let Ok(value) = text.parse::<f64>() else {
        return false;
    };
    if !value.is_finite() {
        return false;
    }
    let mut spelled = String::with_capacity(text.len());
    py_float_repr(value, &mut spelled);
    spelled == text
}

/// The length of the escape at the start of `text` (a backslash) if
/// `write_json_str` writes it so.
fn canonical_escape(text: &[u8]) -> Option<usize> {
    match text.get(1)? {
        b'"' | b'\\' | b'n' | b'r' | b't' | b'b' | b'f' => Some(2),
        b'u' => {
            let [b'0', b'0', high @ (b'0' | b'1'), low] = *text.get(2..6)? else {
                return None;
            };
            let low = match low {
                b'0'..=b'9' => low - b'0',
                b'a'..=b'f' => low - b'a' + 10,
                _ => return None,
            };
            let code = (high - b'0') * 16 + low;
            // These five have a short form, which is what is written.
            (!matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d)).then_some(6)
        }
        _ => None,
    }
}

/// The keys of one object seen so far, to find a repeat without allocating.
#[derive(Default)]
pub struct Keys<'a> {
    seen: [&'a str; CANON_MAX_KEYS],
    len: usize,
}

impl<'a> Keys<'a> {
    /// False when `key` was seen before, or when there are too many to keep.
    pub fn add(&mut self, key: &'a str) -> bool {
        if self.len == CANON_MAX_KEYS || self.seen[..self.len].contains(&key) {
            return false;
        }
        self.seen[self.len] = key;
        self.len += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: JsonLimits = JsonLimits {
        max_depth: 128,
        max_int_digits: 4300,
    };

    fn repr(value: f64) -> String {
        let mut out = String::new();
        py_float_repr(value, &mut out);
        out
    }

    #[test]
    fn float_repr_matches_python() {
        let cases = [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e16, "1e+16"),
            (1.5e-7, "1.5e-07"),
            (123456789012345.6, "123456789012345.6"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-0.0, "-0.0"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            // An exact tie between two shortest candidates goes to the even digit.
            (779539845543410.0 + 0.25, "779539845543410.2"),
            (1e-4, "0.0001"),
            (9999999999999998.0, "9999999999999998.0"),
            (1e22, "1e+22"),
            (123e-20, "1.23e-18"),
            (2.2250738585072014e-308, "2.2250738585072014e-308"),
        ];
        for (value, want) in cases {
            assert_eq!(repr(value), want, "{value}");
        }
    }

    #[test]
    fn strings_escape_like_python() {
        let mut out = String::new();
        write_json_str("a\"b\\c\n\u{1}\u{7f}é", &mut out);
        assert_eq!(out, "\"a\\\"b\\\\c\\n\\u0001\u{7f}é\"");
    }

    #[test]
    fn syntax_errors_point_where_python_twin_does() {
        let cases = [
            ("{\"a\":}", Reason::ExpectedValue, 5),
            ("[1,]", Reason::ExpectedValue, 3),
            ("{\"a\" 1}", Reason::ExpectedColon, 5),
            ("{1:2}", Reason::ExpectedKey, 1),
            ("[1 2]", Reason::ExpectedArraySep, 3),
            ("\"abc", Reason::Unterminated, 0),
            ("\"\\x\"", Reason::BadEscape, 1),
            ("\"\\ud800\"", Reason::LoneSurrogate, 1),
            ("NaN", Reason::NanInfinity, 0),
            ("-Infinity", Reason::NanInfinity, 0),
            ("01", Reason::Trailing, 1),
            ("1.", Reason::BadNumber, 0),
            ("{} x", Reason::Trailing, 3),
            // A line cut short: what it ends inside, at its end.
            ("{\"a\":1", Reason::EndsInObject, 6),
            ("{\"a\": ", Reason::EndsInObject, 6),
            ("{\"a\"", Reason::EndsInObject, 4),
            ("{\"a\":1,", Reason::EndsInObject, 7),
            ("{", Reason::EndsInObject, 1),
            ("[1", Reason::EndsInArray, 2),
            ("[1, \r", Reason::EndsInArray, 5),
            ("[", Reason::EndsInArray, 1),
            ("{\"a\":[", Reason::EndsInArray, 6),
            ("[{}", Reason::EndsInArray, 3),
        ];
        for (text, reason, offset) in cases {
            match parse_line(text, LIMITS) {
                Err(err) => assert_eq!((err.reason, err.offset), (reason, offset), "{text}"),
                Ok(value) => panic!("{text} parsed as {value:?}"),
            }
        }
    }

    #[test]
    fn depth_limit() {
        let ok = "[".repeat(128) + &"]".repeat(128);
        assert!(parse_line(&ok, LIMITS).is_ok());
        let deep = "[".repeat(129) + &"]".repeat(129);
        assert!(matches!(
            parse_line(&deep, LIMITS),
            Err(SyntaxError {
                reason: Reason::TooDeep,
                offset: 128
            })
        ));
    }

    /// `Canon::step_over` and `Canon::skip_value` on `text` from offset 0:
    /// whether each took a value, and where each stopped when it did.
    fn both_skips(text: &str, limits: JsonLimits, no_controls: bool) -> [Option<usize>; 2] {
        let mut fast = Canon::new(text, limits, no_controls);
        let mut slow = Canon::new(text, limits, no_controls);
        [
            fast.step_over(1).then(|| fast.pos()),
            slow.skip_value(1).then(|| slow.pos()),
        ]
    }

    #[test]
    fn step_over_takes_what_skip_value_takes() {
        let cases = [
            "\"task-1\"",
            "0.25",
            "-0",
            "1e5",
            "01",
            "-",
            "1.",
            "{}",
            "[]",
            "[ ]",
            "{ }",
            "{\"a\":1,\"b\":[true,false,null]}",
            "{ \"a\" : \"b\" , \"c\" : { } }",
            "{\"a\":1,}",
            "[1,]",
            "[1 2]",
            "{\"a\" 1}",
            "{1:2}",
            "\"a\\nb\"",
            "\"\\x\"",
            "\"a\u{1}b\"",
            "\"abc",
            "tru",
            "nul",
            "NaN",
            "-Infinity",
            "{\"k\":\"\\ud800\"}",
            "[[[[]]]]",
            "\"\u{e9}\"",
            "{\"a\":{\"b\":{\"c\":[1,{\"d\":\"e\"}]}}}",
        ];
        for text in cases {
            let [fast, slow] = both_skips(text, LIMITS, false);
            assert_eq!(fast, slow, "{text}");
        }
        // The depth limit: the row is at depth 1, so a value may open max_depth - 1 more.
        let shallow = JsonLimits {
            max_depth: 3,
            max_int_digits: 4300,
        };
        for text in ["[[]]", "[[[]]]", "{\"a\":[]}", "{\"a\":{\"b\":1}}"] {
            let [fast, slow] = both_skips(text, shallow, false);
            assert_eq!(fast, slow, "{text}");
        }
        // The int digit limit.
        let short = JsonLimits {
            max_depth: 128,
            max_int_digits: 3,
        };
        for text in ["123", "1234", "[1234]", "1234.5", "{\"a\":12345}"] {
            let [fast, slow] = both_skips(text, short, false);
            assert_eq!(fast, slow, "{text}");
        }
    }

    #[test]
    fn step_over_agrees_with_skip_value_on_random_text() {
        // Texts of JSON's pieces in random order: most are refused, many are
        // taken; for every one, both take the same text or refuse it.
        let pieces = [
            "{", "}", "[", "]", ",", ":", " ", "\n", "\t", "\r", "\u{b}", "\u{c}", "\u{a0}", "\"",
            "\"k\"", "\"v w\"", "\\", "\\n", "\\u00e9", "\\ud800", "1", "0", "-", ".", "e", "+",
            "25", "true", "false", "null", "tru", "\u{1}", "\u{e9}", "NaN", "12345",
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        // xorshift64: the next pseudo-random number.
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut taken, mut plain) = (0, 0);
        for round in 0..200_000 {
            // Depth limits about the row's (1) and far from it; digit limits likewise.
            let limits = JsonLimits {
                max_depth: [2, 3, 4, 128][round % 4],
                max_int_digits: [1, 4, 4300][round % 3],
            };
            let mut text = String::new();
            let len = 1 + (next() % 12) as usize;
            for _ in 0..len {
                text.push_str(pieces[(next() >> 32) as usize % pieces.len()]);
            }
            let no_controls = !text.bytes().any(|b| b < 0x20);
            for flag in [false, no_controls] {
                let [fast, slow] = both_skips(&text, limits, flag);
                assert_eq!(fast, slow, "{text:?}");
                taken += usize::from(slow.is_some());
                plain += usize::from(Canon::new(&text, limits, flag).plain_value(1));
            }
        }
        // Many values are taken (every one of them plain: an escape is read by
        // the parser's string reader inside the plain path), many refused.
        assert!(
            plain > 10_000 && 2 * 200_000 - taken > 100_000,
            "{plain} plain, {taken} taken"
        );
    }

    #[test]
    fn surrogate_pairs_decode() {
        match parse_line("\"\\ud83d\\ude00\"", LIMITS) {
            Ok(J::Str(text)) => assert_eq!(text, "\u{1F600}"),
            other => panic!("{other:?}"),
        }
    }
}
