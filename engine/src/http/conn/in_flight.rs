//! Requests each client has with the host. `Config::max_in_flight` bounds the tickets of
//! every client together; left alone, one client could hold them all with slow calls (and
//! the connections of its next requests waiting for a slot), so that another's call waits
//! until the first client's end. This table counts, per client ([`ClientKey`]: the
//! principal, else the address, IPv6 by `/64`), the connections whose request the host
//! works on, so that a client past `HttpConfig::max_in_flight_per_client` is refused at
//! once (`429`) instead of taking one more slot or waiting for one.
//!
//! A leaf keyed by connection slot: the connection table keeps it up to date (a request is
//! recorded when the host gets it, released when its connection leaves the request: its
//! answer written, the connection closed, or its stream parked). It allocates only when it
//! grows (a slot or a client it has not seen at once before); nothing per request.

use hashbrown::HashMap;

use crate::http::auth::client::ClientKey;

/// The requests with the host, by connection slot and by client (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    by_slot: Vec<Option<ClientKey>>,
    per_client: HashMap<ClientKey, u32>,
}

impl InFlight {
    /// Records that the request on the connection in `slot` is with the host, for `client`
    /// (`None`: neither principal nor address known, which no per-client bound counts).
    pub(crate) fn enter(&mut self, slot: u32, client: Option<ClientKey>) {
        self.release(slot);
        let Some(client) = client else { return };
        let i = slot as usize;
        if self.by_slot.len() <= i {
            self.by_slot.resize(i + 1, None);
        }
        self.by_slot[i] = Some(client);
        *self.per_client.entry(client).or_insert(0) += 1;
    }

    /// The request on `slot` is no longer with the host (or the connection is gone).
    pub(crate) fn release(&mut self, slot: u32) {
        let Some(client) = self.by_slot.get_mut(slot as usize).and_then(Option::take) else { return };
        if let Some(n) = self.per_client.get_mut(&client) {
            *n -= 1;
            if *n == 0 {
                self.per_client.remove(&client);
            }
        }
    }

    /// The requests `client` has with the host.
    pub(crate) fn of(&self, client: Option<ClientKey>) -> usize {
        client.and_then(|c| self.per_client.get(&c)).map_or(0, |&n| n as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> Option<ClientKey> {
        Some(ClientKey::addr(s.parse().unwrap()))
    }

    #[test]
    fn requests_are_counted_per_client_and_released_once() {
        let mut f = InFlight::default();
        let (a, b) = (key("192.0.2.1"), key("192.0.2.2"));
        f.enter(0, a);
        f.enter(3, a);
        f.enter(1, b);
        f.enter(2, None);
        assert_eq!((f.of(a), f.of(b), f.of(None)), (2, 1, 0));
        f.release(0);
        f.release(0); // twice: counted once
        assert_eq!(f.of(a), 1);
        // A slot taken again by another client's request moves its count.
        f.enter(3, b);
        assert_eq!((f.of(a), f.of(b)), (0, 2));
        f.release(3);
        f.release(1);
        f.release(2);
        assert_eq!((f.of(a), f.of(b)), (0, 0));
        assert!(f.per_client.is_empty());
    }
}
