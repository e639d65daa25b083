//! The input of a newline-delimited stream (stdio's NDJSON): one reused buffer of the bytes
//! taken and not yet consumed, frames found in it by their newline (a CR before the newline
//! dropped), a frame longer than the limit reported once and the rest of it discarded as it
//! arrives, and what was looked at behind a head frame that waits (the stdio engine holds
//! frames while every ticket slot is busy and takes some from behind; which ones is its
//! rule, not this file's). Frames are byte ranges of the buffer; what they mean is the
//! caller's.

use core::ops::Range;

/// What [`Lines::next`] found at the head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Next {
    /// A frame of at most the limit (perhaps blank), without its line end.
    Frame(Range<usize>),
    /// A frame longer than the limit: its bytes so far, and whether that is all of it
    /// (else the rest is discarded as it arrives: [`Lines::discard`]).
    OverLong(Range<usize>, bool),
    /// No complete frame buffered.
    Partial,
}

/// The buffer of a newline-delimited stream and the frames in it.
#[derive(Debug)]
pub(crate) struct Lines {
    buf: Vec<u8>,
    /// Where the head frame starts.
    start: usize,
    /// Bytes after `start` already searched for a newline (none there).
    scan_from: usize,
    /// The rest of an over-long frame is discarded as it arrives, up to its newline.
    discarding: bool,
    /// While the head waits: bytes after `start` already looked at (each frame in them
    /// waits, or is in `held_cancels`).
    held: usize,
    /// Where (from `start`) frames in `held` that are to be looked at again start. The
    /// first eight are remembered; any more wait in their place.
    held_cancels: heapless::Vec<usize, 8>,
}

/// The frame of `buf` that starts at `pos`, without its line end, and where its newline
/// is; `None` without a newline.
#[inline]
fn frame_at(buf: &[u8], pos: usize) -> Option<(Range<usize>, usize)> {
    let nl = pos + memchr::memchr(b'\n', &buf[pos..])?;
    let end = if nl > pos && buf[nl - 1] == b'\r' { nl - 1 } else { nl };
    Some((pos..end, nl))
}

