//! Session changes announced between nodes: what a [`PgSessionStore`](super::PgSessionStore)
//! sends with its writes (`pg_notify`, in the write's own statement, so only a committed
//! write is announced) and the task that listens for other nodes' announcements
//! (into [`StoreNotices`]).
//!
//! Every payload is signed (`signed.rs`: `<kind> <node> <when> <n> <mac> <rest>`), and a
//! listener takes only what verifies; the kinds, with `rest`: on the sessions' channel
//! `C` (the record changed; `rest` the session id), `E` (the session ended: removed, or
//! deleted on expiry) and `T` (a task's record changed: `rest` the task id); on a
//! channel of its own beside it for catalog news
//! ([`SessionStore::announce`](crate::store::SessionStore::announce), `schema::catalog_channel`),
//! heard on the same listening connection, `L` (lists changed: `rest` three characters,
//! `t` or `-` for tools, `r` or `-` for resources, `p` or `-` for prompts) and `U` (a
//! resource updated: `rest` the uri). An id or uri longer than [`MAX_ID`] bytes is sent
//! as `M` with an empty `rest`: "something changed", a `Missed` for the listeners
//! (PostgreSQL refuses payloads of 8,000 bytes or more); so is any signed kind a listener
//! does not know (a later version's). A notice that does not verify is ignored, never a
//! `Missed`.
//!
//! The unsigned payloads of versions before (`c`, `e`, `t`, `l`, `u`, `?`, lower-case,
//! without `<when> <n> <mac>`) are ignored as unauthenticated; those versions take the
//! signed kinds, which they do not know, as `Missed`. Nodes sharing a schema are
//! upgraded together (see `docs/scale-out.md`).

use std::future::poll_fn;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::tokio_postgres::tls::NoTlsStream;
use deadpool_postgres::tokio_postgres::{self, AsyncMessage, Client, Connection, NoTls, Socket};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use mcp_engine::subs::CatalogChange;

use crate::store::sessions::{CatalogNews, StoreError, StoreNotice, StoreNotices};

use super::schema::fail;
use super::signed::{NoticeKeys, Seen, now_ms};

/// The longest session id a notice names; a longer one is announced as "some session
/// changed" (the payload stays far below PostgreSQL's 8,000 bytes).
pub(crate) const MAX_ID: usize = 4000;

/// The first wait before reconnecting a broken listening connection; doubled after each
/// failed attempt, up to [`BACKOFF_MAX`].
const BACKOFF_FIRST: Duration = Duration::from_millis(100);
/// The longest wait between two attempts to reconnect.
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// What the listening task needs: how to connect, what to listen on, whose notices to
/// skip, and its bounds.
#[derive(Debug, Clone)]
pub(crate) struct ListenConfig {
    pub(crate) pg: tokio_postgres::Config,
    /// The sessions' channel, unquoted (`schema::channel`).
    pub(crate) channel: String,
    /// The catalog news' channel, unquoted (`schema::catalog_channel`).
    pub(crate) catalog: String,
    /// The keys notices are signed and checked with, and this store's node id (its own
    /// notices are skipped).
    pub(crate) keys: Arc<NoticeKeys>,
    pub(crate) capacity: usize,
    pub(crate) check_every: Duration,
    /// Bounds connecting, and each statement on the listening connection.
    pub(crate) connect_timeout: Duration,
    pub(crate) operation_timeout: Duration,
}

/// Starts the listening task and waits until it listens (at most the connect timeout
/// plus the operation timeout): a write committed after this returns is heard, or a
/// `Missed` follows.
pub(crate) async fn start(cfg: ListenConfig) -> Result<StoreNotices, StoreError> {
    let (tx, rx) = mpsc::channel(cfg.capacity.max(1));
    let (ready_tx, ready_rx) = oneshot::channel();
    let bound = cfg.connect_timeout + cfg.operation_timeout;
    let task = tokio::spawn(Listener { cfg, tx, missed: false, seen: Seen::default() }.run(ready_tx));
    let notices = StoreNotices::with_task(rx, task.abort_handle());
    match tokio::time::timeout(bound, ready_rx).await {
        Ok(Ok(Ok(()))) => Ok(notices),
        Ok(Ok(Err(e))) => Err(e),
        Ok(Err(_)) => Err(StoreError::new("postgres: notices: the listening task ended")),
        Err(_) => Err(StoreError::new(format!("postgres: notices: not listening within {bound:?}"))),
    }
}

struct Listener {
    cfg: ListenConfig,
    tx: mpsc::Sender<StoreNotice>,
    /// A `Missed` is owed: delivered once there is room and the connection listens.
    missed: bool,
    /// The MACs of the notices taken, to refuse a replay.
    seen: Seen,
}

