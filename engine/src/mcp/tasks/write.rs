//! The wire form of a task: the members of `Task`, `CreateTaskResult` (flat, with
//! `resultType: "task"`) and `DetailedTask` (the status's own member: `result`, `error` or
//! `inputRequests`), and the ISO 8601 timestamps.

use crate::jsonrpc::field;
use crate::mcp::tasks::{Record, Status};
use crate::wire::json;

/// Writes `micros` (since the Unix epoch) as `"YYYY-MM-DDThh:mm:ss.mmmZ"`.
pub(crate) fn write_time(out: &mut Vec<u8>, micros: u64) {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(micros) * 1000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let two = |out: &mut Vec<u8>, v: u8, sep: u8| {
        out.push(b'0' + v / 10);
        out.push(b'0' + v % 10);
        out.push(sep);
    };
    out.push(b'"');
    let year = t.year().clamp(0, 9999) as u16;
    for d in [year / 1000, year / 100 % 10, year / 10 % 10, year % 10] {
        out.push(b'0' + d as u8);
    }
    out.push(b'-');
    two(out, u8::from(t.month()), b'-');
    two(out, t.day(), b'T');
    two(out, t.hour(), b':');
    two(out, t.minute(), b':');
    two(out, t.second(), b'.');
    let ms = t.millisecond();
    for d in [ms / 100, ms / 10 % 10, ms % 10] {
        out.push(b'0' + d as u8);
    }
    out.extend_from_slice(b"Z\"");
}

/// Writes the members of `Task` (after `{` or a member): `taskId`, `status`,
/// `statusMessage` (when there is one), `createdAt`, `lastUpdatedAt`, then the duration
/// fields: `ttlMs` / `pollIntervalMs` (2026-07-28), or `ttl` / `pollInterval` with
/// `legacy`.
pub(crate) fn task_members(out: &mut Vec<u8>, r: &Record, legacy: bool) {
    field(out, "taskId");
    json::write_str(out, r.id_str());
    field(out, "status");
    json::write_str(out, r.status().as_str());
    if r.has_message {
        field(out, "statusMessage");
        json::write_str(out, &r.message);
    }
    field(out, "createdAt");
    write_time(out, r.created);
    field(out, "lastUpdatedAt");
    write_time(out, r.updated);
    field(out, if legacy { "ttl" } else { "ttlMs" });
    json::write_u64(out, r.ttl_ms);
    field(out, if legacy { "pollInterval" } else { "pollIntervalMs" });
    json::write_u64(out, r.poll_ms);
}

/// Writes what `tasks/get` adds for the task's status under `2026-07-28`: `result`
/// (completed), `error` (failed) or every outstanding `inputRequests` (input_required).
pub(crate) fn detail_members(out: &mut Vec<u8>, r: &Record) {
    match r.status() {
        Status::Completed => {
            field(out, "result");
            out.extend_from_slice(&r.outcome);
        }
        Status::Failed => {
            field(out, "error");
            out.extend_from_slice(&r.outcome);
        }
        Status::InputRequired => {
            field(out, "inputRequests");
            out.push(b'{');
            for a in r.asked.iter().filter(|a| !a.answered) {
                if out.last() != Some(&b'{') {
                    out.push(b',');
                }
                out.extend_from_slice(&r.requests[a.key.clone()]);
                out.push(b':');
                out.extend_from_slice(&r.requests[a.body.clone()]);
            }
            out.push(b'}');
        }
        Status::Working | Status::Cancelled => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time(micros: u64) -> String {
        let mut out = Vec::new();
        write_time(&mut out, micros);
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn timestamps_are_iso_8601_utc() {
        assert_eq!(time(0), "\"1970-01-01T00:00:00.000Z\"");
        // 2025-11-25T10:30:00.123Z
        assert_eq!(time(1_764_066_600_123_000), "\"2025-11-25T10:30:00.123Z\"");
        assert_eq!(time(951_782_400_000_000), "\"2000-02-29T00:00:00.000Z\"");
    }
}
