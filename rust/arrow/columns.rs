//! Columns of each type (`Col`) and the `Column` tree Python assembles with
//! `pyarrow.Array.from_buffers`.

use pyo3::prelude::*;

use crate::json::J;

use super::buffers::{Bits, Buffer, StrCol, Words};
use super::types::Ty;
use super::{offset, MISMATCH};

// ---- columns -------------------------------------------------------------------------------

/// A column being built, of one `Ty`.
pub(super) enum Col {
    Null {
        len: usize,
    },
    Bool {
        valid: Bits,
        values: Bits,
    },
    Int {
        valid: Bits,
        values: Vec<i64>,
    },
    Float {
        valid: Bits,
        values: Vec<f64>,
    },
    Str(StrCol),
    Json(StrCol),
    List {
        valid: Bits,
        offsets: Vec<i32>,
        child: Box<Col>,
    },
    Struct {
        valid: Bits,
        names: Vec<String>,
        children: Vec<Col>,
    },
}

impl Col {
    pub(super) fn new(ty: &Ty) -> Col {
        match ty {
            Ty::Null => Col::Null { len: 0 },
            Ty::Bool => Col::Bool {
                valid: Bits::new(),
                values: Bits::values(),
            },
            Ty::Int => Col::Int {
                valid: Bits::new(),
                values: Vec::new(),
            },
            Ty::Float => Col::Float {
                valid: Bits::new(),
                values: Vec::new(),
            },
            Ty::Str => Col::Str(StrCol::new()),
            Ty::Json => Col::Json(StrCol::new()),
            Ty::List(item) => Col::List {
                valid: Bits::new(),
                offsets: vec![0],
                child: Box::new(Col::new(item)),
            },
            Ty::Struct(fields) => Col::Struct {
                valid: Bits::new(),
                names: fields.iter().map(|(name, _)| name.clone()).collect(),
                children: fields.iter().map(|(_, ty)| Col::new(ty)).collect(),
            },
        }
    }

    pub(super) fn len(&self) -> usize {
        match self {
            Col::Null { len } => *len,
            Col::Str(col) | Col::Json(col) => col.valid.len,
            Col::Bool { valid, .. }
            | Col::Int { valid, .. }
            | Col::Float { valid, .. }
            | Col::List { valid, .. }
            | Col::Struct { valid, .. } => valid.len,
        }
    }

    pub(super) fn push_null(&mut self) -> Result<(), String> {
        match self {
            Col::Null { len } => *len += 1,
            Col::Bool { valid, values } => {
                valid.push(false);
                values.push(false);
            }
            Col::Int { valid, values } => {
                valid.push(false);
                values.push(0);
            }
            Col::Float { valid, values } => {
                valid.push(false);
                values.push(0.0);
            }
            Col::Str(col) | Col::Json(col) => col.push(None)?,
            Col::List { valid, offsets, .. } => {
                let last = offsets.last().copied().unwrap_or(0);
                offsets.push(last);
                valid.push(false);
            }
            Col::Struct {
                valid, children, ..
            } => {
                for child in children.iter_mut() {
                    child.push_null()?;
                }
                valid.push(false);
            }
        }
        Ok(())
    }

    /// Nulls until the column holds `len` values.
    pub(super) fn pad_to(&mut self, len: usize) -> Result<(), String> {
        while self.len() < len {
            self.push_null()?;
        }
        Ok(())
    }

    /// Append `value`, which the column's type holds (the batch was typed from it).
    pub(super) fn push(&mut self, value: &J<'_>) -> Result<(), String> {
        if matches!(value, J::Null) {
            return self.push_null();
        }
        match (&mut *self, value) {
            (Col::Bool { valid, values }, J::Bool(flag)) => {
                valid.push(true);
                values.push(*flag);
            }
            (Col::Int { valid, values }, J::Num(text, false)) => {
                values.push(text.parse().map_err(|_| MISMATCH.to_string())?);
                valid.push(true);
            }
            (Col::Float { valid, values }, J::Num(text, true)) => {
                values.push(text.parse().map_err(|_| MISMATCH.to_string())?);
                valid.push(true);
            }
            (Col::Str(col), J::Str(text)) => col.push(Some(text))?,
            (Col::Json(col), value) => col.push_json(value)?,
            (
                Col::List {
                    valid,
                    offsets,
                    child,
                },
                J::Arr(items),
            ) => {
                for item in items {
                    child.push(item)?;
                }
                offsets.push(offset(child.len())?);
                valid.push(true);
            }
            (
                Col::Struct {
                    valid, children, ..
                },
                J::Obj(members),
            ) if members.len() == children.len() => {
                for (child, (_, item)) in children.iter_mut().zip(members) {
                    child.push(item)?;
                }
                valid.push(true);
            }
            _ => return Err(MISMATCH.to_string()),
        }
        Ok(())
    }

