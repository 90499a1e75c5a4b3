//! The one error type of the Rust engine, and its single crossing into Python.
//!
//! Rust never formats a user-facing message: it reports a rule `code` plus the
//! facts (row index, path, type name, file line) and raises
//! `agent_rollout._native.NativeRowError`. The Python side formats every text
//! from the one table in `agent_rollout/_errors.py`, so both engines speak alike.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

create_exception!(
    _native,
    NativeRowError,
    PyValueError,
    "A rule broken by the input: args are (code, row index, path, fact, line, column)."
);

/// The deepest nesting a depth limit handed over from Python may allow. The
/// JSON parser and the walkers over values recurse once per level, the file
/// workers on threads with Rust's default 2 MiB stack: a line 20,000 levels
/// deep under a limit that let it through overflowed that stack (a crash, not
/// an error), and an unoptimised build needs about 2.2 KiB a level for nested
/// objects (1,000 levels overflowed). The shipped limits are 64 and 128
/// (`agent_rollout._limits`).
pub const MAX_NESTING: usize = 256;

/// `depth` as a depth limit, refused past `MAX_NESTING`. Only a caller of the
/// private `_native` functions can pass one; the message is for them.
pub fn nesting_limit(name: &str, depth: usize) -> PyResult<usize> {
    if depth > MAX_NESTING {
        return Err(PyValueError::new_err(format!(
            "{name} must be at most {MAX_NESTING}, got {depth}"
        )));
    }
    Ok(depth)
}

/// An enum of codes that cross into Python as strings: the variants, their
/// strings (`as_str`) and the list of all of them (`ALL`, in declaration
/// order) are written once, so none can be left out of `ALL`.
macro_rules! string_codes {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$doc:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$doc])* $variant, )+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The string Python sees (the key of its message table).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }
        }
    };
}

string_codes! {
    /// Every error code the engine raises: `NativeRowError.args[0]`. Each is a
    /// key of one of the message tables in `agent_rollout/_errors.py`
    /// (`ROW_MESSAGES`, `INPUT_MESSAGES`, `FILE_MESSAGES`, or `IO_CODES`);
    /// exported as `_native.CODES`.
    pub enum Code {
        // ---- a row broke a rule (`ROW_MESSAGES`) ----
        RowNotMapping = "row_not_mapping",
        PromptMissing = "prompt_missing",
        PromptType = "prompt_type",
        PromptEmpty = "prompt_empty",
        MessageNotMapping = "message_not_mapping",
        KeyNotStr = "key_not_str",
        RoleMissing = "role_missing",
        RoleType = "role_type",
        RoleEmpty = "role_empty",
        ValueType = "value_type",
        FloatNotFinite = "float_not_finite",
        /// A container nested past `max_depth` inside a message (not the JSON
        /// parser's nesting limit: that is `Reason::TooDeep`).
        TooDeep = "too_deep",
        AnswerType = "answer_type",
        /// Arrow tables hold one prompt kind: a message list in a text table.
        PromptNotText = "prompt_not_text",
        /// A str prompt in a table of message lists.
        PromptNotMessages = "prompt_not_messages",
        /// A str Arrow cannot hold (a lone surrogate).
        NotUtf8 = "not_utf8",
        /// An int Arrow cannot hold: past `i64`, so JSON text, and too long
        /// for Python to write as text (`sys.get_int_max_str_digits()`).
        IntTooLong = "int_too_long",
        // ---- the rows as a whole (`INPUT_MESSAGES`) ----
        InputNotIterable = "input_not_iterable",
        InputIsMapping = "input_is_mapping",
        TooManyRows = "too_many_rows",
        NoRows = "no_rows",
        // ---- a rollout file (`FILE_MESSAGES`) ----
        /// The fact is the `Reason`'s string.
        JsonSyntax = "json_syntax",
        Utf8 = "utf8",
        LineTooLong = "line_too_long",
        Gzip = "gzip",
        FileTooManyRows = "file_too_many_rows",
        FileTooLarge = "file_too_large",
        FileNoRows = "file_no_rows",
        // ---- an `OSError` (`IO_CODES`; the fact is the errno) ----
        IoRead = "io_read",
        IoWrite = "io_write",
    }
}

string_codes! {
    /// Why a JSONL line is not valid JSON: the fact of a `Code::JsonSyntax`
    /// fault, a key of `JSON_REASONS` in `agent_rollout/_errors.py`; exported
    /// as `_native.JSON_REASONS`.
    pub enum Reason {
        ExpectedValue = "expected_value",
        ExpectedArraySep = "expected_array_sep",
        ExpectedObjectSep = "expected_object_sep",
        ExpectedColon = "expected_colon",
        ExpectedKey = "expected_key",
        Unterminated = "unterminated_string",
        BadEscape = "bad_escape",
        BadUnicode = "bad_unicode_escape",
        LoneSurrogate = "lone_surrogate",
        ControlChar = "control_character",
        BadNumber = "bad_number",
        LongInt = "long_integer",
        NanInfinity = "nan_infinity",
        Trailing = "trailing_data",
        /// Arrays and objects nested past the JSON depth limit (not the row
        /// rule `Code::TooDeep`).
        TooDeep = "too_deep",
        Bom = "byte_order_mark",
        /// The line ends before an object or an array it opened is closed (a
        /// line cut short), where the reason would otherwise name what was
        /// expected next (`json::cut_short`).
        EndsInObject = "ends_in_object",
        EndsInArray = "ends_in_array",
    }
}

