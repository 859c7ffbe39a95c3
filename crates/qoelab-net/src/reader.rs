//! The client side of HTTP/1.1 responses on one real connection, sans-IO: bytes read from the
//! socket go in, and out come the counts the session's byte-stream model needs. The session
//! models every response as `response_header_bytes` + the body (docs/session.md); the real
//! response has the server's real header. The reader maps one onto the other: a response counts
//! as delivered up to its model header plus the body bytes received once its real header is
//! complete, so the session sees the first byte when the status line and headers are in, every
//! body byte as it arrives, and the last byte with the real last byte.
//!
//! Every response must be `206 Partial Content` with the expected `Content-Length`, and its body
//! is checked against the synthetic video's byte pattern (byte `o` of a rung file is `o mod 251`,
//! docs/serve.md).

use std::collections::VecDeque;

/// A response the client waits for, in request order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expect {
    /// The session's model header bytes and the body length.
    pub model_header: u64,
    pub body: u64,
    /// Offset of the body in the rung file (for the pattern check).
    pub offset: u64,
}

/// Longest response head accepted.
const MAX_HEAD: usize = 16 * 1024;

#[derive(Debug, Default)]
pub struct Reader {
    pub queue: VecDeque<Expect>,
    head: Vec<u8>,
    in_body: bool,
    got: u64,
    /// Model bytes of the completed responses.
    done_model: u64,
    pub completed: u64,
    /// Real bytes read (heads and bodies).
    pub real_bytes: u64,
    /// Body bytes that differ from the synthetic pattern.
    pub mismatches: u64,
}

impl Reader {
    /// Model bytes delivered on the response stream so far.
    pub fn delivered(&self) -> u64 {
        let cur = match (self.in_body, self.queue.front()) {
            (true, Some(e)) => e.model_header + self.got,
            _ => 0,
        };
        self.done_model + cur
    }

    /// Responses expected and not complete.
    pub fn outstanding(&self) -> usize {
        self.queue.len()
    }

    /// Bytes read from the socket.
    pub fn feed(&mut self, mut data: &[u8]) -> Result<(), String> {
        self.real_bytes += data.len() as u64;
        while !data.is_empty() {
            let Some(e) = self.queue.front().copied() else {
                return Err(format!("{} response bytes without a request", data.len()));
            };
            if !self.in_body {
                // Copy up to the end of the head (at most up to the blank line).
                let mut i = 0;
                while i < data.len() && !self.head.ends_with(b"\r\n\r\n") {
                    self.head.push(data[i]);
                    i += 1;
                    if self.head.len() > MAX_HEAD {
                        return Err("response head over 16 KiB".into());
                    }
                }
                data = &data[i..];
                if !self.head.ends_with(b"\r\n\r\n") {
                    continue;
                }
                check_head(&self.head, e.body)?;
                self.head.clear();
                self.in_body = true;
                self.got = 0;
            } else {
                let n = (data.len() as u64).min(e.body - self.got) as usize;
                let base = e.offset + self.got;
                for (k, &b) in data[..n].iter().enumerate() {
                    if b != ((base + k as u64) % 251) as u8 {
                        self.mismatches += 1;
                    }
                }
                self.got += n as u64;
                data = &data[n..];
            }
            if self.in_body && self.got == e.body {
                self.done_model += e.model_header + e.body;
                self.queue.pop_front();
                self.in_body = false;
                self.completed += 1;
            }
        }
        Ok(())
    }
}

/// The head must say `206` with `Content-Length: body`.
fn check_head(head: &[u8], body: u64) -> Result<(), String> {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let status = lines.next().unwrap_or("");
    let code = status.split(' ').nth(1).unwrap_or("");
    if !status.starts_with("HTTP/1.1 ") || code != "206" {
        return Err(format!("expected a 206 response, got {:?}", status.trim()));
    }
    let cl = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<u64>().ok());
    if cl != Some(body) {
        return Err(format!("expected Content-Length {body}, got {cl:?}"));
    }
    Ok(())
}

/// The GET for `len` bytes at `offset` of `path`.
pub fn request(host: &str, path: &str, offset: u64, len: u64) -> Vec<u8> {
    format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nRange: bytes={offset}-{}\r\nUser-Agent: qoelab-real\r\n\r\n",
        offset + len - 1
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(body_off: u64, n: u64) -> Vec<u8> {
        let mut v = format!("HTTP/1.1 206 Partial Content\r\nContent-Length: {n}\r\nX: y\r\n\r\n").into_bytes();
        v.extend((0..n).map(|k| ((body_off + k) % 251) as u8));
        v
    }

    #[test]
    fn maps_real_responses_onto_the_model_stream() {
        let mut r = Reader::default();
        r.queue.push_back(Expect { model_header: 300, body: 1000, offset: 800 });
        r.queue.push_back(Expect { model_header: 300, body: 10, offset: 1800 });
        let mut bytes = resp(800, 1000);
        bytes.extend(resp(1800, 10));
        // Nothing is delivered until the head is complete.
        r.feed(&bytes[..20]).unwrap();
        assert_eq!(r.delivered(), 0);
        let h = bytes.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        r.feed(&bytes[20..h]).unwrap();
        assert_eq!(r.delivered(), 300);
        r.feed(&bytes[h..h + 500]).unwrap();
        assert_eq!(r.delivered(), 800);
        r.feed(&bytes[h + 500..]).unwrap();
        assert_eq!(r.delivered(), 1300 + 310);
        assert_eq!((r.completed, r.mismatches, r.outstanding()), (2, 0, 0));
        assert!(r.feed(b"x").is_err(), "bytes without a request");
    }

    #[test]
    fn refuses_wrong_status_or_length_and_counts_bad_bytes() {
        let mut r = Reader::default();
        r.queue.push_back(Expect { model_header: 0, body: 5, offset: 0 });
        assert!(r.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n").is_err());
        let mut r = Reader::default();
        r.queue.push_back(Expect { model_header: 0, body: 5, offset: 0 });
        assert!(r.feed(b"HTTP/1.1 206 Partial\r\nContent-Length: 6\r\n\r\n").is_err());
        let mut r = Reader::default();
        r.queue.push_back(Expect { model_header: 0, body: 3, offset: 0 });
        r.feed(b"HTTP/1.1 206 Partial\r\ncontent-length: 3\r\n\r\n\x00\x01\x07").unwrap();
        assert_eq!(r.mismatches, 1);
        assert_eq!(
            request("h", "/a/0.mp4", 800, 100),
            b"GET /a/0.mp4 HTTP/1.1\r\nHost: h\r\nRange: bytes=800-899\r\nUser-Agent: qoelab-real\r\n\r\n".to_vec()
        );
    }
}
