//! Gzip undone where the input has it: one or more members, as Python's
//! `gzip` module reads them (the twin: `_jsonl._GzipMembers`).

use std::io::{self, BufRead, BufReader, Cursor, Read};

use flate2::bufread::GzDecoder;

/// The input with gzip undone where it had it.
pub(super) struct Decoded {
    pub(super) source: Box<dyn Read + Send>,
    /// Whether the input is a gzip stream (a read error then means bad gzip).
    pub(super) gzip: bool,
}

/// The first two bytes of every gzip member (RFC 1952).
pub(crate) const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Look at the first two bytes: gzip's magic number means a gzip stream.
pub(super) fn decompress_if_gzip(mut raw: Box<dyn Read + Send>) -> io::Result<Decoded> {
    let mut magic = [0u8; 2];
    let mut got = 0;
    while got < 2 {
        match raw.read(&mut magic[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let joined = Cursor::new(magic[..got].to_vec()).chain(raw);
    if got == 2 && magic == GZIP_MAGIC {
        Ok(Decoded {
            source: Box::new(GzipMembers::new(BufReader::new(joined))),
            gzip: true,
        })
    } else {
        Ok(Decoded {
            source: Box::new(joined),
            gzip: false,
        })
    }
}

/// A gzip stream of one or more members: members follow each other, zero
/// bytes between or after them are padding, and anything else after a member
/// is an error, as in Python's `gzip` module. flate2 checks each member's
/// header as RFC 1952 asks (reserved flag bits, the header CRC) and allows
/// names and comments of at most 65,535 bytes (its own limit); the twin
/// (`_jsonl._GzipMembers`) draws the same lines. The deflate data goes through
/// flate2's zlib-rs backend, a port of zlib, the twin's decoder.
struct GzipMembers<R: BufRead> {
    member: Option<GzDecoder<R>>,
    done: bool,
}

impl<R: BufRead> GzipMembers<R> {
    fn new(source: R) -> Self {
        GzipMembers {
            member: Some(GzDecoder::new(source)),
            done: false,
        }
    }
}

impl<R: BufRead> Read for GzipMembers<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.done || buf.is_empty() {
                return Ok(0);
            }
            let Some(member) = self.member.as_mut() else {
                return Ok(0);
            };
            let n = member.read(buf)?;
            if n > 0 {
                return Ok(n);
            }
            // This member is over: skip zero padding, then expect another.
            let Some(member) = self.member.take() else {
                return Ok(0);
            };
            let mut source = member.into_inner();
            loop {
                let available = source.fill_buf()?;
                if available.is_empty() {
                    self.done = true;
                    return Ok(0);
                }
                let zeros = available.iter().take_while(|&&b| b == 0).count();
                if zeros == 0 {
                    break;
                }
                source.consume(zeros);
            }
            let next = source.fill_buf()?;
            if next.first() != Some(&0x1f) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "not a gzip member",
                ));
            }
            self.member = Some(GzDecoder::new(source));
        }
    }
}