/// One step of a path inside a row: `prompt`, `[1]`, `.content`.
pub enum Seg {
    Index(usize),
    /// A key taken from a Python mapping (kept as the exact `str` object).
    PyKey(Py<PyAny>),
    /// A key parsed from a JSON document.
    Key(String),
}

/// A broken rule found below the row level; the row loop adds the index.
pub struct Rule {
    pub code: Code,
    /// Innermost segment first: segments are pushed while the error unwinds,
    /// so the happy path never pays for building paths.
    pub rev_path: Vec<Seg>,
    pub fact: Option<String>,
}

/// Everything that can stop a normalisation.
pub enum Fault {
    /// An exception raised by Python code the input ran (a generator, a
    /// mapping's `items`), or by the interpreter (memory, Ctrl-C): passed on.
    Py(PyErr),
    /// A row broke a rule.
    Row {
        rule: Rule,
        index: usize,
        line: Option<u64>,
    },
    /// The whole input broke a rule (not iterable, empty, over the cap, bad file).
    Input {
        code: Code,
        fact: Option<String>,
        line: Option<u64>,
        column: Option<usize>,
    },
}

impl From<PyErr> for Fault {
    fn from(err: PyErr) -> Self {
        Fault::Py(err)
    }
}

/// What a rule check below the row level returns.
pub enum Bad {
    Py(PyErr),
    Rule(Rule),
}

impl From<PyErr> for Bad {
    fn from(err: PyErr) -> Self {
        Bad::Py(err)
    }
}

impl Rule {
    pub fn new(code: Code, fact: Option<String>) -> Self {
        Rule {
            code,
            rev_path: Vec::new(),
            fact,
        }
    }

    /// Prepend one path segment while the error travels outwards.
    pub fn within(mut self, seg: Seg) -> Self {
        self.rev_path.push(seg);
        self
    }
}

impl Bad {
    pub fn rule(code: Code, fact: Option<String>) -> Self {
        Bad::Rule(Rule::new(code, fact))
    }

    /// Prepend one path segment while the error travels outwards.
    pub fn within(self, seg: Seg) -> Self {
        match self {
            Bad::Rule(rule) => Bad::Rule(rule.within(seg)),
            other => other,
        }
    }

    pub fn at_row(self, index: usize, line: Option<u64>) -> Fault {
        match self {
            Bad::Py(err) => Fault::Py(err),
            Bad::Rule(rule) => Fault::Row { rule, index, line },
        }
    }
}

impl Fault {
    pub fn input(code: Code, fact: Option<String>) -> Self {
        Fault::Input {
            code,
            fact,
            line: None,
            column: None,
        }
    }

    /// A problem at a place in a file (`line`, and `column` where known).
    pub fn at_line(code: Code, fact: Option<String>, line: u64, column: Option<usize>) -> Self {
        Fault::Input {
            code,
            fact,
            line: Some(line),
            column,
        }
    }

    /// Turn the fault into the Python exception, once, at the boundary.
    pub fn into_pyerr(self, py: Python<'_>) -> PyErr {
        let built = match self {
            Fault::Py(err) => return err,
            Fault::Row { rule, index, line } => {
                let segs: Vec<Py<PyAny>> = rule
                    .rev_path
                    .into_iter()
                    .rev()
                    .map(|seg| seg_to_py(py, seg))
                    .collect();
                PyTuple::new(py, segs).map(|path| {
                    NativeRowError::new_err((
                        rule.code.as_str(),
                        Some(index),
                        path.unbind(),
                        rule.fact,
                        line,
                        None::<usize>,
                    ))
                })
            }
            Fault::Input {
                code,
                fact,
                line,
                column,
            } => Ok(NativeRowError::new_err((
                code.as_str(),
                None::<usize>,
                PyTuple::empty(py).unbind(),
                fact,
                line,
                column,
            ))),
        };
        built.unwrap_or_else(|err| err)
    }
}

