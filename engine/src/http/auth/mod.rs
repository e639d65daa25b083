//! Who may call, and how often: the host's verdicts and the principal a request acts for
//! (`authorize`, `verdicts`), the endpoint as an OAuth protected resource and its challenges
//! (`resource`), the scope policy (`scope_policy`), JWT access tokens (`jwt`, `jwt_parts`,
//! `token_cache`; feature `jwt`), who the client is behind a proxy and which `Host` names
//! are ours (`proxy`), the key a per-client bound counts against (`client`), and the rate
//! limits (`limits`).

pub(super) mod authorize;
pub(super) mod client;
#[cfg(feature = "jwt")]
pub(super) mod jwt;
#[cfg(feature = "jwt")]
pub(super) mod jwt_parts;
pub(super) mod limits;
pub(super) mod proxy;
pub(super) mod resource;
pub(super) mod scope_policy;
#[cfg(feature = "jwt")]
pub(super) mod token_cache;
pub(super) mod verdicts;