    /// The column as Python objects (`Column`).
    pub(super) fn into_py(self, py: Python<'_>) -> PyResult<Py<Column>> {
        let mut column = Column {
            kind: "null",
            len: self.len(),
            null_count: 0,
            validity: None,
            offsets: None,
            data: None,
            children: Vec::new(),
            names: Vec::new(),
        };
        match self {
            Col::Null { len } => column.null_count = len,
            Col::Bool { valid, values } => {
                column.kind = "bool";
                column.null_count = valid.unset;
                column.validity = valid.validity(py)?;
                column.data = Some(Buffer::new(py, Words::U8(values.bytes))?);
            }
            Col::Int { valid, values } => {
                column.kind = "int64";
                column.null_count = valid.unset;
                column.validity = valid.validity(py)?;
                column.data = Some(Buffer::new(py, Words::I64(values))?);
            }
            Col::Float { valid, values } => {
                column.kind = "float64";
                column.null_count = valid.unset;
                column.validity = valid.validity(py)?;
                column.data = Some(Buffer::new(py, Words::F64(values))?);
            }
            Col::Str(col) => fill_strings(py, &mut column, "string", col)?,
            Col::Json(col) => fill_strings(py, &mut column, "json", col)?,
            Col::List {
                valid,
                offsets,
                child,
            } => {
                column.kind = "list";
                column.null_count = valid.unset;
                column.validity = valid.validity(py)?;
                column.offsets = Some(Buffer::new(py, Words::I32(offsets))?);
                column.children.push(child.into_py(py)?);
            }
            Col::Struct {
                valid,
                names,
                children,
            } => {
                column.kind = "struct";
                column.null_count = valid.unset;
                column.validity = valid.validity(py)?;
                column.names = names;
                for child in children {
                    column.children.push(child.into_py(py)?);
                }
            }
        }
        Py::new(py, column)
    }
}

fn fill_strings(
    py: Python<'_>,
    column: &mut Column,
    kind: &'static str,
    col: StrCol,
) -> PyResult<()> {
    column.kind = kind;
    column.null_count = col.valid.unset;
    column.validity = col.valid.validity(py)?;
    column.offsets = Some(Buffer::new(py, Words::I32(col.offsets))?);
    column.data = Some(Buffer::new(py, Words::U8(col.data.into_bytes()))?);
    Ok(())
}

/// One Arrow array as buffers (`_native.Column`), as
/// `pyarrow.Array.from_buffers` takes them.
#[pyclass(frozen, get_all, module = "agent_rollout._native")]
pub struct Column {
    /// `"null"`, `"bool"`, `"int64"`, `"float64"`, `"string"`, `"json"`
    /// (a string column of JSON text: `arrow.json`), `"list"` or `"struct"`.
    kind: &'static str,
    len: usize,
    null_count: usize,
    /// The validity bitmap (bit i set: value i is not null); None when no
    /// value is null.
    validity: Option<Py<Buffer>>,
    /// `len + 1` native-endian `int32` offsets (string, json, list).
    offsets: Option<Py<Buffer>>,
    /// The values: UTF-8 bytes (string, json), a bitmap (bool), native-endian
    /// 8-byte numbers (int64, float64).
    data: Option<Py<Buffer>>,
    /// The item column of a list; the field columns of a struct.
    children: Vec<Py<Column>>,
    /// The field names of a struct.
    names: Vec<String>,
}

/// One record batch as buffers (`_native.ArrowBatch`), assembled by
/// `agent_rollout.arrow.batch_from_buffers`.
#[pyclass(frozen, get_all, module = "agent_rollout._native")]
pub struct ArrowBatch {
    /// `"text"` or `"messages"`: the prompt kind of the batch.
    pub(super) kind: &'static str,
    pub(super) rows: usize,
    /// A string column (text) or a list of message structs (messages).
    pub(super) prompt: Py<Column>,
    pub(super) answer: Py<Column>,
}