fn seg_to_py(py: Python<'_>, seg: Seg) -> Py<PyAny> {
    match seg {
        Seg::Index(i) => i
            .into_pyobject(py)
            .map(|v| v.into_any().unbind())
            .unwrap_or_else(|never| match never {}),
        Seg::PyKey(key) => key,
        Seg::Key(key) => pyo3::types::PyString::new(py, &key).into_any().unbind(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::{Code, Reason};

    /// The strings Python's tables know, in `ALL` order. Changing one is a
    /// change of the Python-facing contract, not a refactor.
    const CODE_STRINGS: [&str; 30] = [
        "row_not_mapping",
        "prompt_missing",
        "prompt_type",
        "prompt_empty",
        "message_not_mapping",
        "key_not_str",
        "role_missing",
        "role_type",
        "role_empty",
        "value_type",
        "float_not_finite",
        "too_deep",
        "answer_type",
        "prompt_not_text",
        "prompt_not_messages",
        "not_utf8",
        "int_too_long",
        "input_not_iterable",
        "input_is_mapping",
        "too_many_rows",
        "no_rows",
        "json_syntax",
        "utf8",
        "line_too_long",
        "gzip",
        "file_too_many_rows",
        "file_too_large",
        "file_no_rows",
        "io_read",
        "io_write",
    ];

    const REASON_STRINGS: [&str; 18] = [
        "expected_value",
        "expected_array_sep",
        "expected_object_sep",
        "expected_colon",
        "expected_key",
        "unterminated_string",
        "bad_escape",
        "bad_unicode_escape",
        "lone_surrogate",
        "control_character",
        "bad_number",
        "long_integer",
        "nan_infinity",
        "trailing_data",
        "too_deep",
        "byte_order_mark",
        "ends_in_object",
        "ends_in_array",
    ];

    /// Where a code is in `ALL`. An exhaustive match: a new variant does not
    /// compile until it is given its place here.
    fn code_place(code: Code) -> usize {
        match code {
            Code::RowNotMapping => 0,
            Code::PromptMissing => 1,
            Code::PromptType => 2,
            Code::PromptEmpty => 3,
            Code::MessageNotMapping => 4,
            Code::KeyNotStr => 5,
            Code::RoleMissing => 6,
            Code::RoleType => 7,
            Code::RoleEmpty => 8,
            Code::ValueType => 9,
            Code::FloatNotFinite => 10,
            Code::TooDeep => 11,
            Code::AnswerType => 12,
            Code::PromptNotText => 13,
            Code::PromptNotMessages => 14,
            Code::NotUtf8 => 15,
            Code::IntTooLong => 16,
            Code::InputNotIterable => 17,
            Code::InputIsMapping => 18,
            Code::TooManyRows => 19,
            Code::NoRows => 20,
            Code::JsonSyntax => 21,
            Code::Utf8 => 22,
            Code::LineTooLong => 23,
            Code::Gzip => 24,
            Code::FileTooManyRows => 25,
            Code::FileTooLarge => 26,
            Code::FileNoRows => 27,
            Code::IoRead => 28,
            Code::IoWrite => 29,
        }
    }

    /// Where a reason is in `ALL` (exhaustive, as `code_place`).
    fn reason_place(reason: Reason) -> usize {
        match reason {
            Reason::ExpectedValue => 0,
            Reason::ExpectedArraySep => 1,
            Reason::ExpectedObjectSep => 2,
            Reason::ExpectedColon => 3,
            Reason::ExpectedKey => 4,
            Reason::Unterminated => 5,
            Reason::BadEscape => 6,
            Reason::BadUnicode => 7,
            Reason::LoneSurrogate => 8,
            Reason::ControlChar => 9,
            Reason::BadNumber => 10,
            Reason::LongInt => 11,
            Reason::NanInfinity => 12,
            Reason::Trailing => 13,
            Reason::TooDeep => 14,
            Reason::Bom => 15,
            Reason::EndsInObject => 16,
            Reason::EndsInArray => 17,
        }
    }

    #[test]
    fn code_strings_are_unique() {
        let strings: HashSet<&str> = Code::ALL.iter().map(|code| code.as_str()).collect();
        assert_eq!(strings.len(), Code::ALL.len());
    }

    #[test]
    fn reason_strings_are_unique() {
        let strings: HashSet<&str> = Reason::ALL.iter().map(|reason| reason.as_str()).collect();
        assert_eq!(strings.len(), Reason::ALL.len());
    }

    #[test]
    fn code_all_lists_every_variant_once() {
        // Every variant has a place (the match is exhaustive) and the places
        // are 0..N-1 (N the strings Python knows), each taken by exactly one
        // entry of ALL: so ALL holds every variant, once, in order.
        assert_eq!(Code::ALL.len(), CODE_STRINGS.len());
        for (i, code) in Code::ALL.iter().enumerate() {
            assert_eq!(code_place(*code), i, "{code:?}");
            assert_eq!(*code as usize, i, "{code:?} is out of declaration order");
            assert_eq!(code.as_str(), CODE_STRINGS[i], "{code:?}");
        }
    }

    #[test]
    fn reason_all_lists_every_variant_once() {
        assert_eq!(Reason::ALL.len(), REASON_STRINGS.len());
        for (i, reason) in Reason::ALL.iter().enumerate() {
            assert_eq!(reason_place(*reason), i, "{reason:?}");
            assert_eq!(
                *reason as usize, i,
                "{reason:?} is out of declaration order"
            );
            assert_eq!(reason.as_str(), REASON_STRINGS[i], "{reason:?}");
        }
    }

    #[test]
    fn too_deep_is_two_codes() {
        // Same string, two meanings: a row rule and a JSON syntax reason.
        assert_eq!(Code::TooDeep.as_str(), Reason::TooDeep.as_str());
        assert_eq!(
            Code::ALL
                .iter()
                .filter(|c| c.as_str() == "too_deep")
                .count(),
            1
        );
    }
}
