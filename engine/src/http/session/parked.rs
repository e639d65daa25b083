//! Session streams whose connection went away while their request was in flight.
//!
//! Under the session-bound revisions disconnection is not cancellation: when the
//! connection of a `POST` whose response had become a session's SSE stream closes, its
//! request goes on. Its tickets are re-routed to a parked entry here, so what the host
//! writes for it still gets event ids and lands in the session's replay buffer; a `GET`
//! with `Last-Event-ID` naming that stream takes the entry back onto the new connection
//! (what was missed is replayed, the rest follows live). An entry ends with its request's
//! answer, or when its session ends (its request is then cancelled). There is at most one
//! entry per ticket slot.

use crate::http::conn::exchange::SessionStream;
use crate::output::Route;

#[derive(Debug, Default)]
struct Slot {
    generation: u32,
    stream: Option<SessionStream>,
}

/// The parked streams.
#[derive(Debug, Default)]
pub(crate) struct Parked {
    slots: Vec<Slot>,
}

impl Parked {
    /// Parks `stream`; returns the route its tickets now answer on, or `None` when `max`
    /// streams are parked (the caller cancels instead).
    pub(crate) fn park(&mut self, stream: SessionStream, max: usize) -> Option<Route> {
        let free = self.slots.iter().position(|s| s.stream.is_none());
        let slot = match free {
            Some(i) => i,
            None if self.slots.len() < max => {
                self.slots.push(Slot::default());
                self.slots.len() - 1
            }
            None => return None,
        };
        let s = &mut self.slots[slot];
        s.generation = s.generation.wrapping_add(1);
        s.stream = Some(stream);
        Some(Route::Parked { slot: slot as u32, generation: s.generation })
    }

    /// The stream parked at `route`.
    pub(crate) fn get_mut(&mut self, route: Route) -> Option<&mut SessionStream> {
        let Route::Parked { slot, generation } = route else { return None };
        let s = self.slots.get_mut(slot as usize)?;
        (s.generation == generation).then_some(s.stream.as_mut()?)
    }

    /// Ends the entry at `route` (its request was answered, or taken back).
    pub(crate) fn end(&mut self, route: Route) -> Option<SessionStream> {
        let Route::Parked { slot, generation } = route else { return None };
        let s = self.slots.get_mut(slot as usize)?;
        if s.generation != generation {
            return None;
        }
        s.stream.take()
    }

    /// The route of the parked stream `stream` of the session `matches` accepts.
    pub(crate) fn find(&self, matches: impl Fn(&SessionStream) -> bool) -> Option<Route> {
        self.slots.iter().enumerate().find_map(|(i, s)| {
            let st = s.stream.as_ref()?;
            matches(st).then_some(Route::Parked { slot: i as u32, generation: s.generation })
        })
    }

    /// Every parked route `pick` chooses, ended (their session is gone, or their request
    /// is no longer in flight).
    pub(crate) fn drain(&mut self, pick: impl Fn(&SessionStream, Route) -> bool) -> Vec<Route> {
        let mut out = Vec::new();
        for (i, s) in self.slots.iter_mut().enumerate() {
            let route = Route::Parked { slot: i as u32, generation: s.generation };
            if s.stream.as_ref().is_some_and(|st| pick(st, route)) {
                s.stream = None;
                out.push(route);
            }
        }
        out
    }
}
