//! Little-endian byte reading shared by the crate's binary formats (replays, world dumps).
//!
//! It sits below both `replay` and `debug`, so neither has to import the other to decode bytes.

/// A little-endian byte reader that reports truncation instead of panicking.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(b: &'a [u8]) -> Reader<'a> {
        Reader { b, at: 0 }
    }

    pub(crate) fn offset(&self) -> usize {
        self.at
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], usize> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.b.len()).ok_or(self.at)?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    pub(crate) fn u32(&mut self) -> Result<u32, usize> {
        let b = self.bytes(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, usize> {
        let b = self.bytes(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
}