/// Whether a frame holds only spaces, tabs and CRs (skipped, never answered).
#[inline]
pub(crate) fn is_blank(frame: &[u8]) -> bool {
    frame.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

impl Lines {
    /// An empty buffer for frames of at most `max_frame` bytes: it holds twice what may be
    /// buffered ([`push`](Self::push) says why) and never grows.
    pub(crate) fn new(max_frame: usize) -> Self {
        Self {
            buf: Vec::with_capacity(2 * (max_frame + 2)),
            start: 0,
            scan_from: 0,
            discarding: false,
            held: 0,
            held_cancels: heapless::Vec::new(),
        }
    }

    /// The bytes buffered and not consumed.
    #[inline]
    pub(crate) fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Nothing buffered (the buffer is reset whenever it is emptied, so nothing is held
    /// either).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        let empty = self.buf.is_empty();
        debug_assert!(!empty || (self.start == 0 && self.scan_from == 0 && self.held == 0));
        debug_assert!(!empty || self.held_cancels.is_empty());
        empty
    }

    /// Every byte buffered was consumed.
    #[inline]
    pub(crate) fn all_taken(&self) -> bool {
        self.start == self.buf.len()
    }

    /// The rest of an over-long frame is being discarded.
    #[inline]
    pub(crate) fn is_discarding(&self) -> bool {
        self.discarding
    }

    /// While [discarding](Self::is_discarding): how many bytes of `data` belong to the
    /// over-long frame (up to its newline), and whether its newline is in `data` (then the
    /// caller skips it too and discarding ends).
    #[inline]
    pub(crate) fn discard(&mut self, data: &[u8]) -> (usize, bool) {
        match memchr::memchr(b'\n', data) {
            Some(i) => {
                self.discarding = false;
                (i, true)
            }
            None => (data.len(), false),
        }
    }

    /// Takes `data` behind the bytes buffered. Those move to the front only when `data`
    /// does not fit behind them: the buffer holds twice what may be buffered, so that
    /// happens after about a buffer's worth was consumed, and no byte moves more than about
    /// once, even while a full buffer of frames waits and each consumed frame lets a few
    /// more bytes in. (Moving them on every call cost a pipelining async host 12 % of its
    /// CPU time.) It never grows: `data` is at most the room the caller was told of.
    #[inline]
    pub(crate) fn push(&mut self, data: &[u8]) {
        if self.buf.len() + data.len() > self.buf.capacity() {
            self.compact();
        }
        self.buf.extend_from_slice(data);
    }

    fn compact(&mut self) {
        if self.start == 0 {
            return;
        }
        let len = self.buf.len();
        self.buf.copy_within(self.start..len, 0);
        self.buf.truncate(len - self.start);
        self.start = 0;
    }

    /// Consumes the head frame, if one is complete: a frame of at most `max` bytes, or an
    /// over-long one (also once more than `max + 1` bytes of it are buffered without a
    /// newline: the rest is then discarded as it arrives). With `eof`, buffered bytes
    /// without a newline are the last frame.
    #[inline]
    pub(crate) fn next(&mut self, max: usize, eof: bool) -> Next {
        let rest = &self.buf[self.start..];
        match memchr::memchr(b'\n', &rest[self.scan_from..]) {
            Some(i) => {
                let start = self.start;
                let mut end = start + self.scan_from + i;
                self.start = end + 1;
                self.scan_from = 0;
                self.shift_held(end + 1 - start);
                if end > start && self.buf[end - 1] == b'\r' {
                    end -= 1;
                }
                if end - start > max { Next::OverLong(start..end, true) } else { Next::Frame(start..end) }
            }
            None => {
                self.scan_from = rest.len();
                if rest.len() > max + 1 {
                    Next::OverLong(self.drop_partial_head(), false)
                } else if eof && !rest.is_empty() {
                    let (start, mut end) = (self.start, self.buf.len());
                    self.start = end;
                    self.scan_from = 0;
                    if self.buf[end - 1] == b'\r' {
                        end -= 1;
                    }
                    if end - start > max { Next::OverLong(start..end, true) } else { Next::Frame(start..end) }
                } else {
                    Next::Partial
                }
            }
        }
    }

    /// After frames were consumed: an emptied buffer starts over (nothing held).
    #[inline]
    pub(crate) fn settle(&mut self) {
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
            self.scan_from = 0;
            self.forget_held();
        }
    }

    /// The bytes of a frame.
    #[inline]
    pub(crate) fn bytes(&self, frame: Range<usize>) -> &[u8] {
        &self.buf[frame]
    }

    /// The bytes of a frame, to parse in place.
    #[inline]
    pub(crate) fn bytes_mut(&mut self, frame: Range<usize>) -> &mut [u8] {
        &mut self.buf[frame]
    }

    // ------------------------------------------------ while the head frame waits

    /// The head frame and its newline, if it is complete.
    pub(crate) fn head(&self) -> Option<(Range<usize>, usize)> {
        frame_at(&self.buf, self.start)
    }

    /// Consumes the head frame, whose newline is at `nl`: what was looked at behind it
    /// moves up.
    pub(crate) fn take_head(&mut self, nl: usize) {
        let consumed = nl + 1 - self.start;
        self.start = nl + 1;
        self.scan_from = 0;
        self.shift_held(consumed);
    }

    /// Consumes a head frame without a newline that is too long already: its bytes so far
    /// (the rest is discarded as it arrives).
    pub(crate) fn drop_partial_head(&mut self) -> Range<usize> {
        let partial = self.start..self.buf.len();
        self.start = self.buf.len();
        self.scan_from = 0;
        self.discarding = true;
        self.forget_held();
        partial
    }

    /// How many frames behind the head are remembered to be looked at again.
    pub(crate) fn held_cancels(&self) -> usize {
        self.held_cancels.len()
    }

    /// The `k`th frame behind the head remembered to be looked at again, and its newline.
    pub(crate) fn held_cancel(&self, k: usize) -> Option<(Range<usize>, usize)> {
        frame_at(&self.buf, self.start + *self.held_cancels.get(k)?)
    }

    /// Remembers the frame at `pos` (behind the head) to be looked at again (the first
    /// eight only: any more wait in their place).
    pub(crate) fn hold_cancel(&mut self, pos: usize) {
        let _ = self.held_cancels.push(pos - self.start);
    }

    /// Where the frames behind the head not looked at yet start (at `after` at the
    /// earliest: the head's end).
    pub(crate) fn unseen(&self, after: usize) -> usize {
        (self.start + self.held).max(after)
    }

    /// The frame at `pos` and its newline, if it is complete.
    pub(crate) fn frame_at(&self, pos: usize) -> Option<(Range<usize>, usize)> {
        frame_at(&self.buf, pos)
    }

    /// Every byte before `pos` (behind the head) was looked at.
    pub(crate) fn seen_up_to(&mut self, pos: usize) {
        self.held = pos - self.start;
    }

    /// The frame at `pos..=nl` (behind the head) was taken out of order: removed from the
    /// buffer (a move within it, no allocation).
    pub(crate) fn take_from_behind(&mut self, pos: usize, nl: usize) {
        self.buf.drain(pos..=nl);
        let (at, len) = (pos - self.start, nl + 1 - pos);
        if at < self.held {
            self.held -= len;
        }
        let mut kept = heapless::Vec::new();
        for &c in &self.held_cancels {
            if c != at {
                let _ = kept.push(if c > at { c - len } else { c });
            }
        }
        self.held_cancels = kept;
    }

    /// The head frame, `consumed` bytes, was taken: what was looked at behind it moves up.
    fn shift_held(&mut self, consumed: usize) {
        self.held = self.held.saturating_sub(consumed);
        if self.held_cancels.is_empty() {
            return;
        }
        let mut kept = heapless::Vec::new();
        for &c in &self.held_cancels {
            if c >= consumed {
                let _ = kept.push(c - consumed);
            }
        }
        self.held_cancels = kept;
    }

    /// Everything after the head is to be looked at again.
    fn forget_held(&mut self) {
        self.held = 0;
        self.held_cancels.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every frame `lines` yields now, as text (`!` before an over-long one, `+` after
    /// one that is complete).
    fn drain(lines: &mut Lines, max: usize, eof: bool) -> Vec<String> {
        let mut out = Vec::new();
        loop {
            match lines.next(max, eof) {
                Next::Frame(r) => out.push(String::from_utf8_lossy(lines.bytes(r)).into_owned()),
                Next::OverLong(r, complete) => out.push(format!(
                    "!{}{}",
                    String::from_utf8_lossy(lines.bytes(r)),
                    if complete { "+" } else { "" }
                )),
                Next::Partial => break,
            }
            if lines.all_taken() {
                break;
            }
        }
        lines.settle();
        out
    }

    #[test]
    fn frames_end_at_newlines_and_lose_a_cr() {
        let mut lines = Lines::new(16);
        lines.push(b"a\nbc\r\n\n  \r\npartial");
        assert_eq!(drain(&mut lines, 16, false), ["a", "bc", "", "  "]);
        assert_eq!(lines.buffered(), 7);
        lines.push(b" end\r\n");
        assert_eq!(drain(&mut lines, 16, false), ["partial end"]);
        assert!(lines.is_empty(), "an emptied buffer starts over");
        lines.push(b"last\r");
        assert_eq!(drain(&mut lines, 16, false), Vec::<String>::new());
        assert_eq!(drain(&mut lines, 16, true), ["last"], "at the end of input, the last frame");
        assert!(is_blank(b" \t\r") && !is_blank(b" x"));
    }

    #[test]
    fn an_over_long_frame_is_reported_once_and_its_rest_discarded() {
        let mut lines = Lines::new(4);
        lines.push(b"12345\nok\n");
        assert_eq!(drain(&mut lines, 4, false), ["!12345+", "ok"]);
        lines.push(b"1234567");
        assert_eq!(drain(&mut lines, 4, false), ["!1234567"]);
        assert!(lines.is_discarding() && lines.is_empty());
        assert_eq!(lines.discard(b"89"), (2, false));
        assert_eq!(lines.discard(b"0\nnext"), (1, true));
        assert!(!lines.is_discarding());
    }

    #[test]
    fn bytes_move_to_the_front_only_when_they_do_not_fit() {
        let mut lines = Lines::new(8);
        let capacity = lines.buf.capacity();
        lines.push(b"12345678\nab");
        assert_eq!(drain(&mut lines, 8, false), ["12345678"]);
        let before = lines.start;
        lines.push(b"c");
        assert_eq!(lines.start, before, "fits behind: nothing moved");
        let fill = capacity - lines.buf.len();
        lines.push(&vec![b'x'; fill]);
        assert_eq!(lines.start, before, "fits behind exactly: nothing moved");
        lines.push(b"y");
        assert_eq!((lines.start, lines.buffered()), (0, 3 + fill + 1), "moved to the front");
        assert_eq!(lines.buf.capacity(), capacity, "never grows");
    }

    #[test]
    fn frames_taken_from_behind_a_waiting_head() {
        let mut lines = Lines::new(64);
        lines.push(b"head\nc1\nwait\nc2\nlast\n");
        let (head, nl) = lines.head().unwrap();
        assert_eq!(lines.bytes(head), b"head");
        // Behind the head: c1 remembered, `wait` looked at, c2 taken out of order.
        let mut pos = lines.unseen(nl + 1);
        let mut seen = Vec::new();
        while let Some((r, nl)) = lines.frame_at(pos) {
            let frame = lines.bytes(r).to_vec();
            if frame == b"c1" {
                lines.hold_cancel(pos);
            }
            if frame == b"c2" {
                lines.seen_up_to(pos);
                lines.take_from_behind(pos, nl);
                break;
            }
            seen.push(frame);
            pos = nl + 1;
            lines.seen_up_to(pos);
        }
        assert_eq!(seen, [b"c1".to_vec(), b"wait".to_vec()]);
        assert_eq!(lines.bytes(lines.unseen(0)..lines.buf.len()), b"last\n", "c2 is gone, `last` unseen");
        let (r, nl) = lines.held_cancel(0).unwrap();
        assert_eq!(lines.bytes(r.clone()), b"c1");
        lines.take_from_behind(r.start, nl);
        assert_eq!(lines.held_cancels(), 0);
        lines.take_head(lines.head().unwrap().1);
        assert_eq!(drain(&mut lines, 64, false), ["wait", "last"]);
    }
}
