//! The type lattice of a column (`Ty`), the join of `agent_rollout.arrow.merge_schemas`.

use crate::json::J;

// ---- types: the lattice of `agent_rollout.arrow.merge_schemas` -----------------------------

/// The Arrow type of the values at one place of a message. A join
/// semilattice: `Null` (no value seen but null) is below everything, `Json`
/// (`arrow.json`: the values as JSON text) above everything; two different
/// kinds join to `Json`, lists join their items, and objects stay a struct
/// only while every object has the same keys in the same order.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Ty {
    Null,
    Bool,
    Int,
    Float,
    Str,
    Json,
    List(Box<Ty>),
    Struct(Vec<(String, Ty)>),
}

fn fits_i64(text: &str) -> bool {
    text.parse::<i64>().is_ok()
}

impl Ty {
    /// The type of one value at nesting `level` of a message (a message key's
    /// value is level 2); a list or object deeper than `typed_depth` is JSON.
    fn of(value: &J<'_>, level: usize, typed_depth: usize) -> Ty {
        match value {
            J::Null => Ty::Null,
            J::Bool(_) => Ty::Bool,
            J::Num(text, false) => {
                if fits_i64(text) {
                    Ty::Int
                } else {
                    Ty::Json
                }
            }
            J::Num(_, true) => Ty::Float,
            J::Str(_) => Ty::Str,
            J::Arr(_) | J::Obj(_) if level > typed_depth => Ty::Json,
            J::Arr(items) => {
                let mut item = Ty::Null;
                for value in items {
                    item.absorb(value, level + 1, typed_depth);
                }
                Ty::List(Box::new(item))
            }
            J::Obj(members) if members.is_empty() => Ty::Json,
            J::Obj(members) => Ty::Struct(
                members
                    .iter()
                    .map(|(key, value)| (key.to_string(), Ty::of(value, level + 1, typed_depth)))
                    .collect(),
            ),
        }
    }

    /// Join the type of `value`, at nesting `level` of a message, into this one.
    pub(super) fn absorb(&mut self, value: &J<'_>, level: usize, typed_depth: usize) {
        if matches!(value, J::Null) || matches!(self, Ty::Json) {
            return;
        }
        if matches!(self, Ty::Null) {
            *self = Ty::of(value, level, typed_depth);
            return;
        }
        let keeps = match (&mut *self, value) {
            (Ty::Bool, J::Bool(_)) | (Ty::Str, J::Str(_)) | (Ty::Float, J::Num(_, true)) => true,
            (Ty::Int, J::Num(text, false)) => fits_i64(text),
            (Ty::List(item), J::Arr(items)) => {
                for value in items {
                    item.absorb(value, level + 1, typed_depth);
                }
                true
            }
            (Ty::Struct(fields), J::Obj(members)) => {
                let same_keys = fields.len() == members.len()
                    && fields
                        .iter()
                        .zip(members)
                        .all(|((name, _), (key, _))| name == key);
                if same_keys {
                    for ((_, ty), (_, value)) in fields.iter_mut().zip(members) {
                        ty.absorb(value, level + 1, typed_depth);
                    }
                }
                same_keys
            }
            _ => false,
        };
        if !keeps {
            *self = Ty::Json;
        }
    }
}
