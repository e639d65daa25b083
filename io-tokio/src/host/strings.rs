//! The strings of owned requests, made without a heap allocation in steady state: catalog
//! names shared from a per-server table ([`Name`]), and text copied out of a request
//! into a buffer the server reuses ([`PooledString`]; the [`Pool`] behind it also keeps
//! the buffers of the client's input responses, `request::InputContext`).

use core::fmt;
use std::borrow::Borrow;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, PoisonError};

/// A name from the catalog (a tool's, a prompt's, a resource template's uri template),
/// shared: the server keeps one copy of each name and hands out references to it, so
/// cloning one is cheap and making one allocates nothing once the name was seen.
///
/// Reads as a `&str` ([`as_str`](Self::as_str), [`Deref`]) and compares with string
/// types: `call.name == "echo"`, `match call.name.as_str() { .. }`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name(Arc<str>);

impl Name {
    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The shared text itself (no copy).
    #[cfg(feature = "otel")]
    pub(crate) fn shared(&self) -> Arc<str> {
        Arc::clone(&self.0)
    }
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Name {
    fn from(name: &str) -> Self {
        Self(name.into())
    }
}

impl From<String> for Name {
    fn from(name: String) -> Self {
        Self(name.into())
    }
}

impl From<&String> for Name {
    fn from(name: &String) -> Self {
        Self(name.as_str().into())
    }
}

impl From<Arc<str>> for Name {
    fn from(name: Arc<str>) -> Self {
        Self(name)
    }
}

impl From<Name> for String {
    fn from(name: Name) -> Self {
        name.0.as_ref().to_owned()
    }
}

/// A string copied out of a request (a tool's or prompt's arguments, a resource's uri),
/// in a buffer the server takes back for the next request once this is dropped, so that
/// making one allocates nothing in steady state.
///
/// Reads as a `&str` ([`as_str`](Self::as_str), [`Deref`]) and compares with string
/// types. [`into_string`](Self::into_string) (or `String::from`) keeps the buffer.
#[derive(Default, Clone)]
pub struct PooledString(Pooled<String>);

impl PooledString {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text as a `String`, which the server does not get back.
    pub fn into_string(self) -> String {
        self.0.into_inner()
    }
}

impl Deref for PooledString {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for PooledString {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for PooledString {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq for PooledString {
    fn eq(&self, other: &Self) -> bool {
        *self.0 == *other.0
    }
}

impl Eq for PooledString {}

impl Hash for PooledString {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (*self.0).hash(state);
    }
}

impl fmt::Debug for PooledString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for PooledString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for PooledString {
    fn from(text: String) -> Self {
        Self(Pooled::unpooled(text))
    }
}

impl From<&str> for PooledString {
    fn from(text: &str) -> Self {
        Self::from(text.to_owned())
    }
}

impl From<&String> for PooledString {
    fn from(text: &String) -> Self {
        Self::from(text.clone())
    }
}

impl From<PooledString> for String {
    fn from(s: PooledString) -> Self {
        s.into_string()
    }
}

/// Comparisons with the string types, both ways.
macro_rules! str_eq {
    ($($t:ty),*) => {$(
        impl PartialEq<str> for $t {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }
        impl PartialEq<&str> for $t {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
        impl PartialEq<String> for $t {
            fn eq(&self, other: &String) -> bool {
                self.as_str() == other.as_str()
            }
        }
        impl PartialEq<$t> for str {
            fn eq(&self, other: &$t) -> bool {
                self == other.as_str()
            }
        }
        impl PartialEq<$t> for &str {
            fn eq(&self, other: &$t) -> bool {
                *self == other.as_str()
            }
        }
        impl PartialEq<$t> for String {
            fn eq(&self, other: &$t) -> bool {
                self.as_str() == other.as_str()
            }
        }
    )*};
}

str_eq!(Name, PooledString);

/// Buffers kept at most, per pool.
const POOLED: usize = 256;

/// A buffer holding more than this is not kept (it came with an unusually large request).
const POOLED_CAPACITY: usize = 64 * 1024;

/// A new string buffer holds at least this much, so that one buffer serves requests of
/// varied sizes.
const MIN_CAPACITY: usize = 256;

/// A buffer a [`Pool`] keeps between uses.
pub(crate) trait Reuse: Default {
    /// The bytes it has room for: a buffer of none is not worth keeping, and one of more
    /// than [`POOLED_CAPACITY`] is not kept.
    fn room(&self) -> usize;
    /// Empties it, keeping its room.
    fn clear(&mut self);
}

impl Reuse for String {
    fn room(&self) -> usize {
        self.capacity()
    }
    fn clear(&mut self) {
        Self::clear(self);
    }
}

/// Buffers shared by a server and the requests it hands out: a request takes one
/// ([`Pool::take`]) and gives it back when dropped, for the next request.
pub(crate) struct Pool<T>(Arc<Mutex<Vec<T>>>);

impl<T> Clone for Pool<T> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<T> Default for Pool<T> {
    fn default() -> Self {
        Self(Arc::default())
    }
}

impl<T: Reuse> Pool<T> {
    /// A kept buffer, empty, or a new one; either goes back to this pool when dropped.
    pub(crate) fn take(&self) -> Pooled<T> {
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner).pop();
        Pooled { value: kept.unwrap_or_default(), pool: Some(self.clone()) }
    }

    fn put(&self, mut buf: T) {
        let room = buf.room();
        if room == 0 || room > POOLED_CAPACITY {
            return;
        }
        buf.clear();
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() < POOLED {
            kept.push(buf);
        }
    }
}

/// The buffers of [`PooledString`]s.
pub(crate) type StringPool = Pool<String>;

impl Pool<String> {
    /// A copy of `text` in a pooled buffer.
    pub(crate) fn copy(&self, text: &str) -> PooledString {
        let mut buf = self.take();
        if buf.capacity() == 0 {
            buf.reserve(text.len().max(MIN_CAPACITY));
        }
        buf.push_str(text);
        PooledString(buf)
    }
}

/// A buffer taken from a [`Pool`] (or made outside one), given back when dropped. Reads
/// and writes as the buffer ([`Deref`], [`DerefMut`]).
#[derive(Default)]
pub(crate) struct Pooled<T: Reuse> {
    value: T,
    /// Where the buffer goes back to; `None` for one made outside a server.
    pool: Option<Pool<T>>,
}

impl<T: Reuse> Pooled<T> {
    /// `value`, in no pool.
    pub(crate) fn unpooled(value: T) -> Self {
        Self { value, pool: None }
    }