/// Why a listening connection was given up.
enum Stop {
    /// The receiver is gone: the task ends.
    Receiver,
    /// The connection failed: connect again.
    Broken(StoreError),
}

type Conn = Connection<Socket, NoTlsStream>;

impl Listener {
    async fn run(mut self, ready: oneshot::Sender<Result<(), StoreError>>) {
        let mut ready = Some(ready);
        let mut backoff = BACKOFF_FIRST;
        loop {
            let opened = tokio::select! {
                opened = self.connect() => opened,
                () = self.tx.closed() => return,
            };
            let why = match opened {
                Ok((client, conn)) => self.serve(&client, conn, &mut ready, &mut backoff).await,
                Err(e) => Stop::Broken(e),
            };
            let e = match why {
                Stop::Receiver => return,
                Stop::Broken(e) => e,
            };
            if let Some(ready) = ready.take() {
                // Not listening yet: `start` says why, and the task ends.
                let _ = ready.send(Err(e));
                return;
            }
            self.missed = true;
            tracing::warn!(%e, retry_in = ?backoff, "session notices: listening connection lost");
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                () = self.tx.closed() => return,
            }
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    async fn connect(&self) -> Result<(Client, Conn), StoreError> {
        let bound = self.cfg.connect_timeout + self.cfg.operation_timeout;
        match tokio::time::timeout(bound, self.cfg.pg.connect(NoTls)).await {
            Ok(Ok(pair)) => Ok(pair),
            Ok(Err(e)) => Err(fail("notices: connect", e)),
            Err(_) => Err(StoreError::new(format!("postgres: notices: connect: no answer within {bound:?}"))),
        }
    }

    /// Drives one connection: `LISTEN`, then forwards notifications, checks the
    /// connection every `check_every`, and delivers an owed `Missed` when there is room,
    /// until the connection fails or the receiver is gone.
    async fn serve(
        &mut self,
        client: &Client,
        mut conn: Conn,
        ready: &mut Option<oneshot::Sender<Result<(), StoreError>>>,
        backoff: &mut Duration,
    ) -> Stop {
        let listen = format!("LISTEN \"{}\"; LISTEN \"{}\"", self.cfg.channel, self.cfg.catalog);
        let bound = self.cfg.operation_timeout;
        // One statement in flight at a time (the LISTEN, then each check), with its deadline.
        let mut query = Some(Box::pin(client.batch_execute(&listen)));
        let mut deadline = Instant::now() + bound;
        let mut listening = false;
        let every = self.cfg.check_every;
        let mut check = tokio::time::interval_at(Instant::now() + every, every);
        check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // A sender of the loop's own: a permit borrows it while `forward` changes `self`.
        let tx = self.tx.clone();
        loop {
            tokio::select! {
                biased;
                () = tx.closed() => return Stop::Receiver,
                permit = tx.reserve(), if self.missed && listening => {
                    if let Ok(permit) = permit {
                        permit.send(StoreNotice::Missed);
                        self.missed = false;
                    }
                }
                message = poll_fn(|cx| conn.poll_message(cx)) => match message {
                    Some(Ok(AsyncMessage::Notification(n))) => self.forward(n.channel(), n.payload()),
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Stop::Broken(fail("notices: connection", e)),
                    None => return Stop::Broken(StoreError::new("postgres: notices: connection closed")),
                },
                done = async { query.as_mut().expect("guarded").await }, if query.is_some() => {
                    query = None;
                    if let Err(e) = done {
                        return Stop::Broken(fail("notices: LISTEN or check", e));
                    }
                    if !listening {
                        listening = true;
                        *backoff = BACKOFF_FIRST;
                        match ready.take() {
                            Some(ready) => {
                                let _ = ready.send(Ok(()));
                            }
                            None => {
                                self.missed = true;
                                tracing::info!("session notices: listening again");
                            }
                        }
                    }
                }
                () = tokio::time::sleep_until(deadline), if query.is_some() => {
                    return Stop::Broken(StoreError::new(format!(
                        "postgres: notices: no answer within {bound:?}"
                    )));
                }
                _ = check.tick(), if query.is_none() => {
                    query = Some(Box::pin(client.batch_execute("SELECT 1")));
                    deadline = Instant::now() + bound;
                }
            }
        }
    }

    /// Forwards one notification heard on `channel`, if it verifies (`signed.rs`; else
    /// it is ignored and counted), unless it is this node's own or a `Missed` is owed
    /// already, which covers it.
    fn forward(&mut self, channel: &str, payload: &str) {
        let keys = Arc::clone(&self.cfg.keys);
        let Ok(notice) = keys.open(channel, payload, now_ms(), &mut self.seen) else { return };
        if notice.node == keys.node() || self.missed {
            return;
        }
        let on_sessions = channel == self.cfg.channel;
        let notice = match (notice.kind, notice.rest) {
            ("C", id) if on_sessions => StoreNotice::Changed(id.to_owned()),
            ("E", id) if on_sessions => StoreNotice::Ended(id.to_owned()),
            ("T", id) if on_sessions => StoreNotice::TaskChanged(id.to_owned()),
            ("U", uri) if !on_sessions => StoreNotice::Catalog(CatalogNews::ResourceUpdated(uri.to_owned())),
            ("L", lists) if !on_sessions && lists.len() == 3 => {
                let b = lists.as_bytes();
                let change = CatalogChange::of(b[0] == b't', b[1] == b'r', b[2] == b'p');
                StoreNotice::Catalog(CatalogNews::ListChanged(change))
            }
            // "Something changed", or a kind this version does not know.
            _ => {
                self.missed = true;
                return;
            }
        };
        match self.tx.try_send(notice) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => self.missed = true,
            // The receiver is gone: the loop ends at its next turn.
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }
}

/// The `pg_notify` call a write makes on `channel` (a checked identifier, safe inline),
/// the payload its statement's parameter `$param` (signed by [`session_payload`]).
pub(crate) fn notify_sql(channel: &str, param: u8) -> String {
    format!("pg_notify('{channel}', ${param}::text)")
}

/// The signed payload a write about session (or task) `id` sends on `channel`: `kind`
/// (`C`, `E` or `T`) and the id, or `M` when the id is longer than [`MAX_ID`].
pub(crate) fn session_payload(keys: &NoticeKeys, channel: &str, kind: char, id: &str) -> String {
    if id.len() > MAX_ID { keys.sign(channel, 'M', "") } else { keys.sign(channel, kind, id) }
}

/// The signed payload announcing `news` on the catalog `channel` (see the module docs).
pub(crate) fn news_payload(keys: &NoticeKeys, channel: &str, news: &CatalogNews) -> String {
    match news {
        CatalogNews::ListChanged(c) => {
            let flag = |on: bool, c: char| if on { c } else { '-' };
            let lists = format!("{}{}{}", flag(c.tools, 't'), flag(c.resources, 'r'), flag(c.prompts, 'p'));
            keys.sign(channel, 'L', &lists)
        }
        CatalogNews::ResourceUpdated(uri) if uri.len() <= MAX_ID => keys.sign(channel, 'U', uri),
        CatalogNews::ResourceUpdated(_) => keys.sign(channel, 'M', ""),
    }
}

/// A random node id: 16 hex digits.
pub(crate) fn node_id() -> String {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        // No entropy source: the clock and the process id still tell nodes apart.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        bytes = (nanos ^ (u64::from(std::process::id()) << 32)).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::{
        CatalogChange, CatalogNews, ListenConfig, Listener, NoticeKeys, Seen, StoreNotice, news_payload,
        node_id, session_payload,
    };
    use tokio::sync::mpsc;

