//! Plain Arrow buffers: validity bits, string columns, and the `Buffer` handed to
//! Python (its address and size), with the spare text buffers kept for reuse.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::json::{push_unescaped, write_json_str, J};
use crate::jsonl::{self, Spare, CHUNK_BYTES};

use super::offset;

// ---- buffers -------------------------------------------------------------------------------

/// A bitmap being built (validity, or the values of a bool column).
pub(super) struct Bits {
    pub(super) bytes: Vec<u8>,
    pub(super) len: usize,
    pub(super) unset: usize,
    /// A validity with no unset bit yet: nothing is stored (most columns
    /// have no null, and a bitmap with none is never handed over).
    lazy: bool,
}

impl Bits {
    /// A validity bitmap.
    pub(super) fn new() -> Self {
        Bits {
            bytes: Vec::new(),
            len: 0,
            unset: 0,
            lazy: true,
        }
    }

    /// The values of a bool column: every bit stored.
    pub(super) fn values() -> Self {
        Bits {
            lazy: false,
            ..Bits::new()
        }
    }

    /// `len` set bits (a validity with no nulls: never handed over).
    pub(super) fn all_set(len: usize) -> Self {
        Bits { len, ..Bits::new() }
    }

    #[inline]
    pub(super) fn push(&mut self, set: bool) {
        if self.lazy {
            if set {
                self.len += 1;
                return;
            }
            // The first unset bit: store the set ones before it.
            self.bytes = vec![0xFF; self.len / 8];
            if self.len % 8 != 0 {
                self.bytes.push((1u8 << (self.len % 8)) - 1);
            }
            self.lazy = false;
        }
        if self.len % 8 == 0 {
            self.bytes.push(0);
        }
        if set {
            if let Some(byte) = self.bytes.last_mut() {
                *byte |= 1 << (self.len % 8);
            }
        } else {
            self.unset += 1;
        }
        self.len += 1;
    }

    pub(super) fn is_set(&self, i: usize) -> bool {
        self.unset == 0
            || self
                .bytes
                .get(i / 8)
                .is_some_and(|b| b & (1 << (i % 8)) != 0)
    }

    /// As a validity bitmap: None when every bit is set.
    pub(super) fn validity(self, py: Python<'_>) -> PyResult<Option<Py<Buffer>>> {
        if self.unset == 0 {
            return Ok(None);
        }
        Buffer::new(py, Words::U8(self.bytes)).map(Some)
    }
}

/// One Arrow string column being built (also the storage of a JSON column).
pub(super) struct StrCol {
    pub(super) offsets: Vec<i32>,
    pub(super) data: String,
    pub(super) valid: Bits,
}

impl StrCol {
    pub(super) fn new() -> Self {
        StrCol {
            offsets: vec![0],
            data: String::new(),
            valid: Bits::new(),
        }
    }

    /// A column for a batch's long text (prompts, message contents): its bytes
    /// go into a buffer pyarrow let go of, if one is kept (`SPARE_TEXT`).
    pub(super) fn text() -> Self {
        let data = SPARE_TEXT.take().map_or_else(String::new, |mut bytes| {
            bytes.clear();
            String::from_utf8(bytes).unwrap_or_default() // empty: always UTF-8
        });
        StrCol {
            data,
            ..StrCol::new()
        }
    }

    #[inline]
    pub(super) fn end_value(&mut self, set: bool) -> Result<(), String> {
        self.offsets.push(offset(self.data.len())?);
        self.valid.push(set);
        Ok(())
    }

    #[inline]
    pub(super) fn push(&mut self, value: Option<&str>) -> Result<(), String> {
        if let Some(text) = value {
            self.data.push_str(text);
        }
        self.end_value(value.is_some())
    }

    /// A str as `Canon::canonical_string` gave it (escapes as they stand).
    pub(super) fn push_canonical(&mut self, raw: Option<&str>) -> Result<(), String> {
        if let Some(raw) = raw {
            push_unescaped(raw, &mut self.data);
        }
        self.end_value(raw.is_some())
    }

    /// A value as compact JSON text (`null` is a null entry).
    pub(super) fn push_json(&mut self, value: &J<'_>) -> Result<(), String> {
        if matches!(value, J::Null) {
            return self.push(None);
        }
        jsonl::write_value(value, &mut self.data);
        self.end_value(true)
    }

    /// A str as JSON text (a quoted string).
    pub(super) fn push_json_str(&mut self, text: &str) -> Result<(), String> {
        write_json_str(text, &mut self.data);
        self.end_value(true)
    }