    /// The buffer, which its pool does not get back.
    pub(crate) fn into_inner(mut self) -> T {
        self.pool = None;
        std::mem::take(&mut self.value)
    }
}

impl<T: Reuse> Drop for Pooled<T> {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            pool.put(std::mem::take(&mut self.value));
        }
    }
}

impl<T: Reuse + Clone> Clone for Pooled<T> {
    /// A copy in a buffer of its own (not the pool's).
    fn clone(&self) -> Self {
        Self::unpooled(self.value.clone())
    }
}

impl<T: Reuse> Deref for Pooled<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: Reuse> DerefMut for Pooled<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

/// The names a server has handed out, one shared copy each.
#[derive(Default)]
pub(crate) struct Names(HashSet<Arc<str>>);

/// Names kept at most; past it the table starts over (a catalog only has so many, but
/// catalogs may be replaced any number of times).
const NAMES: usize = 4096;

impl Names {
    /// The shared copy of `name`.
    pub(crate) fn get(&mut self, name: &str) -> Name {
        if let Some(shared) = self.0.get(name) {
            return Name(Arc::clone(shared));
        }
        if self.0.len() >= NAMES {
            self.0.clear();
        }
        let shared: Arc<str> = name.into();
        self.0.insert(Arc::clone(&shared));
        Name(shared)
    }

    /// Forgets every name (the catalog changed).
    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_shared_and_compare_as_strings() {
        let mut names = Names::default();
        let a = names.get("echo");
        let b = names.get("echo");
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert_eq!(a, "echo");
        assert_eq!("echo", a);
        assert_eq!(a, String::from("echo"));
        assert_eq!(a.as_str(), "echo");
        assert_eq!(format!("{a} {a:?}"), "echo \"echo\"");
        assert_eq!(String::from(a), "echo");
    }

    #[test]
    fn pooled_strings_go_back_to_their_pool() {
        let pool = StringPool::default();
        let s = pool.copy("{}");
        assert_eq!(s, "{}");
        let ptr = s.as_ptr();
        drop(s);
        let again = pool.copy(r#"{"a":1}"#);
        assert_eq!(again.as_ptr(), ptr, "the buffer is reused");
        assert_eq!(again, r#"{"a":1}"#);
        let cloned = again.clone();
        assert_ne!(cloned.as_ptr(), ptr);
        let kept = again.into_string();
        assert_eq!(kept.as_ptr(), ptr);
        assert!(pool.0.lock().unwrap().is_empty(), "a buffer taken out is not returned");
        drop(cloned);
        assert!(pool.0.lock().unwrap().is_empty(), "a clone is not the pool's");
        assert_eq!(PooledString::from("x"), "x");
        drop(pool.copy(""));
        assert_eq!(pool.0.lock().unwrap().len(), 1, "an empty copy still has room, kept");
        pool.copy(&"x".repeat(POOLED_CAPACITY + 1));
        assert_eq!(pool.0.lock().unwrap().len(), 0, "a buffer grown past the cap is not kept");
    }
}