    const SESSIONS: &str = "mcp.sessions";
    const CATALOG: &str = "mcp.catalog";

    /// The keys of node `node` (the same secret as every other node here).
    fn keys_of(node: &str) -> NoticeKeys {
        NoticeKeys::new(&[9; 32], &[], node.into(), Duration::from_secs(30))
    }

    fn listener(capacity: usize) -> (Listener, mpsc::Receiver<StoreNotice>) {
        let (tx, rx) = mpsc::channel(capacity);
        let cfg = ListenConfig {
            pg: "host=localhost".parse().unwrap(),
            channel: SESSIONS.into(),
            catalog: CATALOG.into(),
            keys: Arc::new(keys_of("00000000000000aa")),
            capacity,
            check_every: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(1),
            operation_timeout: Duration::from_secs(1),
        };
        (Listener { cfg, tx, missed: false, seen: Seen::default() }, rx)
    }

    #[test]
    fn payloads_are_parsed_and_own_notices_skipped() {
        let (mut l, mut rx) = listener(8);
        let (other, mine) = (keys_of("00000000000000bb"), keys_of("00000000000000aa"));
        l.forward(SESSIONS, &session_payload(&other, SESSIONS, 'C', "s1"));
        l.forward(SESSIONS, &session_payload(&other, SESSIONS, 'E', "s 2"));
        l.forward(SESSIONS, &session_payload(&mine, SESSIONS, 'C', "mine"));
        l.forward(SESSIONS, &session_payload(&other, SESSIONS, 'T', "AAAAAAAAAAAAAAAAAAAAAA"));
        assert_eq!(rx.try_recv().unwrap(), StoreNotice::Changed("s1".into()));
        assert_eq!(rx.try_recv().unwrap(), StoreNotice::Ended("s 2".into()), "spaces in ids");
        assert_eq!(rx.try_recv().unwrap(), StoreNotice::TaskChanged("AAAAAAAAAAAAAAAAAAAAAA".into()));
        assert!(rx.try_recv().is_err(), "its own notice skipped");
        assert!(!l.missed);
        l.forward(SESSIONS, &session_payload(&other, SESSIONS, 'C', &"x".repeat(4001)));
        assert!(l.missed, "an id too long to send");
        let (mut l, _rx) = listener(8);
        l.forward(SESSIONS, &other.sign(SESSIONS, 'Z', "s"));
        assert!(l.missed, "a signed kind not known");
        let (mut l, _rx) = listener(8);
        l.forward(SESSIONS, &other.sign(SESSIONS, 'L', "trp"));
        assert!(l.missed, "catalog news on the sessions' channel is not news");
    }

