//! The parts of a JWT as the verifier reads them (feature `jwt`): base64url segments,
//! the JOSE header and the claims, decoded borrowing from the token where they can (a
//! string with escapes is the only copy), with repeated members refused.

use core::fmt;
use core::marker::PhantomData;
use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, de::IgnoredAny};
use serde_json::value::RawValue;

/// `part` decoded from base64url without padding, into `stack` when it fits.
pub(super) fn unbase64<'b>(part: &[u8], stack: &'b mut [u8]) -> Option<Cow<'b, [u8]>> {
    if base64::decoded_len_estimate(part.len()) <= stack.len() {
        let n = URL_SAFE_NO_PAD.decode_slice(part, stack).ok()?;
        Some(Cow::Borrowed(&stack[..n]))
    } else {
        URL_SAFE_NO_PAD.decode(part).ok().map(Cow::Owned)
    }
}

/// `json`, which must be a JSON object (serde would also take an array for a struct).
pub(super) fn json_object<'a, T: Deserialize<'a>>(json: &'a [u8]) -> Option<T> {
    if json.trim_ascii_start().first() != Some(&b'{') {
        return None;
    }
    serde_json::from_slice(json).ok()
}

/// The members of a JOSE header this verifier reads. A repeated one is an error.
#[derive(Deserialize)]
pub(super) struct Header<'a> {
    #[serde(borrow, default)]
    pub(super) alg: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) typ: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) kid: Option<Str<'a>>,
    #[serde(default)]
    pub(super) crit: Option<IgnoredAny>,
}

/// The claims this verifier reads. A repeated one, or one of the wrong type, is an error;
/// `tid` and `tenant` are read only when they are strings.
#[derive(Deserialize)]
pub(super) struct Claims<'a> {
    #[serde(borrow, default)]
    pub(super) iss: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) sub: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) aud: Option<OneOrMany<'a>>,
    #[serde(default)]
    pub(super) exp: Option<Seconds>,
    #[serde(default)]
    pub(super) nbf: Option<Seconds>,
    #[serde(default)]
    pub(super) iat: Option<Seconds>,
    #[serde(borrow, default)]
    pub(super) client_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) azp: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) scope: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) scp: Option<OneOrMany<'a>>,
    #[serde(borrow, default)]
    pub(super) tid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) tenant: Option<&'a RawValue>,
}

/// A JSON string, borrowed from the input unless it has escapes.
pub(super) struct Str<'a>(pub(super) Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor(PhantomData))
    }
}

struct StrVisitor<'a>(PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for StrVisitor<'a> {
    type Value = Str<'a>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'a>, E> {
        Ok(Str(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'a>, E> {
        Ok(Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Str<'a>, E> {
        Ok(Str(Cow::Owned(v)))
    }
}

/// A string or an array of strings (`aud`, `scp`).
pub(super) enum OneOrMany<'a> {
    One(Str<'a>),
    Many(Vec<Str<'a>>),
}

impl OneOrMany<'_> {
    pub(super) fn contains(&self, want: &str) -> bool {
        match self {
            Self::One(s) => s.0 == want,
            Self::Many(v) => v.iter().any(|s| s.0 == want),
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for OneOrMany<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = OneOrMany<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of strings")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                StrVisitor(PhantomData).visit_borrowed_str(v).map(OneOrMany::One)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                StrVisitor(PhantomData).visit_str(v).map(OneOrMany::One)
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                StrVisitor(PhantomData).visit_string(v).map(OneOrMany::One)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(16));
                while let Some(s) = seq.next_element::<Str<'a>>()? {
                    items.push(s);
                }
                Ok(OneOrMany::Many(items))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A NumericDate (RFC 7519 §2: seconds since the epoch, possibly fractional), in
/// microseconds; before the epoch is the epoch.
pub(super) struct Seconds(pub(super) u64);

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Seconds;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number of seconds")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Seconds, E> {
                Ok(Seconds(v.saturating_mul(1_000_000)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Seconds, E> {
                Ok(Seconds(u64::try_from(v).unwrap_or(0).saturating_mul(1_000_000)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Seconds, E> {
                // `as` saturates: negative is 0, past u64::MAX is u64::MAX.
                Ok(Seconds((v * 1e6) as u64))
            }
        }
        d.deserialize_any(V)
    }
}
