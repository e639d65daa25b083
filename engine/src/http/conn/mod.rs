//! Connections and their exchanges: the connection table's bookkeeping (`conns`: deadlines,
//! shedding, buffer pools), one [`Exchange`](exchange::Exchange) per connection (`exchange`:
//! its phase, the refusals decided on a head, how a response is written), serving a
//! complete request (`dispatch`), why a request was refused (`refusal`), the requests each
//! client has with the host (`in_flight`), the host's answers routed to their connections
//! (`answer_routing`). What the core answered itself reaches the adapters through the
//! engine's observer (`crate::observe`).

pub(super) mod answer_routing;
pub(super) mod conns;
pub(super) mod dispatch;
pub(super) mod exchange;
pub(super) mod in_flight;
pub(super) mod refusal;