    #[test]
    fn unsigned_or_forged_notices_change_nothing_and_are_counted() {
        let (mut l, mut rx) = listener(8);
        // What any role can send with a plain NOTIFY: the payloads of earlier versions,
        // garbage, and a signed one under another key.
        l.forward(SESSIONS, "c 00000000000000bb s1");
        l.forward(SESSIONS, "e 00000000000000bb s1");
        l.forward(SESSIONS, "z 00000000000000bb s1");
        l.forward(SESSIONS, "? 00000000000000bb");
        l.forward(CATALOG, "l 00000000000000bb trp");
        l.forward(CATALOG, "");
        let stranger = NoticeKeys::new(&[8; 32], &[], "00000000000000bb".into(), Duration::from_secs(30));
        l.forward(CATALOG, &news_payload(&stranger, CATALOG, &CatalogNews::ListChanged(CatalogChange::ALL)));
        assert!(rx.try_recv().is_err(), "nothing delivered");
        assert!(!l.missed, "and no Missed owed");
        assert_eq!(l.cfg.keys.ignored().unauthenticated, 7);
        // A node's notice replayed: taken once.
        let other = keys_of("00000000000000bb");
        let p = news_payload(&other, CATALOG, &CatalogNews::ListChanged(CatalogChange::ALL));
        for _ in 0..3 {
            l.forward(CATALOG, &p);
        }
        assert_eq!(
            rx.try_recv().unwrap(),
            StoreNotice::Catalog(CatalogNews::ListChanged(CatalogChange::ALL))
        );
        assert!(rx.try_recv().is_err(), "once");
        assert_eq!(l.cfg.keys.ignored().replayed, 2);
    }

    #[test]
    fn catalog_news_goes_out_and_comes_back_as_it_was() {
        let (mut l, mut rx) = listener(8);
        let (other, mine) = (keys_of("00000000000000bb"), keys_of("00000000000000aa"));
        let news = [
            CatalogNews::ListChanged(CatalogChange::of(true, false, true)),
            CatalogNews::ListChanged(CatalogChange::of(false, true, false)),
            CatalogNews::ResourceUpdated("file:///a b?c".into()),
        ];
        for n in &news {
            let payload = news_payload(&other, CATALOG, n);
            l.forward(CATALOG, &payload);
            assert_eq!(rx.try_recv().unwrap(), StoreNotice::Catalog(n.clone()), "{payload}");
            l.forward(CATALOG, &news_payload(&mine, CATALOG, n));
            assert!(rx.try_recv().is_err(), "its own news skipped");
        }
        assert!(news_payload(&other, CATALOG, &news[0]).ends_with(" t-p"));
        assert!(news_payload(&other, CATALOG, &news[0]).starts_with("L 00000000000000bb "));
        let long = CatalogNews::ResourceUpdated("x".repeat(4001));
        assert!(news_payload(&other, CATALOG, &long).starts_with("M 00000000000000bb "));
        l.forward(CATALOG, &other.sign(CATALOG, 'L', "tr"));
        assert!(l.missed, "lists not in three characters");
    }

    #[test]
    fn a_full_channel_owes_a_missed_and_drops_until_then() {
        let (mut l, mut rx) = listener(1);
        let other = keys_of("00000000000000bb");
        l.forward(SESSIONS, &session_payload(&other, SESSIONS, 'C', "a"));
        l.forward(SESSIONS, &session_payload(&other, SESSIONS, 'C', "b"));
        assert!(l.missed);
        assert_eq!(rx.try_recv().unwrap(), StoreNotice::Changed("a".into()));
        l.forward(SESSIONS, &session_payload(&other, SESSIONS, 'C', "c"));
        assert!(rx.try_recv().is_err(), "dropped: the owed Missed covers it");
    }

    #[test]
    fn node_ids_are_16_hex_digits_and_differ() {
        let (a, b) = (node_id(), node_id());
        assert_eq!(a.len(), 16);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
    }
}
