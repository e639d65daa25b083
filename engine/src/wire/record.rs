//! Reading the binary records a host's store keeps (the session record, `http/record.rs`;
//! the task record, `mcp/tasks/record.rs`): why a record is refused, and a reader of
//! big-endian fields front to back that never reads past the end.

/// Why a record could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordError {
    /// A format version this engine does not read.
    Version(u8),
    /// A field holds a value the format does not define.
    Invalid,
    /// The record ends early, or goes on after its last field.
    Length,
}

/// Reads the fields of a record, front to back.
pub(crate) struct Reader<'a>(pub(crate) &'a [u8]);

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], RecordError> {
        if self.0.len() < n {
            return Err(RecordError::Length);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    pub(crate) fn byte(&mut self) -> Result<u8, RecordError> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn flag(&mut self) -> Result<bool, RecordError> {
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(RecordError::Invalid),
        }
    }

    pub(crate) fn u16(&mut self) -> Result<u16, RecordError> {
        let mut b = [0u8; 2];
        b.copy_from_slice(self.take(2)?);
        Ok(u16::from_be_bytes(b))
    }

    pub(crate) fn u32(&mut self) -> Result<usize, RecordError> {
        let mut b = [0u8; 4];
        b.copy_from_slice(self.take(4)?);
        Ok(u32::from_be_bytes(b) as usize)
    }

    pub(crate) fn u64(&mut self) -> Result<u64, RecordError> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_be_bytes(b))
    }

    /// A buffer field (a 4-byte length, at most `max`, then its bytes), copied into `into`
    /// (cleared first).
    pub(crate) fn bytes32(&mut self, into: &mut Vec<u8>, max: usize) -> Result<(), RecordError> {
        let len = self.u32()?;
        if len > max {
            return Err(RecordError::Invalid);
        }
        into.clear();
        into.extend_from_slice(self.take(len)?);
        Ok(())
    }

    /// A range inside a buffer of `within` bytes (start at most end).
    pub(crate) fn range(&mut self, within: usize) -> Result<core::ops::Range<usize>, RecordError> {
        let (start, end) = (self.u32()?, self.u32()?);
        if start > end || end > within {
            return Err(RecordError::Invalid);
        }
        Ok(start..end)
    }
}
