use std::borrow::Cow;

use crate::json::J;

use super::buffers::Bits;
use super::columns::Col;
use super::types::Ty;

fn num(text: &str, float: bool) -> J<'static> {
    J::Num(Cow::Owned(text.to_string()), float)
}

fn obj(members: Vec<(&str, J<'static>)>) -> J<'static> {
    J::Obj(
        members
            .into_iter()
            .map(|(k, v)| (Cow::Owned(k.to_string()), v))
            .collect(),
    )
}

fn joined(values: &[J<'static>]) -> Ty {
    joined_within(values, usize::MAX)
}

/// The join of values of a message key (level 2), typed to `typed_depth`.
fn joined_within(values: &[J<'static>], typed_depth: usize) -> Ty {
    let mut ty = Ty::Null;
    for value in values {
        ty.absorb(value, 2, typed_depth);
    }
    ty
}

#[test]
fn a_validity_stores_nothing_until_its_first_null_then_every_bit() {
    for first_null in [0usize, 1, 7, 8, 9, 15, 16, 17, 40] {
        let (mut lazy, mut eager) = (Bits::new(), Bits::values());
        for i in 0..48 {
            let set = i != first_null && i % 5 != 3 || i < first_null;
            lazy.push(set);
            eager.push(set);
            if i < first_null {
                assert!(lazy.bytes.is_empty(), "stored before the first null");
            }
        }
        assert_eq!((lazy.len, lazy.unset), (eager.len, eager.unset));
        assert_eq!(lazy.bytes, eager.bytes, "first null at {first_null}");
        assert!((0..48).all(|i| lazy.is_set(i) == eager.is_set(i)));
    }
}

#[test]
fn the_lattice_joins_like_merge_schemas() {
    assert_eq!(joined(&[J::Null]), Ty::Null);
    assert_eq!(joined(&[num("1", false), J::Null]), Ty::Int);
    assert_eq!(joined(&[num("1", false), num("1.5", true)]), Ty::Json);
    assert_eq!(joined(&[num("99999999999999999999", false)]), Ty::Json);
    assert_eq!(joined(&[J::Bool(true), num("1", false)]), Ty::Json);
    assert_eq!(joined(&[obj(vec![])]), Ty::Json);
    let a = obj(vec![("x", num("1", false))]);
    let b = obj(vec![("x", J::Null)]);
    let c = obj(vec![("y", num("1", false))]);
    assert_eq!(
        joined(&[a.clone(), b]),
        Ty::Struct(vec![("x".into(), Ty::Int)])
    );
    assert_eq!(joined(&[a, c]), Ty::Json);
    let list = J::Arr(vec![num("1", false), J::Str(Cow::Borrowed("s"))]);
    assert_eq!(joined(&[list]), Ty::List(Box::new(Ty::Json)));
    assert_eq!(joined(&[J::Arr(vec![])]), Ty::List(Box::new(Ty::Null)));
}

#[test]
fn lists_and_objects_past_the_typed_depth_are_json() {
    let int = || num("1", false);
    let nested = J::Arr(vec![J::Arr(vec![int()])]);
    let list = |item: Ty| Ty::List(Box::new(item));
    assert_eq!(
        joined_within(std::slice::from_ref(&nested), 3),
        list(list(Ty::Int))
    );
    assert_eq!(
        joined_within(std::slice::from_ref(&nested), 2),
        list(Ty::Json)
    );
    assert_eq!(joined_within(&[nested], 1), Ty::Json);
    let object = obj(vec![("a", obj(vec![("b", int())]))]);
    let inner = Ty::Struct(vec![("b".into(), Ty::Int)]);
    assert_eq!(
        joined_within(std::slice::from_ref(&object), 3),
        Ty::Struct(vec![("a".into(), inner)])
    );
    assert_eq!(
        joined_within(&[object.clone(), J::Null], 2),
        Ty::Struct(vec![("a".into(), Ty::Json)])
    );
    // A scalar is never too deep; once JSON, a later list keeps it JSON.
    assert_eq!(joined_within(&[int()], 1), Ty::Int);
    assert_eq!(joined_within(&[J::Null, object], 1), Ty::Json);
}

#[test]
fn columns_refuse_values_of_another_type_without_panicking() {
    let mut column = Col::new(&Ty::Int);
    assert!(column.push(&J::Str(Cow::Borrowed("x"))).is_err());
    assert!(column.push(&num("7", false)).is_ok());
    assert!(column.push(&J::Null).is_ok());
    assert_eq!(column.len(), 2);
    let mut column = Col::new(&Ty::Struct(vec![("a".into(), Ty::Bool)]));
    assert!(column.push(&obj(vec![])).is_err());
    assert!(column.push(&obj(vec![("a", J::Bool(true))])).is_ok());
    assert!(column.pad_to(5).is_ok());
    assert_eq!(column.len(), 5);
}