    /// Value `i`, if it is not null.
    pub(super) fn get(&self, i: usize) -> Option<&str> {
        if !self.valid.is_set(i) {
            return None;
        }
        let start = usize::try_from(*self.offsets.get(i)?).ok()?;
        let end = usize::try_from(*self.offsets.get(i + 1)?).ok()?;
        self.data.get(start..end)
    }
}

/// The values of one Arrow buffer, as built: bytes, or native-endian words.
pub(super) enum Words {
    U8(Vec<u8>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

/// One Arrow buffer as it was built, handed to pyarrow where it lies:
/// `agent_rollout.arrow.array_of` wraps it with `pyarrow.foreign_buffer(address,
/// size, base=it)`, and pyarrow keeps it alive as long as any array uses the
/// memory. Nothing writes to its values once it is made (it is frozen, they are
/// private, no method lends them mutably), so the address holds for its whole
/// life. Before, every buffer was copied into a `bytes` on the calling thread,
/// interpreter held: about 4% of a JSONL -> Parquet call's CPU, page faults
/// included.
#[pyclass(frozen, weakref, module = "agent_rollout._native")]
pub struct Buffer {
    words: Words,
}

/// Text buffers pyarrow let go of, kept for the next batches' long text
/// (`StrCol::text`), at most 16 of at most `CHUNK_BYTES` each, for the life of
/// the process. A new buffer is faulted in page by page as it is written, and
/// glibc gives megabyte-sized blocks back to the kernel when they are freed:
/// before, writing the text columns took 80% of a JSONL -> Parquet call's
/// page faults (about 6,000 of 7,500 for 100k rows). A JSONL -> Parquet call
/// gives them back as each row group is written (a group of 16,384 rows is
/// about 7 chunks), for the chunks read after that.
static SPARE_TEXT: Spare<Vec<u8>> = Spare::new(16);

/// The buffers worth keeping: about a chunk's text (a chunk is at most
/// `CHUNK_BYTES` of JSON, but for a line longer than that), not a small one.
const SPARE_TEXT_BYTES: std::ops::RangeInclusive<usize> = (64 << 10)..=CHUNK_BYTES;

impl Drop for Buffer {
    fn drop(&mut self) {
        if let Words::U8(values) = &mut self.words {
            if SPARE_TEXT_BYTES.contains(&values.capacity()) {
                SPARE_TEXT.keep(std::mem::take(values));
            }
        }
    }
}

impl Buffer {
    /// The first byte's address and the length in bytes.
    fn span(&self) -> (usize, usize) {
        fn of<T>(values: &[T]) -> (usize, usize) {
            (values.as_ptr().addr(), std::mem::size_of_val(values))
        }
        match &self.words {
            Words::U8(values) => of(values),
            Words::I32(values) => of(values),
            Words::I64(values) => of(values),
            Words::F64(values) => of(values),
        }
    }

    /// The values, their spare capacity given back first: it is held as long
    /// as pyarrow holds the array, and a column grown by doubling holds up to
    /// twice its length, much of it resident (1M rows to Parquet peaked at
    /// 169-172 MiB keeping it, or only spares over a quarter, against 152 MiB).
    /// Shrinking in place copies nothing under glibc; an allocator that moves
    /// a shrunk block (musl, for small ones) copies it, once, as every buffer
    /// was copied before.
    pub(super) fn new(py: Python<'_>, mut words: Words) -> PyResult<Py<Buffer>> {
        match &mut words {
            Words::U8(values) => values.shrink_to_fit(),
            Words::I32(values) => values.shrink_to_fit(),
            Words::I64(values) => values.shrink_to_fit(),
            Words::F64(values) => values.shrink_to_fit(),
        }
        Py::new(py, Buffer { words })
    }
}

#[pymethods]
impl Buffer {
    /// Where the first byte is (meaningless when `size` is 0).
    #[getter]
    fn address(&self) -> usize {
        self.span().0
    }

    /// The length in bytes.
    #[getter]
    fn size(&self) -> usize {
        self.span().1
    }

    /// A copy of the bytes (for tests and debugging; pyarrow does not need one).
    fn __bytes__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        fn put<T, const N: usize>(raw: &mut [u8], values: &[T], bytes: impl Fn(&T) -> [u8; N]) {
            for (slot, value) in raw.chunks_exact_mut(N).zip(values) {
                slot.copy_from_slice(&bytes(value));
            }
        }
        PyBytes::new_with(py, self.size(), |raw| {
            match &self.words {
                Words::U8(values) => raw.copy_from_slice(values),
                Words::I32(values) => put(raw, values, |v| v.to_ne_bytes()),
                Words::I64(values) => put(raw, values, |v| v.to_ne_bytes()),
                Words::F64(values) => put(raw, values, |v| v.to_ne_bytes()),
            }
            Ok(())
        })
    }
}
